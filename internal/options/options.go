// Package options holds what the remote providers (provider/openai,
// provider/anthropic) do alike with their functional options: applying them
// over the defaults, and reading the model from the environment.
package options

import "os"

// Apply returns o with each non-nil option of opts applied, in order.
func Apply[O any, F ~func(*O)](o O, opts []F) O {
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// EnvModel returns the model SESSIONKIT_MODEL names, or def when it is unset
// or empty.
func EnvModel(def string) string {
	if model := os.Getenv("SESSIONKIT_MODEL"); model != "" {
		return model
	}
	return def
}
