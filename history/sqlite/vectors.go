package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/internal/vecsearch"
)

// The vectors of history.VectorIndex (migration 17): one row per message
// a session's embedder embedded, keyed by the session that wrote it and
// the message's position. A fork's vectors are read along its chain as
// its messages are (chain.go): its own rows at any position (vectors it
// wrote of messages it inherits included), then each ancestor's rows at
// positions up to the link's end, a position taken from the first link
// that has it. Nothing is copied at a fork, and a vector one session
// writes never shows in another.

// PutVectors implements [history.VectorIndex]: an unversioned write,
// fenced by the lease like every write.
func (s *Store) PutVectors(ctx context.Context, id string, vecs []history.MessageVector) error {
	const op = "put vectors"
	var c chain
	return sqlstore.PutVectors(id, vecs, s.fenced(ctx, op, id), func(q txQuerier) error {
		var err error
		c, err = chainOf(q, id)
		return s.found(q.ctx, op, id, err)
	}, func(q txQuerier, v *history.MessageVector) (bool, error) {
		l := c.byPos(v.Position)
		if v.Position <= l.lo || v.Position > l.hi {
			return false, nil
		}
		res, err := q.tx.ExecContext(q.ctx, `INSERT OR REPLACE INTO vectors (session_id, pos, vec)
			SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE session_id = ? AND pos = ? AND `+messageIDExpr+` = ?)`,
			id, v.Position, vecsearch.Encode(v.Vector), l.id, v.Position, []byte(v.MessageID))
		if err != nil {
			return false, s.fail(q.ctx, op, err)
		}
		n, err := res.RowsAffected()
		return n == 1, err
	})
}

// Unembedded implements [history.VectorIndex]: each link's messages
// after after that no vector of the link or of a link after it in the
// chain (its forks on the way to the session) covers.
func (s *Store) Unembedded(ctx context.Context, id string, after int64, limit int) ([]history.PositionedMessage, error) {
	const op = "unembedded"
	if err := vecsearch.CheckLimit(limit); err != nil {
		return nil, err
	}
	var out []history.PositionedMessage
	err := s.view(ctx, op, func(q querier) error {
		c, err := chainOf(q, id)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		ids := make([]string, 0, len(c))
		for i := range c {
			ids = append(ids, c[i].id)
		}
		for i := len(c) - 1; i >= 0 && len(out) < limit; i-- {
			l := &c[i]
			owners, err := json.Marshal(ids[:i+1])
			if err != nil {
				return err
			}
			positions, msgs, err := scanIn(q, true, 0, `WHERE session_id = ? AND pos > ? AND pos <= ?
				AND NOT EXISTS (SELECT 1 FROM json_each(?) AS o JOIN vectors AS v ON v.session_id = o.value AND v.pos = messages.pos)
				ORDER BY pos LIMIT ?`, l.id, max(after, l.lo), l.hi, string(owners), int64(limit-len(out)))
			if err != nil {
				return err
			}
			for k := range msgs {
				out = append(out, history.PositionedMessage{Position: positions[k], Message: msgs[k]})
			}
		}
		return nil
	})
	return out, err
}

// Nearest implements [history.VectorIndex]: a scan of every vector of
// the session's chain (docs/storage.md, "Vectors", says what it costs).
func (s *Store) Nearest(ctx context.Context, id string, vq history.VectorQuery) (hits []history.VectorHit, err error) {
	const op = "nearest"
	err = s.view(ctx, op, func(rq querier) error {
		c, err := chainOf(rq, id)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		hits, err = vecsearch.Nearest(vq, func(offer func(pos int64, enc []byte)) error {
			var seen map[int64]bool // a fork's positions taken from a later link
			if c.forked() {
				seen = map[int64]bool{}
			}
			for i := range c {
				err := rq.query(`SELECT pos, vec FROM vectors WHERE session_id = ? AND pos <= ?`, []any{c[i].id, c[i].hi}, func(row rowScanner) error {
					var (
						pos int64
						vec sql.RawBytes // not copied: offer reads it at once
					)
					if err := row.Scan(&pos, &vec); err != nil || seen[pos] {
						return err
					}
					if seen != nil {
						seen[pos] = true
					}
					offer(pos, vec)
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		}, func(pos int64) (msgID string, err error) {
			err = queryRow(rq, `SELECT CAST(`+messageIDExpr+` AS TEXT) FROM messages WHERE session_id = ? AND pos = ?`, []any{c.byPos(pos).id, pos}, &msgID)
			return msgID, err
		})
		return err
	})
	return hits, err
}
