package main

// What the agent keeps of its own as a program (a copy of what
// cmd/sessionkit has in an internal package, so that this example can be
// copied out of the module): the log lines while a model call waits, the
// default store path (the same as sessionkit's, so that it reads the
// agent's sessions), how a store is named, and the exit statuses.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/provider"
)

// logWaits returns p with a log line every interval while a call waits on
// the model: "still waiting for the model", with how long it has waited
// and what the call is for. It only logs; the call and its result are
// p's. An interval of 0 or less returns p itself.
func logWaits(p provider.Provider, log *zap.Logger, every time.Duration) provider.Provider {
	if every <= 0 || log == nil {
		return p
	}
	return &waitLogger{Provider: p, log: log, every: every}
}

// waitLogger is the provider of [logWaits].
type waitLogger struct {
	provider.Provider
	log   *zap.Logger
	every time.Duration
}

// Complete calls the provider and logs while it waits.
func (w *waitLogger) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(w.every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				w.log.Info("still waiting for the model",
					zap.Duration("waited", time.Since(start).Round(time.Second)),
					zap.String("purpose", string(req.Purpose)))
			}
		}
	}()
	defer func() {
		close(done)
		<-finished
	}()
	return w.Provider.Complete(ctx, req, onDelta)
}

// Info is the wrapped provider's, when it describes itself.
func (w *waitLogger) Info() provider.Info {
	if d, ok := w.Provider.(provider.Describer); ok {
		return d.Info()
	}
	return provider.Info{}
}

// TakesImage is the wrapped provider's (provider.ImageTaker), so that the
// agent advertises images for a provider that takes them.
func (w *waitLogger) TakesImage(mimeType string) bool {
	return provider.TakesImage(w.Provider, mimeType)
}

// defaultStore returns the default SQLite path, under the user's data
// directory: $XDG_DATA_HOME/sessionkit/sessions.db, else
// ~/.local/share/sessionkit/sessions.db ("sessionkit.db" when there is no
// home directory).
func defaultStore() string {
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

// isPostgresURL reports whether a store named spec is PostgreSQL: a
// postgres:// or postgresql:// URL, in any case. Any other spec is a SQLite
// file path.
func isPostgresURL(spec string) bool {
	lower := strings.ToLower(spec)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Exit statuses of the programs.
const (
	exitFailure = 1 // a failure while running
	exitUsage   = 2 // a configuration that cannot be used: nothing was served
)

// usageError is a configuration error found at startup (a flag, an
// argument, a variable, a store path). [exitStatus] prints it on one line and
// makes it exit status [exitUsage].
type usageError struct{ Msg string }

// Error implements error.
func (e *usageError) Error() string { return e.Msg }

// usagef returns a *[usageError] with the formatted message, which should
// name the flag, argument or variable at fault.
func usagef(format string, args ...any) error {
	return &usageError{Msg: fmt.Sprintf(format, args...)}
}

// exitStatus reports how program name ends with err: nothing is printed and 0
// is returned for nil and flag.ErrHelp; otherwise "name: err" is printed
// to w on one line and the status is [exitUsage] for a *[usageError],
// [exitFailure] for any other error.
func exitStatus(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(w, "%s: %v\n", name, err)
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}
