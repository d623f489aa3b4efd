package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/internal/vecsearch"
)

// The vectors of history.VectorIndex (migration 15), as the SQLite store
// keeps them (history/sqlite/vectors.go): one row per message a session's
// embedder embedded, keyed by the session that wrote it and the message's
// position. A fork's vectors are read along its chain of sources
// (withChain): its own rows, then each source's at positions up to the
// fork point, a position taken from the nearest session that has it.
// Nothing is copied at a fork, and a vector one session writes never
// shows in another. A deleted source's vectors that its forks read stay
// with its messages under its hidden ID (delete.go).

// withChain is a WITH clause of the chain of session $1: chain(cid, hi,
// depth), the session itself at depth 0 with every position, each source
// with the positions up to the fork point below it. A source deleted and
// created again under its ID is newer than its forks: no source of them.
const withChain = `WITH RECURSIVE chain (cid, hi, depth) AS (
	SELECT id, 9223372036854775807::bigint, 0 FROM sessions WHERE id = $1
	UNION ALL
	SELECT p.id, LEAST(c.hi, s.fork_pos), c.depth + 1 FROM chain c JOIN sessions s ON s.id = c.cid
	JOIN sessions p ON p.id = s.fork_of AND p.created_at <= s.created_at
) `

// PutVectors implements [history.VectorIndex]: an unversioned write,
// fenced by the lease like every write.
func (s *Store) PutVectors(ctx context.Context, id string, vecs []history.MessageVector) error {
	const op = "put vectors"
	key := bin(id)
	return sqlstore.PutVectors(id, vecs, s.fenced(ctx, op, id), func(tx pgx.Tx) error {
		_, err := s.exists(ctx, tx, op, id)
		return err
	}, func(tx pgx.Tx, v *history.MessageVector) (bool, error) {
		tag, err := tx.Exec(ctx, `INSERT INTO vectors (session_id, pos, vec)
			SELECT $1::bytea, $2::bigint, $4::bytea WHERE EXISTS (`+withChain+`SELECT 1 FROM chain c JOIN messages m ON m.session_id = c.cid AND m.pos = $2 AND m.pos <= c.hi
				WHERE m.id = $3)
			ON CONFLICT (session_id, pos) DO UPDATE SET vec = EXCLUDED.vec`, key, v.Position, bin(v.MessageID), vecsearch.Encode(v.Vector))
		if err != nil {
			return false, s.fail(ctx, op, err)
		}
		return tag.RowsAffected() == 1, nil
	})
}

// Unembedded implements [history.VectorIndex].
func (s *Store) Unembedded(ctx context.Context, id string, after int64, limit int) ([]history.PositionedMessage, error) {
	const op = "unembedded"
	if err := vecsearch.CheckLimit(limit); err != nil {
		return nil, err
	}
	var out []history.PositionedMessage
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		if _, err := s.exists(ctx, tx, op, id); err != nil {
			return err
		}
		return s.each(ctx, tx, op, withChain+`, msgs AS (
				SELECT DISTINCT ON (m.pos) `+messageColumns+` FROM chain c JOIN messages m ON m.session_id = c.cid AND m.pos <= c.hi AND m.pos > $2
				ORDER BY m.pos, c.depth)
			SELECT `+messageColumns+` FROM msgs
			WHERE NOT EXISTS (SELECT 1 FROM chain c JOIN vectors v ON v.session_id = c.cid AND v.pos = msgs.pos AND v.pos <= c.hi)
			ORDER BY pos LIMIT $3`, []any{bin(id), after, limit}, func(rows pgx.Rows) error {
			pos, m, err := scanMessage(rows)
			if err != nil {
				return err
			}
			out = append(out, history.PositionedMessage{Position: pos, Message: m})
			return nil
		})
	})
	return out, err
}

// Nearest implements [history.VectorIndex]: a scan of every vector of the
// session's chain (docs/storage.md, "Vectors", says what it costs).
func (s *Store) Nearest(ctx context.Context, id string, vq history.VectorQuery) (hits []history.VectorHit, err error) {
	const op = "nearest"
	err = s.read(ctx, op, id, func(tx pgx.Tx) error {
		if _, err := s.exists(ctx, tx, op, id); err != nil {
			return err
		}
		hits, err = vecsearch.Nearest(vq, func(offer func(pos int64, enc []byte)) error {
			return s.each(ctx, tx, op, withChain+`SELECT DISTINCT ON (v.pos) v.pos, v.vec FROM chain c
				JOIN vectors v ON v.session_id = c.cid AND v.pos <= c.hi ORDER BY v.pos, c.depth`, []any{bin(id)}, func(rows pgx.Rows) error {
				var (
					pos int64
					vec []byte
				)
				if err := rows.Scan(&pos, &vec); err != nil {
					return err
				}
				offer(pos, vec)
				return nil
			})
		}, func(pos int64) (string, error) {
			var msgID []byte
			err := tx.QueryRow(ctx, withChain+`SELECT m.id FROM chain c JOIN messages m ON m.session_id = c.cid AND m.pos = $2 AND m.pos <= c.hi
				ORDER BY c.depth LIMIT 1`, bin(id), pos).Scan(&msgID)
			if err != nil {
				return "", s.fail(ctx, op, err)
			}
			return string(msgID), nil
		})
		return err
	})
	return hits, err
}
