// Package fromenv chooses a program's model provider from its command line
// and environment, as sessionkit's programs (examples/acp-agent,
// examples/quickstart) do, so that a program of your own can choose it the
// same way with the same variables and the same messages.
//
// The provider is the one named by a flag (acp-agent's --provider) or
// SESSIONKIT_PROVIDER: "offline", "openai" or "anthropic"; a named remote
// provider that its variables cannot build is an error naming what is
// missing. Without a name it is chosen in one order for all programs:
// ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL picks provider/anthropic (which
// then needs ANTHROPIC_API_KEY); otherwise OPENAI_API_KEY or
// OPENAI_BASE_URL picks provider/openai; otherwise, when SESSIONKIT_MODEL
// is set, it is an error (a model was asked for, and no provider for it);
// otherwise, with no provider variable set at all, the offline provider,
// and a line on the notice writer says so. A key of only white space is an
// error. SESSIONKIT_MODEL names the model of either remote provider.
//
//	p, name, err := fromenv.Select(fromenv.Selection{Log: log, Notice: os.Stderr})
//	if err != nil { ... } // the message names the variable or flag
//	fmt.Println("provider:", name) // "anthropic:claude-sonnet-5-5", "openai:gpt-4o-mini", "offline"
package fromenv

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai"
)

// Names of the providers, as --provider and SESSIONKIT_PROVIDER take them.
// Offline is also the name [Select] returns for the offline provider.
const (
	Offline   = "offline"
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// ProviderVar is the variable that names the provider when no flag does.
const ProviderVar = "SESSIONKIT_PROVIDER"

// providerVars are the variables whose being set means a remote provider
// is wanted.
var providerVars = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"}

// Selection is how a program asks [Select] for its provider.
type Selection struct {
	// Name is the provider asked for: [Offline], [OpenAI], [Anthropic], or
	// "" to read [ProviderVar] and, when that is empty too, choose from the
	// environment (see the package documentation).
	Name string
	// From names where Name came from in messages, for example
	// "--provider"; "" means [ProviderVar].
	From string
	// RequestTimeout and IdleTimeout are the remote providers' WithTimeout
	// and WithIdleTimeout; 0 keeps their defaults.
	RequestTimeout, IdleTimeout time.Duration
	// Log receives the provider's retries and failures; nil discards them.
	Log *zap.Logger
	// Notice receives the one line that says the offline provider runs
	// because no provider variable is set; nil discards it.
	Notice io.Writer
	// ThinkingBudget is anthropic's WithThinkingBudget (extended
	// thinking); 0 = off. The other providers ignore it (an
	// OpenAI-compatible server's reasoning_content needs no option).
	ThinkingBudget int
	// EmbeddingModel is openai's WithEmbeddingModel: the openai provider
	// is then also the embedder of sessions (provider.Embedder, against
	// the server's /v1/embeddings). The other providers ignore it: a
	// program checks that the provider it got is an embedder.
	EmbeddingModel string
}

// Provider is [Select] with the provider named by [ProviderVar] (or chosen
// from the environment), log, and the notice on stderr.
func Provider(log *zap.Logger) (provider.Provider, string, error) {
	return Select(Selection{Log: log, Notice: os.Stderr})
}

// Select returns the provider s asks for (see the package documentation)
// and its name: "anthropic:MODEL", "openai:MODEL" or [Offline]. It makes no
// request. Its errors name the flag or variable at fault: an unknown
// provider name, a variable that is set but not enough to build the
// provider, a blank key, and the errors of anthropic.FromEnv and
// openai.FromEnv (they wrap their package's ErrConfig).
func Select(s Selection) (provider.Provider, string, error) {
	if s.Log == nil {
		s.Log = zap.NewNop()
	}
	name, from := strings.TrimSpace(s.Name), s.From
	if name == "" {
		name, from = strings.TrimSpace(os.Getenv(ProviderVar)), ProviderVar
	}
	if from == "" {
		from = ProviderVar
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if v := os.Getenv(k); v != "" && strings.TrimSpace(v) == "" {
			return nil, "", fmt.Errorf("%s is blank (only white space): set the key, or unset the variable", k)
		}
	}
	switch strings.ToLower(name) {
	case Offline:
		return offline.New(), Offline, nil
	case Anthropic:
		return buildAnthropic(s, from)
	case OpenAI:
		return buildOpenAI(s, from)
	case "":
	default:
		return nil, "", fmt.Errorf("%s %q is not a provider: give offline, openai or anthropic", from, name)
	}
	switch {
	case set("ANTHROPIC_API_KEY"), set("ANTHROPIC_BASE_URL"):
		return buildAnthropic(s, "")
	case set("OPENAI_API_KEY"), set("OPENAI_BASE_URL"):
		return buildOpenAI(s, "")
	case set("SESSIONKIT_MODEL"):
		return nil, "", fmt.Errorf("SESSIONKIT_MODEL is set (%q) but no provider is: set ANTHROPIC_API_KEY (Claude), or OPENAI_API_KEY or OPENAI_BASE_URL (an OpenAI-compatible server), or choose one with --provider or %s", os.Getenv("SESSIONKIT_MODEL"), ProviderVar)
	}
	if s.Notice != nil {
		fmt.Fprintf(s.Notice, "no provider variable is set (%s): using the offline provider, which answers from the conversation without a model; --provider offline (or %s=offline) says this is meant\n", strings.Join(providerVars[:4], ", "), ProviderVar)
	}
	return offline.New(), Offline, nil
}

// set reports whether variable k is set to something.
func set(k string) bool { return os.Getenv(k) != "" }

// buildAnthropic builds provider/anthropic from the environment; named
// says the provider was asked for by that flag or variable ("" when the
// environment chose it).
func buildAnthropic(s Selection, named string) (provider.Provider, string, error) {
	if !set("ANTHROPIC_API_KEY") {
		why := "ANTHROPIC_BASE_URL is set"
		if named != "" {
			why = named + " is anthropic"
		}
		return nil, "", fmt.Errorf("%s but ANTHROPIC_API_KEY is not: set the key (or choose another provider with --provider or %s)", why, ProviderVar)
	}
	opts := options(s, anthropic.WithLogger, anthropic.WithTimeout, anthropic.WithIdleTimeout)
	if s.ThinkingBudget != 0 {
		opts = append(opts, anthropic.WithThinkingBudget(s.ThinkingBudget))
	}
	p, err := anthropic.FromEnv(opts...)
	if err != nil {
		return nil, "", err
	}
	return p, "anthropic:" + p.Model(), nil
}

// options are the options of s for a provider package whose options log,
// timeout and idle make: its logger, and the timeouts s sets.
func options[O any](s Selection, log func(*zap.Logger) O, timeout, idle func(time.Duration) O) []O {
	opts := []O{log(s.Log)}
	if s.RequestTimeout > 0 {
		opts = append(opts, timeout(s.RequestTimeout))
	}
	if s.IdleTimeout > 0 {
		opts = append(opts, idle(s.IdleTimeout))
	}
	return opts
}

// buildOpenAI builds provider/openai from the environment (see
// buildAnthropic).
func buildOpenAI(s Selection, named string) (provider.Provider, string, error) {
	if !set("OPENAI_API_KEY") && !set("OPENAI_BASE_URL") {
		return nil, "", fmt.Errorf("%s is openai but neither OPENAI_API_KEY (OpenAI's API) nor OPENAI_BASE_URL (another OpenAI-compatible server) is set", named)
	}
	opts := options(s, openai.WithLogger, openai.WithTimeout, openai.WithIdleTimeout)
	if s.EmbeddingModel != "" {
		opts = append(opts, openai.WithEmbeddingModel(s.EmbeddingModel))
	}
	p, err := openai.FromEnv(opts...)
	if err != nil {
		return nil, "", err
	}
	return p, "openai:" + p.Model(), nil
}
