package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// Fork implements [history.Catalog]: one write of the committer, after the
// lease check of the fork's ID (as Create), that reads the source's rows
// up to the fork point and writes the fork's in the same transaction, so
// that a source deleted meanwhile is either forked whole or not found.
// The fork's rows are the source's up to the fork point, written under
// the fork's ID by INSERT ... SELECT (docs/storage.md, "Forks"): its
// messages and their search rows, its compaction records (a Segment undone
// after the fork point stands in the fork) and its configuration records.
func (s *Store) Fork(ctx context.Context, spec history.ForkSpec) (*history.Snapshot, error) {
	const op = "fork"
	var src chain
	return sqlstore.Fork(spec, s.fenced(ctx, op, spec.ID), sqlstore.ForkSteps[txQuerier]{
		Source: func(q txQuerier) (sqlstore.ForkSource, error) {
			var (
				r     sqlstore.ForkSource
				title string
			)
			err := q.tx.QueryRowContext(q.ctx, `SELECT next_pos, message_count, config, `+titleColumn+`, cwd FROM sessions WHERE id = ?`, spec.From).
				Scan(&r.NextPos, &r.Count, &r.Config, &title, &r.Cwd)
			if err := s.found(q.ctx, op, spec.From, err); err != nil {
				return r, err
			}
			r.Title = defaultTitle(title)
			if src, err = chainOf(q, spec.From); err != nil {
				return r, s.fail(q.ctx, op, err)
			}
			return r, nil
		},
		Taken: func(q txQuerier) (bool, error) {
			var exists int
			switch err := q.tx.QueryRowContext(q.ctx, `SELECT 1 FROM sessions WHERE id = ?`, spec.ID).Scan(&exists); {
			case errors.Is(err, sql.ErrNoRows):
				return false, nil
			case err != nil:
				return false, s.fail(q.ctx, op, err)
			}
			return true, nil
		},
		Find: func(q txQuerier, msgID string) (int64, int64, bool, error) { return src.find(q, msgID) },
		Inside: func(q txQuerier, at int64) (string, bool, error) {
			var inside string
			err := q.tx.QueryRowContext(q.ctx, `SELECT compact_id FROM compactions WHERE session_id = ? AND pos <= ?
				AND (status = 'in_progress' OR (segment_id IS NOT NULL AND to_pos > ?)) ORDER BY pos LIMIT 1`, spec.From, at, at).Scan(&inside)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return "", false, nil
			case err != nil:
				return "", false, s.fail(q.ctx, op, err)
			}
			return inside, true, nil
		},
		Standing: func(q txQuerier, at int64) (activeFrom, archived int64, summary string, err error) {
			var toPos sql.NullInt64
			err = q.tx.QueryRowContext(q.ctx, `SELECT to_pos, summary FROM compactions WHERE session_id = ? AND segment_id IS NOT NULL
				AND pos <= ? AND (undo_pos IS NULL OR undo_pos > ?) ORDER BY from_pos DESC LIMIT 1`, spec.From, at, at).Scan(&toPos, &summary)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return 0, 0, "", nil
			case err != nil:
				return 0, 0, "", s.fail(q.ctx, op, err)
			}
			var seq int64
			if err := q.tx.QueryRowContext(q.ctx, `SELECT seq FROM messages WHERE session_id = ? AND pos = ?`, src.byPos(toPos.Int64).id, toPos.Int64).Scan(&seq); err != nil {
				return 0, 0, "", s.fail(q.ctx, op, err)
			}
			return toPos.Int64 + 1, seq + 1, summary, nil
		},
		MessageID: func(q txQuerier, seq int64) (string, error) { return s.messageID(q.ctx, q.tx, op, src, seq) },
		Write: func(q txQuerier, r *sqlstore.ForkRow) error {
			now := time.Now().UnixNano()
			_, err := q.tx.ExecContext(q.ctx, `INSERT INTO sessions (id, version, config, summary, active_from, archived, message_count, next_pos,
					title, cwd, created_at, updated_at, num, fork_of, fork_pos, fork_seq, fork_at, indexed)
				VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(max(num), 0) + 1 FROM sessions), ?, ?, ?, ?, ?)`,
				spec.ID, nullBytes(r.Config), r.Summary, r.ActiveFrom, r.Archived, r.N, r.At+1, r.Title, r.Cwd, now, now,
				spec.From, r.At, r.N, r.ForkAt, r.N)
			if err := s.st.Conflict(q.ctx, op, err, isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY), "%q", spec.ID); err != nil {
				return err
			}
			for _, table := range []string{"compactions", "configs"} {
				if err := s.copyRows(q.ctx, q.tx, table, spec.ID, spec.From, r.At); err != nil {
					return err
				}
			}
			// A Segment undone after the fork point stands in the fork.
			_, err = q.tx.ExecContext(q.ctx, `UPDATE compactions SET undo_id = NULL, undo_pos = NULL, undone_at = NULL, restored = NULL
				WHERE session_id = ? AND undo_pos > ?`, spec.ID, r.At)
			if err != nil {
				return s.fail(q.ctx, op, err)
			}
			return nil
		},
	})
}

// messageID is the ID of the message of the session of chain src whose
// seq is seq ("" for a seq below 0: no message).
func (s *Store) messageID(ctx context.Context, tx *sql.Tx, op string, src chain, seq int64) (string, error) {
	if seq < 0 {
		return "", nil
	}
	var body []byte
	if err := tx.QueryRowContext(ctx, `SELECT body FROM messages WHERE session_id = ? AND seq = ?`, src.bySeq(seq).id, seq).Scan(&body); err != nil {
		return "", s.fail(ctx, op, err)
	}
	var m history.Message
	if _, err := decodeBody(body, &m); err != nil {
		return "", s.fail(ctx, op, err)
	}
	return m.ID, nil
}

// copyRows writes the rows of table of session from at positions up to
// at again, as rows of session to: every column as it is but session_id.
func (s *Store) copyRows(ctx context.Context, tx *sql.Tx, table, to, from string, at int64) error {
	var cols []string
	err := s.each(ctx, tx, "fork", `SELECT name FROM pragma_table_info(?) ORDER BY cid`, []any{table}, func(rows *sql.Rows) error {
		var c string
		if err := rows.Scan(&c); err != nil {
			return err
		}
		cols = append(cols, c)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, sqlstore.CopyRows(table, cols, "?", "?", "?"), to, from, at)
	if err != nil {
		return s.fail(ctx, "fork", err)
	}
	return nil
}
