package main

// What the agent keeps of its own as a program (a copy of what
// cmd/sessionkit has in an internal package, so that this example can be
// copied out of the module): the log lines while a model call waits, the
// default store path (the same as sessionkit's, so that it reads the
// agent's sessions), how a store is named, the exit statuses, and how it
// stops on a signal.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
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

// exitStatuses is what -h says of how the agent ends.
const exitStatuses = `
Stopping: when stdin ends, the requests read before are answered (a running
turn for at most 30s more), then the agent exits. SIGINT or SIGTERM stops it
with stdin open: running turns and their commands are cancelled, sessions and
the store closed within 3s.

Exit status:
  0        stdin ended, or a clean stop on SIGINT or SIGTERM
  1        a failure while serving
  2        a configuration that cannot be served (nothing was served)
  130/143  128 + the signal (SIGINT/SIGTERM): the stop did not finish within
           3s, or a second signal came; the agent exited at once
`

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

// stopBound is how long the agent may take to stop once told to with
// SIGINT or SIGTERM: to cancel the running turns (their commands end with
// them), close the sessions and close the store.
const stopBound = 3 * time.Second

// signalStatus is the exit status of a stop on signal s that did not
// finish: 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM),
// the shells' convention.
func signalStatus(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return exitFailure
}

// stopOnSignal returns a context cancelled at the first SIGINT or SIGTERM,
// which starts the program's stop. From then on the program has bound to
// return: past it, or at a second SIGINT or SIGTERM, exit is called at
// once with [signalStatus] of the last signal, whatever is still closing.
// Calling release stops the watch (the program is done).
func stopOnSignal(log *zap.Logger, bound time.Duration, exit func(int)) (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var first os.Signal
		select {
		case first = <-sigs:
		case <-done:
			return
		}
		log.Info("stopping: cancelling the running turns, closing the sessions and the store", zap.String("signal", first.String()), zap.Duration("bound", bound))
		cancel()
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case s := <-sigs:
			log.Warn("stopping at once on a second signal", zap.String("signal", s.String()), zap.Int("status", signalStatus(s)))
			exit(signalStatus(s))
		case <-t.C:
			log.Warn("not stopped within the bound: exiting with what is still closing", zap.Duration("bound", bound), zap.Int("status", signalStatus(first)))
			exit(signalStatus(first))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		<-watched
		cancel()
	}
}

// interruptible returns a reader of r whose Close ends a Read in
// progress: a goroutine copies r into a pipe. An os.File in blocking mode
// (stdin, in practice) is not interrupted by its own Close, which would
// keep the connection reading it from ending while the editor keeps its
// end open; the copying goroutine may stay blocked in r's Read until the
// process exits.
func interruptible(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: EOF
	}()
	return pr
}
