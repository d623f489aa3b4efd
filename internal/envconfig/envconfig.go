// Package envconfig is the configuration that sessionkit's programs
// (examples/acp-agent, examples/quickstart, cmd/sessionkit) share: the
// provider the environment selects, the default store path, how a store is
// named, and how a configuration error ends a program (one line, exit
// status 2).
//
// The provider is chosen in one order for all of them: ANTHROPIC_API_KEY
// picks provider/anthropic (with ANTHROPIC_BASE_URL); otherwise
// OPENAI_API_KEY or OPENAI_BASE_URL picks provider/openai; otherwise the
// offline provider. SESSIONKIT_MODEL names the model of either remote
// provider.
//
//	p, name, err := envconfig.Provider(log)
//	if err != nil { ... } // a malformed variable: the message names it
//	fmt.Println("provider:", name) // "anthropic:claude-sonnet-5-5", "openai:gpt-4o-mini", "offline"
package envconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai"
)

// Offline is the name [Provider] returns for the offline provider.
const Offline = "offline"

// Provider returns the provider the environment selects (see the package
// documentation) and its name: "anthropic:MODEL", "openai:MODEL" or
// [Offline]. log receives the provider's retries and failures; nil discards
// them. It makes no request. Its errors are those of anthropic.FromEnv and
// openai.FromEnv (they wrap their package's ErrConfig and name the variable
// at fault).
func Provider(log *zap.Logger) (provider.Provider, string, error) {
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

// DefaultStore returns the default SQLite path, under the user's data
// directory: $XDG_DATA_HOME/sessionkit/sessions.db, else
// ~/.local/share/sessionkit/sessions.db ("sessionkit.db" when there is no
// home directory).
func DefaultStore() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "sessionkit.db"
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "sessionkit", "sessions.db")
}

// IsPostgresURL reports whether a store named spec is PostgreSQL: a
// postgres:// or postgresql:// URL, in any case. Any other spec is a SQLite
// file path.
func IsPostgresURL(spec string) bool {
	lower := strings.ToLower(spec)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Exit statuses of the programs.
const (
	ExitFailure = 1 // a failure while running
	ExitUsage   = 2 // a configuration that cannot be used: nothing was served
)

// UsageError is a configuration error found at startup (a flag, an
// argument, a variable, a store path). [Status] prints it on one line and
// makes it exit status [ExitUsage].
type UsageError struct{ Msg string }

// Error implements error.
func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *[UsageError] with the formatted message, which should
// name the flag, argument or variable at fault.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Status reports how program name ends with err: nothing is printed and 0
// is returned for nil and flag.ErrHelp; otherwise "name: err" is printed
// to w on one line and the status is [ExitUsage] for a *[UsageError],
// [ExitFailure] for any other error.
func Status(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
	var ue *UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return ExitFailure
}
