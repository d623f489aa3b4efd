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
	// otherwise LogEvents fails with ErrInvalid and writes nothing.
	LogEvents(ctx context.Context, id string, b EventBatch) error
	// Events returns the session's logged events with Seq > after, oldest
	// first; limit > 0 returns at most that many.
	Events(ctx context.Context, id string, after uint64, limit int) ([]LoggedEvent, error)
}

// MaxSeq is the highest sequence number a store keeps (the SQL stores keep
// them in signed 64-bit columns).
const MaxSeq = math.MaxInt64
