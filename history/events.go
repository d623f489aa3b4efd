package history

import (
	"context"
	"math"
	"time"
)

// LoggedEvent is one timeline event of a session as an [EventLog] keeps it.
// The store does not interpret Kind or Data: the session package encodes
// its events into them.
type LoggedEvent struct {
	Seq  uint64 // the event's sequence number: unique and increasing per session
	Time time.Time
	Kind string // what Data encodes; not empty
	Data []byte
}

// EventBatch is one write to an [EventLog].
type EventBatch struct {
	// Events are appended to the log, in order.
	Events []LoggedEvent
	// Through is the highest sequence number the session has given out so
	// far, also to events that are not logged (deltas): at least the Seq of
	// the last event, and at least the Through recorded before.
	Through uint64
	// Covers is a timeline position: every stored entry below it (see
	// [Snapshot.NextPosition]) has its event in the log, in this batch or
	// an earlier one. The store records the highest Covers it was given
	// (a lower one changes nothing) and [Store.Load] returns it as
	// [Snapshot.LogCovers], so that a process opening the session can log
	// the events of the entries a process before it stored and did not
	// log (it was killed between the two, or its log writes failed).
	Covers int64
}

// EventLog is implemented by stores that keep each session's timeline
// events, so that sequence numbers keep increasing over the session's whole
// life and a subscriber can replay events in a later process
// (docs/design.md §6.1). The stores of sessionkit (memstore, sqlite,
// postgres) all implement it.
type EventLog interface {
	// LogEvents appends b.Events to the session's log and records
	// b.Through, in one transaction. It is not a versioned
	// write: it neither takes nor changes the session's version, so it can
	// run beside the session's other writes (a lease still fences it, as
	// every write). The events' Seqs must increase and lie above the
	// Through recorded before, and Through must be at least the last of
	// them, at least the Through recorded before and at most [MaxSeq];
	// Covers must not be negative; otherwise LogEvents fails with
	// ErrInvalid and writes nothing.
	LogEvents(ctx context.Context, id string, b EventBatch) error
	// Events returns the session's logged events with Seq > after, oldest
	// first; limit > 0 returns at most that many.
	Events(ctx context.Context, id string, after uint64, limit int) ([]LoggedEvent, error)
}

// MaxSeq is the highest sequence number a store keeps (the SQL stores keep
// them in signed 64-bit columns).
const MaxSeq = math.MaxInt64

// SeqReserver is implemented by event logs that reserve a session's
// sequence numbers in one step (memstore, sqlite and postgres do), so that
// a process opening a session can record where its numbering starts
// without writing a batch (docs/session.md, "Sequence numbers over a
// session's whole life"). The reservation is a write of the event log: not
// versioned, fenced by a lease like [EventLog.LogEvents].
type SeqReserver interface {
	// ReserveSeqs raises session id's recorded Through by gap, in one
	// transaction, and returns the Through before and after
	// ([SeqReservation]). The raise needs room above it: when the recorded
	// Through is above MaxSeq - 2*gap (no room for the gap and another gap
	// of numbers above it) nothing is written and the reservation's Start is
	// 0. gap must lie in 1..MaxSeq/2 (ErrInvalid otherwise); a session that
	// does not exist is ErrNotFound.
	ReserveSeqs(ctx context.Context, id string, gap uint64) (SeqReservation, error)
}

// SeqReservation is the outcome of a reservation of sequence numbers
// ([SeqReserver], [ReservingLeaser]).
type SeqReservation struct {
	// Found reports that the session exists. ReservingLeaser.AcquireReserving
	// reserves nothing for a session that does not exist yet.
	Found bool
	// Last is the Through the session recorded before the reservation.
	Last uint64
	// Start is the Through recorded by the reservation, Last plus the gap;
	// 0 when nothing was reserved (no session, or no room below MaxSeq).
	Start uint64
}

// ReservingLeaser is implemented by leasers that can reserve a session's
// sequence numbers in the transaction that takes its lease
// (history/sqlite, history/postgres), so that opening a session writes once.
type ReservingLeaser interface {
	Leaser
	// AcquireReserving is [Leaser.Acquire] and, in the same transaction
	// and only when it takes the lease, [SeqReserver.ReserveSeqs] of the
	// session when it exists. A session that does not exist yet gets its
	// lease and a reservation whose Found is false; one without room for
	// the gap gets its lease and a reservation whose Start is 0 (the caller
	// releases the lease if it does not serve the session then). A gap
	// outside 1..MaxSeq/2 is ErrInvalid, and nothing is taken.
	AcquireReserving(ctx context.Context, id string, gap uint64) (Lease, SeqReservation, error)
}
