package sqlstore

import (
	"errors"

	"github.com/sessionkit/sessionkit/history"
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
