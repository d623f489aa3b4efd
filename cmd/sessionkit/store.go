package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/envconfig"
)

// defaultStore is the acp-agent's default SQLite file.
func defaultStore() string { return envconfig.DefaultStore() }

// readStore is what the commands need of a store: the store and the
// reading of its leases ([history.Leaser.ReadLease]). Both stores of
// sessionkit that live outside a process have them.
type readStore interface {
	history.Store
	ReadLease(ctx context.Context, id string) (*history.LeaseInfo, error)
	Close() error
}

// reader reads one store; it never writes and never takes a lease.
type reader struct {
	st readStore
}

// openReader opens the store named spec for reading only: a PostgreSQL
// URL (read-only transactions, no migration), or the path of an existing
// SQLite file (postgres.OpenReadOnly, sqlite.OpenReadOnly: a missing file
// is an error, not a new store; nothing is created, migrated or locked).
// A SQLite store in WAL mode that cannot be read in place without writing
// is read immutable, which stderr explains.
func openReader(ctx context.Context, spec string, stderr io.Writer) (*reader, error) {
	var st readStore
	name := postgres.Redact(spec) // how messages name the store: without a password
	if envconfig.IsPostgresURL(spec) {
		if _, err := url.Parse(spec); err != nil {
			return nil, usagef("--store %s: not a valid postgres:// URL", name)
		}
		pg, err := postgres.OpenReadOnly(ctx, spec)
		if err != nil {
			return nil, err
		}
		st = pg
	} else {
		fi, err := os.Stat(spec)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("--store %s: no such file (sessionkit reads existing stores only)", name)
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named already
			}
			return nil, fmt.Errorf("--store %s: %w", name, err)
		case fi.IsDir():
			return nil, usagef("--store %s is a directory: give the path of a SQLite file", name)
		}
		lite, err := sqlite.OpenReadOnly(spec)
		if errors.Is(err, sqlite.ErrNeedsImmutable) {
			lite, err = sqlite.OpenReadOnly(spec, sqlite.WithImmutable())
			if err == nil {
				fmt.Fprintln(stderr, immutableNote(spec, name))
			}
		}
		if err != nil {
			return nil, &storeError{spec: spec, err: err}
		}
		st = lite
	}
	return &reader{st: st}, nil
}

// immutableNote is what stderr says of the SQLite file at spec (shown as
// name) read as immutable: why, and what is not seen, which depends on
// whether a WAL file (spec-wal) is beside it with changes in it.
func immutableNote(spec, name string) string {
	note := fmt.Sprintf("sessionkit: --store %s is in WAL mode without its index file (%s-shm), which this directory does not let sessionkit create: reading the file as immutable", name, name)
	if fi, err := os.Stat(spec + "-wal"); err == nil && fi.Size() > 0 {
		return note + fmt.Sprintf("; changes still in its WAL (%s-wal), not yet checkpointed into the file, are not seen", name)
	}
	return note + " (it has no WAL file beside it: every change is in the file)"
}

// storeError is a SQLite store that cannot be read: "--store PATH: " and
// the store's reason (the path once).
type storeError struct {
	spec string
	err  error
}

func (e *storeError) Error() string {
	msg := e.err.Error()
	for _, p := range []string{"sqlite: open read-only " + e.spec + ": ", "sqlite: open " + e.spec + ": "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return "--store " + postgres.Redact(e.spec) + ": " + msg
}

func (e *storeError) Unwrap() error { return e.err }

func (r *reader) close() { _ = r.st.Close() }

// served reads who serves session id, nil when nobody does.
func (r *reader) served(ctx context.Context, id string) (*history.LeaseInfo, error) {
	return r.st.ReadLease(ctx, id)
}

// load reads session id and says on stderr when an agent serves it.
func (r *reader) load(ctx context.Context, id string, stderr io.Writer) (*history.Snapshot, *history.LeaseInfo, error) {
	snap, err := r.st.Load(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		return nil, nil, fmt.Errorf("no session %q in the store (sessionkit sessions lists them)", id)
	}
	if err != nil {
		return nil, nil, err
	}
	lease, err := r.served(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if lease != nil {
		fmt.Fprintf(stderr, "sessionkit: session %s is being served by %s (lease expires %s unless renewed): this is what it had committed when read\n",
			id, lease.Holder, lease.Expires.Format(time.RFC3339))
	}
	return snap, lease, nil
}
