// Package envconfig is what sessionkit's own commands (cmd/sessionkit, and
// the bench programs) keep of their configuration besides the provider: the
// default store path, how a store is named, and how a configuration error
// ends a program (one line, exit status 2). It imports no provider: choosing
// one is the public package provider/fromenv. The examples keep their own
// copy of these few lines (examples/acp-agent/program.go), so that each can
// be copied out of the module; both tests pin the same default path, which
// is what lets sessionkit read the agent's sessions.
package envconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

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
