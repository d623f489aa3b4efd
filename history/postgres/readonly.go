package postgres

import (
	"context"
	"errors"
)

// ErrNotAStore reports a database that holds no sessionkit store.
var ErrNotAStore = errors.New("postgres: not a sessionkit store")

// ErrOlderSchema reports, to [OpenReadOnly], a database whose schema is
// older than this package's: reading it would need the migrations that
// only [Open] runs.
var ErrOlderSchema = errors.New("postgres: the database's schema is older than this version of sessionkit reads")

// OpenReadOnly connects to the PostgreSQL database at url, as [Open] does,
// for reading only: every transaction of its connections is read-only on
// the server (default_transaction_read_only), so every write fails there;
// it never creates or migrates the schema. The database must be at this
// package's schema version: a newer one fails with an error wrapping
// [ErrNewerSchema], an older one with [ErrOlderSchema], both naming the two
// versions, and one without a store with [ErrNotAStore]. Reads and
// ReadLease work as with Open; Acquire and the writes fail.
func OpenReadOnly(ctx context.Context, url string, opts ...Option) (*Store, error) {
	return open(ctx, url, true, opts)
}
