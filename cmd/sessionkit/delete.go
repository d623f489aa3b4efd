package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/envconfig"
	"github.com/sessionkit/sessionkit/internal/plural"
)

// runDelete is sessionkit delete ID [--yes], the one command that writes.
// It reads the session through the read-only store as the other commands
// do (it must exist, and no agent may serve it), asks on the terminal
// unless --yes, and only then opens the store for writing and deletes the
// session (history.Deleter), whose transaction checks the lease again: an
// agent that took the session meanwhile wins, and nothing is deleted.
func runDelete(ctx context.Context, args []string, store string, in console, stdout, stderr io.Writer) error {
	fs := newFlagSet("delete")
	fs.StringVar(&store, "store", store, "")
	yes := fs.Bool("yes", false, "")
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) == 0:
		return usagef("delete needs a session ID (sessionkit sessions lists them)")
	case len(positional) > 1:
		return usagef("delete takes one session ID, not %d arguments (unexpected %q)", len(positional), positional[1])
	}
	id := positional[0]
	if !*yes && !in.tty {
		return usagef("delete asks before it deletes, and standard input is not a terminal: give --yes to delete session %s without asking", id)
	}

	snap, err := checkDeletable(ctx, store, id, stderr)
	if err != nil {
		return err
	}
	if !*yes {
		fmt.Fprintf(stderr, "Delete session %s%s (%s, %d archived) and everything stored of it? This cannot be undone. [y/N] ",
			id, titled(snap.Title), plural.Count(len(snap.Active), "Active message"), snap.Archived)
		ok, err := confirm(ctx, in.in, stderr)
		if err != nil {
			return fmt.Errorf("session %s not deleted: %w", id, err)
		}
		if !ok {
			return fmt.Errorf("session %s not deleted: the answer was not yes", id)
		}
	}

	w, err := openWriter(ctx, store)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	err = w.Delete(ctx, id)
	var le *history.LeaseError
	switch {
	case errors.As(err, &le):
		return servedError(id, le.Holder, le.Expires)
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("no session %q in the store (sessionkit sessions lists them)", id)
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "deleted session %s\n", id)
	return nil
}

// checkDeletable reads session id through the read-only store: it must
// exist and no live lease may cover it.
func checkDeletable(ctx context.Context, store, id string, stderr io.Writer) (*history.Snapshot, error) {
	r, err := openReader(ctx, store, stderr)
	if err != nil {
		return nil, err
	}
	defer r.close()
	snap, err := r.st.Load(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		return nil, fmt.Errorf("no session %q in the store (sessionkit sessions lists them)", id)
	}
	if err != nil {
		return nil, err
	}
	lease, err := r.served(ctx, id)
	if err != nil {
		return nil, err
	}
	if lease != nil {
		return nil, servedError(id, lease.Holder, lease.Expires)
	}
	return snap, nil
}

// servedError refuses to delete a session an agent serves.
func servedError(id, holder string, expires time.Time) error {
	return fmt.Errorf("session %s is being served by %s (lease expires %s unless renewed): close it there first; nothing was deleted",
		id, holder, expires.UTC().Format(time.RFC3339))
}

// titled is ` "title"` for a session with one, "" otherwise.
func titled(title string) string {
	if title == "" {
		return ""
	}
	return fmt.Sprintf(" %q", title)
}

// confirm reads one line from in and reports whether it says yes ("y" or
// "yes", any case). End of input is no (stderr then ends the question's
// line); an ended ctx (an interrupt) is an error. The read runs in a goroutine of its own so that an interrupt
// need not wait for a line; the process exits soon after.
func confirm(ctx context.Context, in io.Reader, stderr io.Writer) (bool, error) {
	if in == nil {
		fmt.Fprintln(stderr)
		return false, nil
	}
	line := make(chan string, 1) // the reader never waits for us
	go func() {
		s, _ := bufio.NewReader(in).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if !strings.HasSuffix(s, "\n") {
			fmt.Fprintln(stderr)
		}
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "y", "yes":
			return true, nil
		}
		return false, nil
	case <-ctx.Done():
		fmt.Fprintln(stderr)
		return false, ctx.Err()
	}
}

// writeStore is what delete needs of a store opened for writing.
type writeStore interface {
	history.Deleter
	Close() error
}

// openWriter opens the store named spec as the agent does: a PostgreSQL
// URL, or an existing SQLite file (checkDeletable read it a moment ago).
func openWriter(ctx context.Context, spec string) (writeStore, error) {
	if envconfig.IsPostgresURL(spec) {
		return postgres.Open(ctx, spec)
	}
	st, err := sqlite.Open(spec)
	if err != nil {
		return nil, &storeError{spec: spec, err: err}
	}
	return st, nil
}
