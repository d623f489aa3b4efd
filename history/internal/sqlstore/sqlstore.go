// Package sqlstore holds what the SQL stores (history/sqlite,
// history/postgres) do alike apart from their SQL: the closed state and the
// error wrapping of a store, the loop over a result's rows, the range and
// form of stored times and tool-call arguments, the statement of a
// ListSessions page, the order of the schema migrations, and the steps of
// the operations written once over the store's transaction: a reservation
// of sequence numbers (Reserve, ReserveSeqs), LogEvents, RecordUsage,
// PutVectors, Fork, and the writes of one timeline record (Record). The
// stores keep their SQL, their driver's error mapping and their row
// scanning.
//
// What the two stores still write alike, and why it stays in both:
//
//   - The other methods of history.Store, history.Lister and
//     history.EventLog (store.go, list.go, events.go): each is a sequence
//     of statements whose text, placeholders, argument values (bytea
//     through bin in PostgreSQL, text in SQLite), scan targets and
//     constraint errors differ statement by statement; what lies between
//     the statements is shared already (storekit's Check functions and
//     MergeEntries, CommittedSegment, segments.Builder, Query, Found,
//     Conflict, ListQuery). Where the steps are more than a few shared
//     calls, the operation is written here once over the store's
//     transaction with a function per statement (ForkSteps); what stands
//     twice are their signatures and Go's error returns.
//   - The migrations (schema.go): each database's own DDL; their order and
//     the version bookkeeping are [Schema.Migrate].
//   - Acquire, Release and ReadLease (lease.go, readlease.go): the lease
//     rules are history/internal/leasing; SQLite judges a lease by the
//     machine's clock and its holder's process, PostgreSQL by the database's
//     clock in the statement, and each takes the lease in its own way (the
//     committer against a transaction and its row locks).
//   - The options of Open (WithLeaseTTL, WithHolder): exported functions of
//     each package's own Option type, one line each.
//   - Search and the indexing in Append (search.go): the index differs
//     (an FTS5 table against a tsvector column), and so does each
//     statement; the steps between them are
//     history/internal/textsearch's (Request, ToolName, DocOf, Gather,
//     Prune, Place, Page).
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// State is the life of one open store: whether it was closed, and the
// name its errors start with.
type State struct {
	name string
	// dropCause leaves the driver's error out of the error of a call on a
	// closed store (database/sql says only "sql: database is closed").
	dropCause bool
	closed    atomic.Bool
}

// NewState returns the state of an open store named name ("sqlite" or
// "postgres"). dropCause leaves the driver's error out of the errors of
// calls on a closed store.
func NewState(name string, dropCause bool) *State {
	return &State{name: name, dropCause: dropCause}
}

// Close marks the store closed; it reports whether it already was.
func (s *State) Close() (already bool) { return s.closed.Swap(true) }

// Closed reports whether the store was closed.
func (s *State) Closed() bool { return s.closed.Load() }

// Admit checks a call's context and the store before it starts.
func (s *State) Admit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return history.ErrClosed
	}
	return nil
}

// Fail wraps an error of the driver for op, reporting a closed store as
// [history.ErrClosed] and a finished context as the context's error.
func (s *State) Fail(ctx context.Context, op string, err error) error {
	switch {
	case s.closed.Load() && s.dropCause:
		return fmt.Errorf("%s: %s: %w", s.name, op, history.ErrClosed)
	case s.closed.Load():
		return fmt.Errorf("%s: %s: %w (%v)", s.name, op, history.ErrClosed, err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: %w", s.name, op, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %s: %w (%v)", s.name, op, ctx.Err(), err)
	}
	return fmt.Errorf("%s: %s: %w", s.name, op, err)
}

// Conflict maps the error of a statement that may break a uniqueness
// constraint (an insert of a new ID): dup, the store's reading of err as
// that violation, is [history.ErrExists] with what format and args name;
// any other error is wrapped for op as Fail wraps it, and nil stays nil.
func (s *State) Conflict(ctx context.Context, op string, err error, dup bool, format string, args ...any) error {
	switch {
	case dup:
		return fmt.Errorf("%w: "+format, append([]any{history.ErrExists}, args...)...)
	case err != nil:
		return s.Fail(ctx, op, err)
	}
	return nil
}

// Record runs a write that records one R at the next timeline position
// (RecordConfig, Uncompact): checked is the check of its input, which
// fails the write first; at is the record's time, which encode turns into
// the store's column value (rejecting a time out of range); write runs the
// store's write transaction with it, sets the record and returns the
// session's new version.
func Record[T, R any](checked error, at *time.Time, encode func(time.Time) (T, error), write func(at T, rec **R) (uint64, error)) (uint64, *R, error) {
	if checked != nil {
		return 0, nil, checked
	}
	t, err := encode(*at)
	if err != nil {
		return 0, nil, err
	}
	var rec *R
	v, err := write(t, &rec)
	if err != nil {
		return 0, nil, err
	}
	return v, rec, nil
}

// Rows is a driver's result set as Query reads it (*sql.Rows, pgx.Rows).
type Rows interface {
	Next() bool
	Err() error
}

// Query runs a query through open and calls scan for every row of its
// result; close closes the result. The first error of the query, of scan or
// of the result is returned through fail, which wraps it for the store's
// operation (it comes from the driver or from decoding a row).
func Query[R Rows](open func() (R, error), close func(R), scan func(R) error, fail func(error) error) error {
	rows, err := open()
	if err != nil {
		return fail(err)
	}
	defer close(rows)
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fail(err)
		}
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	return nil
}

// Collect reads the rows of a query as values, each as read makes it from
// its row (nil for no rows); each reads a query as Query does.
func Collect[R any, T any](each func(scan func(R) error) error, read func(R) (T, error)) ([]T, error) {
	var out []T
	err := each(func(rows R) error {
		v, err := read(rows)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Found maps the error of reading the row of session id: the driver's
// noRows (sql.ErrNoRows, pgx.ErrNoRows) is history.ErrNotFound, any other
// error is wrapped for op as Fail wraps it, and nil stays nil.
func (s *State) Found(ctx context.Context, op, id string, err, noRows error) error {
	switch {
	case errors.Is(err, noRows):
		return fmt.Errorf("%w: %q", history.ErrNotFound, id)
	case err != nil:
		return s.Fail(ctx, op, err)
	}
	return nil
}
