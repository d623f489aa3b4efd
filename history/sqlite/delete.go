package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Delete implements [history.Catalog]: one write of the committer, after
// the lease check of every write (exec), that removes the session's search
// rows (one rowid range of message_fts, see rowidOf), messages,
// compactions (Segments and undos are their rows), events, configs, usage
// ledger and sessions row.
// The leases row stays: tokens only grow.
//
// A session that forks read (chain.go) keeps its messages and search rows
// for them: the rest goes, and its sessions row and messages move to a
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
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE fork_of = ?`, id).Scan(&forks); err != nil {
				return s.fail(ctx, op, err)
			}
			if up && forks > 0 { // hidden already, and read by another fork
				return nil
			}
			if err := s.deleteRows(ctx, tx, id, num, forks > 0); err != nil {
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

// deleteRows removes what session id (number num) stores; with keep, the
// messages, vectors and search rows stay under deletedID (see Delete).
func (s *Store) deleteRows(ctx context.Context, tx *sql.Tx, id string, num int64, keep bool) error {
	const op = "delete"
	// The children first: their foreign keys name the sessions row.
	steps := []struct {
		query string
		args  []any
	}{
		{`DELETE FROM message_fts WHERE rowid BETWEEN ? AND ?`, []any{rowidOf(num, 0), rowidOf(num, 1<<32-1)}},
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
		// messages and search rows stay; the sessions row moves to the
		// hidden ID first (its number freed and taken again), then the
		// messages follow it, then the forks, and the old row goes.
		hidden := deletedID(num)
		steps = append(steps[3:len(steps)-1], []struct {
			query string
			args  []any
		}{
			{`UPDATE sessions SET num = NULL WHERE id = ?`, []any{id}},
			{`INSERT INTO sessions (id, version, active_from, archived, message_count, next_pos, created_at, updated_at, num,
				fork_of, fork_pos, fork_seq, fork_at, deleted, indexed)
				SELECT ?, version, active_from, archived, message_count, next_pos, created_at, updated_at, ?,
				fork_of, fork_pos, fork_seq, fork_at, 1, indexed FROM sessions WHERE id = ?`, []any{hidden, num, id}},
			{`UPDATE messages SET session_id = ? WHERE session_id = ?`, []any{hidden, id}},
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
