// Package options holds what the remote providers (provider/openai,
// provider/anthropic) do alike with their functional options: applying them
// over the defaults, and reading the model from the environment.
package options

import (
	"errors"
	"net/url"
	"os"
)

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

// BaseURLProblem says what is wrong with a provider's base URL, "" when it
// is an absolute http:// or https:// URL with a host: "is not a valid URL
// (missing ']' in host)", "is not an http:// or https:// URL", "has no
// host". The providers put it after the URL they quote.
func BaseURLProblem(raw string) string {
	u, err := url.Parse(raw)
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return "is not a valid URL (" + ue.Err.Error() + ")"
	case err != nil:
		return "is not a valid URL (" + err.Error() + ")"
	case u.Scheme != "http" && u.Scheme != "https":
		return "is not an http:// or https:// URL"
	case u.Host == "":
		return "has no host"
	}
	return ""
}
