package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Delete implements [history.Catalog]: in one transaction, after the
// lease check of every write, it removes the session's messages (and so
// its search index, their search column), compactions (Segments and undos
// are their rows), events, configs, usage ledger and sessions
// row. The leases row stays: tokens
// only grow.
//
// The lock order is that of swap: a lease's delete locks the lease row
// (checkToken) and then the sessions row; the store's own locks the
// sessions row and then reads the lease, so that an Acquire committed
// before it is seen, and one still in flight waits for the sessions row
// and then finds no session.
func (s *Store) Delete(ctx context.Context, id string) error {
	const op = "delete"
	key := bin(id)
	return s.inTx(ctx, op, id, func(tx pgx.Tx) error {
		if s.l != nil {
			if err := s.l.check(ctx, op, tx.QueryRow(ctx, checkToken, key)); err != nil {
				return err
			}
		}
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, key).Scan(&one)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		if s.l == nil {
			if err := s.checkUnleased(ctx, op, id, tx.QueryRow(ctx, checkLive, key)); err != nil {
				return err
			}
		}
		// The children first: their foreign keys name the sessions row.
		for _, q := range []string{
			`DELETE FROM messages WHERE session_id = $1`,
			`DELETE FROM vectors WHERE session_id = $1`,
			`DELETE FROM compactions WHERE session_id = $1`,
			`DELETE FROM events WHERE session_id = $1`,
			`DELETE FROM configs WHERE session_id = $1`,
			`DELETE FROM usage_records WHERE session_id = $1`,
			`DELETE FROM sessions WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, key); err != nil {
				return s.fail(ctx, op, err)
			}
		}
		return nil
	})
}
