package sqlite

import (
	"context"
	"database/sql"
)

// Delete implements [history.Catalog]: one write of the committer, after
// the lease check of every write (exec), that removes the session's search
// rows (one rowid range of message_fts, see rowidOf), messages,
// compactions (Segments and undos are their rows), events, configs, usage
// ledger and sessions row.
// The leases row stays: tokens only grow.
func (s *Store) Delete(ctx context.Context, id string) error {
	const op = "delete"
	return s.exec(ctx, op, id, false, func(ctx context.Context, tx *sql.Tx) error {
		var num int64
		if err := s.row(ctx, tx, op, id, "num", &num); err != nil {
			return err
		}
		// The children first: their foreign keys name the sessions row.
		steps := []struct {
			query string
			args  []any
		}{
			{`DELETE FROM message_fts WHERE rowid BETWEEN ? AND ?`, []any{rowidOf(num, 0), rowidOf(num, 1<<32-1)}},
			{`DELETE FROM messages WHERE session_id = ?`, []any{id}},
			{`DELETE FROM compactions WHERE session_id = ?`, []any{id}},
			{`DELETE FROM events WHERE session_id = ?`, []any{id}},
			{`DELETE FROM configs WHERE session_id = ?`, []any{id}},
			{`DELETE FROM usage_records WHERE session_id = ?`, []any{id}},
			{`DELETE FROM sessions WHERE id = ?`, []any{id}},
		}
		for _, st := range steps {
			if _, err := tx.ExecContext(ctx, st.query, st.args...); err != nil {
				return s.fail(ctx, op, err)
			}
		}
		return nil
	})
}
