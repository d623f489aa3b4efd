package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// seqColumn scans a sequence number, which the schema keeps in a signed
// INTEGER column.
type seqColumn uint64

// Scan implements sql.Scanner.
func (c *seqColumn) Scan(v any) error {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return fmt.Errorf("sequence number column holds %v", v)
	}
	*c = seqColumn(n)
	return nil
}

// Value implements driver.Valuer.
func (c seqColumn) Value() (driver.Value, error) { return int64(c), nil }

// LogEvents implements [history.EventLog]: the events and the session's
// last sequence number are one write of the committer, with the lease check
// of every write and without the version compare-and-swap.
func (s *Store) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	const op = "log events"
	return s.exec(ctx, op, id, false, func(ctx context.Context, tx *sql.Tx) error {
		return sqlstore.LogEvents(&b, func() (uint64, error) {
			var last seqColumn
			err := tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, id).Scan(&last)
			return uint64(last), err
		}, func(events []history.LoggedEvent) error {
			stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (session_id, seq, at, kind, data) VALUES (?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer func() { _ = stmt.Close() }()
			for _, e := range events {
				if _, err := stmt.ExecContext(ctx, id, seqColumn(e.Seq), e.Time.UnixNano(), e.Kind, sqlstore.NotNull(e.Data)); err != nil {
					return err
				}
			}
			return nil
		}, func(through uint64, covers int64) error {
			_, err := tx.ExecContext(ctx, `UPDATE sessions SET last_seq = ?, log_covers = max(log_covers, ?) WHERE id = ?`, seqColumn(through), covers, id)
			return err
		}, func(err error) error { return s.found(ctx, op, id, err) }, func(err error) error { return s.fail(ctx, op, err) })
	})
}

// ReserveSeqs implements [history.EventLog]: one write of the
// committer, with the lease check of every write and without the version
// compare-and-swap, like LogEvents.
func (s *Store) ReserveSeqs(ctx context.Context, id string, gap uint64) (history.SeqReservation, error) {
	const op = "reserve sequence numbers"
	return sqlstore.ReserveSeqs(gap, s.fenced(ctx, op, id), func(q txQuerier) (history.SeqReservation, error) {
		return s.reserveSeqs(q.ctx, q.tx, op, id, gap)
	}, func() error { return s.found(ctx, op, id, sql.ErrNoRows) })
}

// reserveSeqs is the reservation of ReserveSeqs and AcquireReserving
// (sqlstore.Reserve) of session id in tx.
func (s *Store) reserveSeqs(ctx context.Context, tx *sql.Tx, op, id string, gap uint64) (history.SeqReservation, error) {
	return sqlstore.Reserve(gap, func(gap, limit uint64) (uint64, error) {
		var start seqColumn
		err := tx.QueryRowContext(ctx, `UPDATE sessions SET last_seq = last_seq + ? WHERE id = ? AND last_seq <= ? RETURNING last_seq`,
			seqColumn(gap), id, seqColumn(limit)).Scan(&start)
		return uint64(start), err
	}, func() (uint64, error) {
		var last seqColumn
		err := tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, id).Scan(&last)
		return uint64(last), err
	}, sql.ErrNoRows, func(err error) error { return s.fail(ctx, op, err) })
}

// Events implements [history.EventLog], through the store's raw readers
// when it has them (view.go).
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]history.LoggedEvent, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	var out []history.LoggedEvent
	err := s.view(ctx, "events", func(q querier) error {
		if _, err := s.existsIn(ctx, q, "events", id); err != nil {
			return err
		}
		return q.query(`SELECT seq, at, kind, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
			[]any{id, sqlstore.SeqAfter(after), int64(limit)}, func(rows rowScanner) error {
				var (
					e  history.LoggedEvent
					at int64
				)
				if err := rows.Scan((*seqColumn)(&e.Seq), &at, &e.Kind, &e.Data); err != nil {
					return err
				}
				e.Time = time.Unix(0, at)
				out = append(out, e)
				return nil
			})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
