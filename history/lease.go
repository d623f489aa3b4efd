package history

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Leaser is the one optional part of a store: the leases of a store that
// several processes share (history/postgres, history/sqlite; memstore,
// which one process owns, has none). A session is served by at most one
// process at a time: the process holds the session's lease, and every write
// it makes goes through [Lease.Store], whose writes check the lease's
// fencing token in the same transaction. session.New takes the lease
// before it reads the session when its store implements Leaser.
//
// Lease expiry is judged by the store's clock (the database server's for
// PostgreSQL, the machine's for SQLite), so the clocks of the processes do
// not need to agree.
type Leaser interface {
	// Acquire takes the lease of session id, which need not exist yet. While
	// another holder's lease has not expired it fails at once with a
	// *[LeaseError] (errors.Is [ErrLeased]). Each successful Acquire of a
	// session gets a larger fencing token than every earlier one.
	Acquire(ctx context.Context, id string) (Lease, error)
	// AcquireReserving is Acquire and, in the same transaction and only
	// when it takes the lease, [EventLog.ReserveSeqs] of the session when
	// it exists, so that opening a session writes once. A session that
	// does not exist yet gets its lease and a reservation whose Found is
	// false; one without room for the gap gets its lease and a reservation
	// whose Start is 0 (the caller releases the lease if it does not serve
	// the session then). A gap outside 1..MaxSeq/2 is ErrInvalid, and
	// nothing is taken.
	AcquireReserving(ctx context.Context, id string, gap uint64) (Lease, SeqReservation, error)
	// ReadLease returns the live lease of session id, which need not
	// exist, or nil when no live lease covers it (none was taken, it was
	// released or it expired), so that a program that only reads a store
	// can tell that a session is being served by an agent. It writes
	// nothing and takes no lease.
	ReadLease(ctx context.Context, id string) (*LeaseInfo, error)
}

// Lease is one holder's lease of one session. Its holder keeps it alive by
// renewing it (the implementation renews in the background until Release);
// a lease that could not be renewed before it expired, or that another
// process took over, is lost: [Lease.Lost] is closed and the fenced store's
// writes fail with [ErrFenced].
type Lease interface {
	// Session is the leased session's ID.
	Session() string
	// Token is the fencing token: larger for every later holder.
	Token() uint64
	// Store is the store as this lease's holder sees it: reads are the
	// store's; every write to the leased session first checks, in its own
	// transaction, that this lease is still the session's current one and
	// fails with [ErrFenced] otherwise. Writes to other sessions fail with
	// [ErrInvalid].
	Store() Store
	// Lost is closed when the lease is lost (not when it is released).
	Lost() <-chan struct{}
	// Release gives the lease up so that another process can take the
	// session at once. Releasing twice, or a lost lease, is a no-op.
	Release(ctx context.Context) error
}

// Lease errors. Test with errors.Is.
var (
	// ErrLeased reports a session that another holder's lease still covers.
	// The error is a *[LeaseError] that names the holder.
	ErrLeased = errors.New("history: session is served by another process")
	// ErrFenced reports a write under a lease that is no longer the
	// session's current one: it expired or another process took it over.
	// The write did not happen.
	ErrFenced = errors.New("history: the session's lease was lost; the write was rejected")
)

// LeaseError reports a session leased by another holder.
type LeaseError struct {
	Session string
	Holder  string    // the holder's name (host and process, as its store names it)
	Expires time.Time // when the holder's lease expires unless it is renewed
}

// Error implements error.
func (e *LeaseError) Error() string {
	return fmt.Sprintf("history: session %q is served by %s (lease expires %s unless renewed)",
		e.Session, e.Holder, e.Expires.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is [ErrLeased].
func (e *LeaseError) Is(target error) bool { return target == ErrLeased }

// LeaseInfo describes a live lease, as [Leaser.ReadLease] reads it.
type LeaseInfo struct {
	Session string
	Holder  string    // the holder's name, as in a [LeaseError]
	Expires time.Time // when the lease expires unless it is renewed
}

// ErrBusy reports a store call that gave up waiting for a lock another
// transaction holds (a lease or session row, the migration lock): its
// holder may be a process that stopped (SIGSTOP, a paused machine) or a
// tool with a transaction left open. Nothing was written. The call is
// safe to retry; the lock goes when its holder ends its transaction, and
// the database ends a stopped holder's transaction by itself
// (history/postgres: idle_in_transaction_session_timeout). The error is a
// *[BusyError] that names what it waited for and, when known, the holder
// of the session's lease.
var ErrBusy = errors.New("history: the session is busy in another transaction; try again")

// BusyError reports a lock wait that a store gave up (errors.Is
// [ErrBusy]).
type BusyError struct {
	Session string        // the session whose lock it waited for; "" for the migration lock
	Op      string        // the store operation ("append", "acquire", "migrate")
	Waited  time.Duration // how long it waited before it gave up
	// Holder and Expires are the session's lease as the store last saw it
	// (Holder "" when no one holds it): the process that most likely holds
	// the lock. A tool outside the fleet may hold it too.
	Holder  string
	Expires time.Time
}

// Error implements error.
func (e *BusyError) Error() string {
	what := fmt.Sprintf("session %q", e.Session)
	if e.Session == "" {
		what = "the schema migration lock"
	}
	held := "by a transaction that holds no lease"
	if e.Holder != "" {
		held = fmt.Sprintf("most likely by %s, which holds the session's lease (it expires %s unless renewed)",
			e.Holder, e.Expires.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("history: %s is busy: %s waited %v for a lock held %s; try again", what, e.Op, e.Waited, held)
}

// Is reports whether target is [ErrBusy].
func (e *BusyError) Is(target error) bool { return target == ErrBusy }
