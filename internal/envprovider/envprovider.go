// Package envprovider picks the provider of sessionkit's programs
// (examples/acp-agent, examples/quickstart) from the environment, in one
// order for all of them: ANTHROPIC_API_KEY picks provider/anthropic (with
// ANTHROPIC_BASE_URL); otherwise OPENAI_API_KEY or OPENAI_BASE_URL picks
// provider/openai; otherwise the offline provider. SESSIONKIT_MODEL names
// the model of either remote provider.
//
//	p, name, err := envprovider.FromEnv(log)
//	if err != nil { ... } // a malformed variable: the message names it
//	fmt.Println("provider:", name) // "anthropic:claude-sonnet-5-5", "openai:gpt-4o-mini", "offline"
package envprovider

import (
	"os"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai"
)

// Offline is the name [FromEnv] returns for the offline provider.
const Offline = "offline"

// FromEnv returns the provider the environment selects (see the package
// documentation) and its name: "anthropic:MODEL", "openai:MODEL" or
// [Offline]. log receives the provider's retries and failures; nil discards
// them. It makes no request. Its errors are those of anthropic.FromEnv and
// openai.FromEnv (they wrap their package's ErrConfig and name the variable
// at fault).
func FromEnv(log *zap.Logger) (provider.Provider, string, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		p, err := anthropic.FromEnv(anthropic.WithLogger(log))
		if err != nil {
			return nil, "", err
		}
		return p, "anthropic:" + p.Model(), nil
	}
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		p, err := openai.FromEnv(openai.WithLogger(log))
		if err != nil {
			return nil, "", err
		}
		return p, "openai:" + p.Model(), nil
	}
	return offline.New(), Offline, nil
}
