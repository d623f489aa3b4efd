package sqlstore

import (
	"errors"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Reserve is the reservation of gap sequence numbers (history.EventLog's
// ReserveSeqs, history.Leaser's AcquireReserving) inside a store's write
// transaction: it raises the session's recorded Through by gap when there
// is room for it (storekit.SeqRoom), and reads the Through otherwise. A
// missing session is a reservation whose Found is false. The common case
// is one statement.
//
// raise runs the store's statement that adds gap to the Through if it is
// at most limit and returns the new one; last reads the Through. Each
// reports no row with the driver's noRows; fail wraps any other error for
// the store's operation. gap has passed storekit.CheckSeqGap.
func Reserve(gap uint64, raise func(gap, limit uint64) (uint64, error), last func() (uint64, error), noRows error, fail func(error) error) (history.SeqReservation, error) {
	start, err := raise(gap, history.MaxSeq-2*gap)
	if err == nil {
		return history.SeqReservation{Found: true, Last: start - gap, Start: start}, nil
	}
	if !errors.Is(err, noRows) {
		return history.SeqReservation{}, fail(err)
	}
	// No session, or no room.
	through, err := last()
	switch {
	case errors.Is(err, noRows):
		return history.SeqReservation{}, nil
	case err != nil:
		return history.SeqReservation{}, fail(err)
	}
	return history.SeqReservation{Found: true, Last: through}, nil
}

// LogEvents is history.EventLog's LogEvents inside a store's write
// transaction, after its lease check: last reads the session's last
// sequence number and locks its row, the batch is checked against it
// (storekit.CheckEventBatch), insert writes its events (when it has any)
// and mark records its Through and Covers. found maps the error of last
// (a missing session is history.ErrNotFound); fail wraps the errors of
// insert and mark, which come from the driver, for the store's operation.
func LogEvents(b *history.EventBatch, last func() (uint64, error), insert func([]history.LoggedEvent) error, mark func(through uint64, covers int64) error, found, fail func(error) error) error {
	n, err := last()
	if err := found(err); err != nil {
		return err
	}
	if err := storekit.CheckEventBatch(b, n); err != nil {
		return err
	}
	if len(b.Events) > 0 {
		if err := insert(b.Events); err != nil {
			return fail(err)
		}
	}
	if err := mark(b.Through, b.Covers); err != nil {
		return fail(err)
	}
	return nil
}
