package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// LogEvents implements [history.EventLog]: the events and the session's
// last sequence number are written in one transaction, with the lease check
// of every write and without the version compare-and-swap.
func (s *Store) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	const op = "log events"
	key := bin(id)
	return s.fenced(ctx, op, id)(func(tx pgx.Tx) error {
		return sqlstore.LogEvents(&b, func() (uint64, error) {
			var last int64
			err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1 FOR UPDATE`, key).Scan(&last)
			return uint64(last), err
		}, func(events []history.LoggedEvent) error {
			// One statement, not COPY: a holder frozen halfway through a
			// COPY would leave the server waiting for its data, which no
			// idle_in_transaction_session_timeout ends (see idleInTx).
			seqs, ats := make([]int64, len(events)), make([]int64, len(events))
			kinds, data := make([]string, len(events)), make([][]byte, len(events))
			for i, e := range events {
				seqs[i], ats[i], kinds[i], data[i] = int64(e.Seq), e.Time.UnixNano(), e.Kind, sqlstore.NotNull(e.Data)
			}
			_, err := tx.Exec(ctx, `INSERT INTO events (session_id, seq, at, kind, data)
				SELECT $1, e.seq, e.at, e.kind, e.data FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bytea[]) AS e (seq, at, kind, data)`,
				key, seqs, ats, kinds, data)
			return err
		}, func(through uint64, covers int64) error {
			_, err := tx.Exec(ctx, `UPDATE sessions SET last_seq = $2, log_covers = GREATEST(log_covers, $3) WHERE id = $1`, key, int64(through), covers)
			return err
		}, func(err error) error { return s.found(ctx, op, id, err) }, func(err error) error { return s.fail(ctx, op, err) })
	})
}

// ReserveSeqs implements [history.EventLog]: one transaction with the
// lease check of every write and without the version compare-and-swap,
// like LogEvents.
func (s *Store) ReserveSeqs(ctx context.Context, id string, gap uint64) (history.SeqReservation, error) {
	const op = "reserve sequence numbers"
	return sqlstore.ReserveSeqs(gap, s.fenced(ctx, op, id), func(tx pgx.Tx) (history.SeqReservation, error) {
		return s.reserveSeqs(ctx, tx, op, bin(id), gap)
	}, func() error { return s.found(ctx, op, id, pgx.ErrNoRows) })
}

// reserveSeqs is the reservation of ReserveSeqs and AcquireReserving
// (sqlstore.Reserve) of the session keyed key in tx. The raise's row lock
// waits for the session's writes in flight.
func (s *Store) reserveSeqs(ctx context.Context, tx pgx.Tx, op string, key []byte, gap uint64) (history.SeqReservation, error) {
	return sqlstore.Reserve(gap, func(gap, limit uint64) (uint64, error) {
		var start int64
		err := tx.QueryRow(ctx, `UPDATE sessions SET last_seq = last_seq + $2 WHERE id = $1 AND last_seq <= $3 RETURNING last_seq`,
			key, int64(gap), int64(limit)).Scan(&start)
		return uint64(start), err
	}, func() (uint64, error) {
		var last int64
		err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1`, key).Scan(&last)
		return uint64(last), err
	}, pgx.ErrNoRows, func(err error) error { return s.fail(ctx, op, err) })
}

// Events implements [history.EventLog].
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]history.LoggedEvent, error) {
	q := `SELECT seq, at, kind, data FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq`
	args := []any{bin(id), sqlstore.SeqAfter(after)}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	return sessionRows(ctx, s, "events", id, q, args, func(rows pgx.Rows) (history.LoggedEvent, error) {
		var (
			e       history.LoggedEvent
			seq, at int64
		)
		err := rows.Scan(&seq, &at, &e.Kind, &e.Data)
		e.Seq, e.Time = uint64(seq), time.Unix(0, at)
		return e, err
	})
}
