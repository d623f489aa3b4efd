package sqlstore

import (
	"fmt"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/vecsearch"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// The writes of a session's sequence numbers, usage ledger and vectors
// run in one write transaction of the session with the lease check of
// every write and without the version compare-and-swap. Each is written
// here once over the store's transaction T: write runs its function in
// such a transaction. The store's functions return their errors as the
// store reports them, and these return them unchanged.

// ReserveSeqs is history.EventLog's ReserveSeqs: gap is checked
// (storekit.CheckSeqGap), then reserve (the store's Reserve) runs in the
// write; a reservation that finds no session fails with the error of
// missing.
func ReserveSeqs[T any](gap uint64, write func(func(T) error) error, reserve func(T) (history.SeqReservation, error), missing func() error) (history.SeqReservation, error) {
	if err := storekit.CheckSeqGap(gap); err != nil {
		return history.SeqReservation{}, err
	}
	var r history.SeqReservation
	err := write(func(tx T) error {
		var err error
		if r, err = reserve(tx); err == nil && !r.Found {
			err = missing()
		}
		return err
	})
	if err != nil {
		return history.SeqReservation{}, err
	}
	return r, nil
}

// RecordUsage is history.Ledger's RecordUsage: recs are checked
// (storekit.CheckUsage), then in the write lock reads the session's row
// (history.ErrNotFound without one) and insert writes the records.
func RecordUsage[T any](recs []history.UsageRecord, write func(func(T) error) error, lock func(T) error, insert func(T, []history.UsageRecord) error) error {
	if err := storekit.CheckUsage(recs); err != nil {
		return err
	}
	return write(func(tx T) error {
		if err := lock(tx); err != nil {
			return err
		}
		return insert(tx, recs)
	})
}

// PutVectors is history.VectorIndex's PutVectors on session id: vecs are
// checked (vecsearch.Check), then in the write lock reads the session
// (history.ErrNotFound without one), and put writes each vector if its
// message, by ID, stands at its position in the session's timeline (its
// own or a source's up to the fork point), and reports whether it did; an
// unknown message fails with history.ErrNotFound.
func PutVectors[T any](id string, vecs []history.MessageVector, write func(func(T) error) error, lock func(T) error, put func(T, *history.MessageVector) (bool, error)) error {
	if err := vecsearch.Check(vecs); err != nil {
		return err
	}
	return write(func(tx T) error {
		if err := lock(tx); err != nil {
			return err
		}
		for i := range vecs {
			v := &vecs[i]
			switch found, err := put(tx, v); {
			case err != nil:
				return err
			case !found:
				return storekit.UnknownMessage(id, fmt.Sprintf("%s at %d", v.MessageID, v.Position))
			}
		}
		return nil
	})
}
