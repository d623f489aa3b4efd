package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/jackc/pgx/v5"
)

// Delete implements [history.Catalog]: in one transaction, after the
// lease check of every write, it removes the session's messages (and so
// its search index, their search column and postings), vectors, compactions (Segments
// and undos are their rows), events, configs, usage ledger and sessions
// row. The leases row stays: tokens only grow.
//
// A session that forks read (chain.go) keeps the messages and vectors its
// forks read (those up to its newest fork point): the rest goes, and its
// sessions row, those messages (with their postings) and vectors move to a hidden ID
// (deletedID, deleted true) that listing leaves out, so that the ID may
// be created again; its forks' fork_of follow it. Deleting a fork deletes
// such a hidden parent with it once no other fork reads it, and so on up
// the chain. Each parent's row is locked FOR UPDATE before its forks are
// counted, so that two forks deleted at once do not both leave it.
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
		var parent []byte
		err := tx.QueryRow(ctx, `SELECT fork_of FROM sessions WHERE id = $1 AND NOT deleted FOR UPDATE`, key).Scan(&parent)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		if s.l == nil {
			if err := s.checkUnleased(ctx, op, id, tx.QueryRow(ctx, checkLive, key)); err != nil {
				return err
			}
		}
		for up := false; ; up = true {
			var (
				forks int
				keep  int64 // the newest fork point of its forks
			)
			err := tx.QueryRow(ctx, `SELECT count(*), COALESCE(max(fork_pos), -1) FROM sessions WHERE fork_of = $1`, key).Scan(&forks, &keep)
			if err != nil {
				return s.fail(ctx, op, err)
			}
			if up && forks > 0 { // hidden already, and read by another fork
				return nil
			}
			if err := s.deleteRows(ctx, tx, key, forks > 0, keep); err != nil {
				return err
			}
			if forks > 0 || parent == nil {
				return nil
			}
			// The parent, when deleted before and read by no other fork.
			var deleted bool
			key = parent
			if err := tx.QueryRow(ctx, `SELECT fork_of, deleted FROM sessions WHERE id = $1 FOR UPDATE`, key).Scan(&parent, &deleted); err != nil {
				return s.fail(ctx, op, err)
			}
			if !deleted {
				return nil
			}
		}
	})
}

// deletedID is a new hidden ID of a deleted session that forks still read.
func deletedID() []byte {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return []byte("\x00deleted-" + hex.EncodeToString(b))
}

// deleteRows removes what session key stores; with keep, its messages and
// vectors at positions up to upto stay under a new deletedID (see
// Delete).
func (s *Store) deleteRows(ctx context.Context, tx pgx.Tx, key []byte, keep bool, upto int64) error {
	const op = "delete"
	type step struct {
		query string
		args  []any
	}
	// The children first: their foreign keys name the sessions row.
	steps := []step{
		{`DELETE FROM postings WHERE session_id = $1`, []any{key}},
		{`DELETE FROM messages WHERE session_id = $1`, []any{key}},
		{`DELETE FROM vectors WHERE session_id = $1`, []any{key}},
		{`DELETE FROM compactions WHERE session_id = $1`, []any{key}},
		{`DELETE FROM events WHERE session_id = $1`, []any{key}},
		{`DELETE FROM configs WHERE session_id = $1`, []any{key}},
		{`DELETE FROM usage_records WHERE session_id = $1`, []any{key}},
		{`DELETE FROM usage_totals WHERE session_id = $1`, []any{key}},
		{`DELETE FROM sessions WHERE id = $1`, []any{key}},
	}
	if keep {
		// The hidden row first, then the kept messages and vectors follow
		// it, then the forks, and the old row goes.
		hidden := deletedID()
		// A session's own rows number its messages in position order, so
		// the postings of those after upto are those from the first such
		// message's number on.
		steps = append([]step{
			{`DELETE FROM postings WHERE session_id = $1 AND seq >= COALESCE(
				(SELECT seq FROM messages WHERE session_id = $1 AND pos > $2 ORDER BY pos LIMIT 1), 9223372036854775807)`, []any{key, upto}},
			{`DELETE FROM messages WHERE session_id = $1 AND pos > $2`, []any{key, upto}},
			{`DELETE FROM vectors WHERE session_id = $1 AND pos > $2`, []any{key, upto}},
		}, steps[3:len(steps)-1]...)
		steps = append(steps, []step{
			{`INSERT INTO sessions (id, version, active_from, archived, message_count, next_pos, created_at, updated_at,
				fork_of, fork_pos, fork_seq, fork_at, deleted)
				SELECT $1, version, active_from, archived, message_count, next_pos, created_at, updated_at,
				fork_of, fork_pos, fork_seq, fork_at, true FROM sessions WHERE id = $2`, []any{hidden, key}},
			{`UPDATE messages SET session_id = $1 WHERE session_id = $2`, []any{hidden, key}},
			{`UPDATE postings SET session_id = $1 WHERE session_id = $2`, []any{hidden, key}},
			{`UPDATE vectors SET session_id = $1 WHERE session_id = $2`, []any{hidden, key}},
			{`UPDATE sessions SET fork_of = $1 WHERE fork_of = $2`, []any{hidden, key}},
			{`DELETE FROM sessions WHERE id = $1`, []any{key}},
		}...)
	}
	for _, st := range steps {
		if _, err := tx.Exec(ctx, st.query, st.args...); err != nil {
			return s.fail(ctx, op, err)
		}
	}
	return nil
}
