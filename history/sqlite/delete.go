package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Delete implements [history.Catalog]: one write of the committer, after
// the lease check of every write (exec), that removes the session's search
// rows (one rowid range of message_fts, see rowidOf), message_ids rows,
// messages, compactions (Segments and undos are their rows), events,
// configs, usage ledger and sessions row.
// The leases row stays: tokens only grow.
//
// A session that forks read (chain.go) keeps the messages, vectors,
// search rows and message_ids rows they read (those up to its newest fork
// point): the rest goes, and its sessions row and messages move to a
// hidden ID (deletedID) that listing leaves out, so that the ID may be
// created again. Deleting a fork deletes such a hidden parent with it once
// no other fork reads it, and so on up the chain.
func (s *Store) Delete(ctx context.Context, id string) error {
	const op = "delete"
	return s.exec(ctx, op, id, false, func(ctx context.Context, tx *sql.Tx) error {
		var (
			num    int64
			forkOf sql.NullString
		)
		if err := s.row(ctx, tx, op, id, "num, fork_of", &num, &forkOf); err != nil {
			return err
		}
		for up := false; ; up = true {
			var forks int
			var keep fork // the newest fork point of its forks
			err := tx.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(fork_pos), -1), COALESCE(max(fork_seq), 0) FROM sessions WHERE fork_of = ?`, id).
				Scan(&forks, &keep.pos, &keep.seq)
			if err != nil {
				return s.fail(ctx, op, err)
			}
			if up && forks > 0 { // hidden already, and read by another fork
				return nil
			}
			if err := s.deleteRows(ctx, tx, id, num, forks > 0, keep); err != nil {
				return err
			}
			if forks > 0 || !forkOf.Valid {
				return nil
			}
			// The parent, when deleted before and read by no other fork.
			var deleted bool
			id = forkOf.String
			if err := tx.QueryRowContext(ctx, `SELECT num, fork_of, deleted FROM sessions WHERE id = ?`, id).Scan(&num, &forkOf, &deleted); err != nil {
				return s.fail(ctx, op, err)
			}
			if !deleted {
				return nil
			}
		}
	})
}

// deletedID is the hidden ID of deleted session num that forks still read.
func deletedID(num int64) string { return fmt.Sprintf("\x00deleted-%d", num) }

// fork is where forks read a session up to: positions up to pos, and the
// messages numbered below seq (the first own message of the newest fork).
type fork struct{ pos, seq int64 }

// deleteRows removes what session id (number num) stores; with keep, the
// messages, vectors, search rows and message_ids rows up to upto stay
// under deletedID (see Delete).
func (s *Store) deleteRows(ctx context.Context, tx *sql.Tx, id string, num int64, keep bool, upto fork) error {
	const op = "delete"
	type step struct {
		query string
		args  []any
	}
	// The children first: their foreign keys name the sessions row.
	steps := []step{
		{`DELETE FROM message_fts WHERE rowid BETWEEN ? AND ?`, []any{rowidOf(num, 0), rowidOf(num, 1<<32-1)}},
		{`DELETE FROM message_ids WHERE session_id = ?`, []any{id}},
		{`DELETE FROM messages WHERE session_id = ?`, []any{id}},
		{`DELETE FROM vectors WHERE session_id = ?`, []any{id}},
		{`DELETE FROM compactions WHERE session_id = ?`, []any{id}},
		{`DELETE FROM events WHERE session_id = ?`, []any{id}},
		{`DELETE FROM configs WHERE session_id = ?`, []any{id}},
		{`DELETE FROM usage_records WHERE session_id = ?`, []any{id}},
		{`DELETE FROM usage_totals WHERE session_id = ?`, []any{id}},
		{`DELETE FROM sessions WHERE id = ?`, []any{id}},
	}
	if keep {
		// Only what forks read stays (messages, vectors, search rows and
		// message_ids rows up to the newest fork point); the sessions row
		// moves to the hidden ID first (its number freed and taken
		// again), then the messages and their IDs follow it, then the
		// forks, and the old row goes.
		hidden := deletedID(num)
		steps = append([]step{
			{`DELETE FROM message_fts WHERE rowid BETWEEN ? AND ?`, []any{rowidOf(num, upto.seq), rowidOf(num, 1<<32-1)}},
			{`DELETE FROM message_ids WHERE session_id = ? AND pos > ?`, []any{id, upto.pos}},
			{`DELETE FROM messages WHERE session_id = ? AND pos > ?`, []any{id, upto.pos}},
			{`DELETE FROM vectors WHERE session_id = ? AND pos > ?`, []any{id, upto.pos}},
		}, steps[4:len(steps)-1]...)
		steps = append(steps, []step{
			{`UPDATE sessions SET num = NULL WHERE id = ?`, []any{id}},
			{`INSERT INTO sessions (id, version, active_from, archived, message_count, next_pos, created_at, updated_at, num,
				fork_of, fork_pos, fork_seq, fork_at, deleted, indexed)
				SELECT ?, version, active_from, archived, message_count, next_pos, created_at, updated_at, ?,
				fork_of, fork_pos, fork_seq, fork_at, 1, indexed FROM sessions WHERE id = ?`, []any{hidden, num, id}},
			{`UPDATE messages SET session_id = ? WHERE session_id = ?`, []any{hidden, id}},
			{`UPDATE message_ids SET session_id = ? WHERE session_id = ?`, []any{hidden, id}},
			{`UPDATE vectors SET session_id = ? WHERE session_id = ?`, []any{hidden, id}},
			{`UPDATE sessions SET fork_of = ? WHERE fork_of = ?`, []any{hidden, id}},
			{`DELETE FROM sessions WHERE id = ?`, []any{id}},
		}...)
	}
	for _, st := range steps {
		if _, err := tx.ExecContext(ctx, st.query, st.args...); err != nil {
			return s.fail(ctx, op, err)
		}
	}
	return nil
}
