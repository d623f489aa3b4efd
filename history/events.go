package history

import (
	"context"
	"fmt"
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
	// Final says that the session is closing: the process that logged the
	// batch gives out no number above Through. After a batch that is not
	// final, a later process cannot know the numbers the earlier one gave
	// out after it (see [Snapshot.LastSeq]).
	Final bool
}

// EventLog is implemented by stores that keep each session's timeline
// events, so that sequence numbers keep increasing over the session's whole
// life and a subscriber can replay events in a later process
// (docs/design.md §6.1). The stores of sessionkit (memstore, sqlite,
// postgres) all implement it.
type EventLog interface {
	// LogEvents appends b.Events to the session's log and records
	// b.Through and b.Final, as one write: it takes the version the caller
	// last saw and returns the next one, like every write of a [Store].
	// The events' Seqs must increase and lie above every Seq logged
	// before, and Through must be at least the last of them, at least the
	// Through recorded before and at most [MaxSeq]; otherwise LogEvents
	// fails with ErrInvalid and writes nothing.
	LogEvents(ctx context.Context, id string, version uint64, b EventBatch) (uint64, error)
	// Events returns the session's logged events with Seq > after, oldest
	// first; limit > 0 returns at most that many.
	Events(ctx context.Context, id string, after uint64, limit int) ([]LoggedEvent, error)
}

// MaxSeq is the highest sequence number a store keeps (the SQL stores keep
// them in signed 64-bit columns).
const MaxSeq = math.MaxInt64

// CheckEventBatch validates b against the Through the session recorded
// before; stores call it inside the write transaction.
func CheckEventBatch(b *EventBatch, through uint64) error {
	last := through
	for i := range b.Events {
		e := &b.Events[i]
		switch {
		case e.Seq <= last:
			return fmt.Errorf("%w: event sequence number %d is not above %d", ErrInvalid, e.Seq, last)
		case e.Kind == "":
			return fmt.Errorf("%w: event %d has no kind", ErrInvalid, e.Seq)
		}
		last = e.Seq
	}
	switch {
	case b.Through < last:
		return fmt.Errorf("%w: batch through %d is below sequence number %d", ErrInvalid, b.Through, last)
	case b.Through > MaxSeq:
		return fmt.Errorf("%w: sequence number %d is above history.MaxSeq", ErrInvalid, b.Through)
	}
	return nil
}
