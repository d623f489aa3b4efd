package history

import (
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

// MaxSeq is the highest sequence number a store keeps (the SQL stores keep
// them in signed 64-bit columns).
const MaxSeq = math.MaxInt64

// SeqReservation is the outcome of a reservation of sequence numbers
// ([EventLog.ReserveSeqs], [Leaser.AcquireReserving]).
type SeqReservation struct {
	// Found reports that the session exists. Leaser.AcquireReserving
	// reserves nothing for a session that does not exist yet.
	Found bool
	// Last is the Through the session recorded before the reservation.
	Last uint64
	// Start is the Through recorded by the reservation, Last plus the gap;
	// 0 when nothing was reserved (no session, or no room below MaxSeq).
	Start uint64
}
