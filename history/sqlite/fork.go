package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
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
	if err := storekit.CheckFork(&spec); err != nil {
		return nil, err
	}
	var snap *history.Snapshot
	err := s.exec(ctx, op, spec.ID, false, func(ctx context.Context, tx *sql.Tx) error {
		var (
			nextPos, count int64
			config         []byte
			title, cwd     string
		)
		err := tx.QueryRowContext(ctx, `SELECT next_pos, message_count, config, `+titleColumn+`, cwd FROM sessions WHERE id = ?`, spec.From).
			Scan(&nextPos, &count, &config, &title, &cwd)
		if err := s.found(ctx, op, spec.From, err); err != nil {
			return err
		}
		var exists int
		switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, spec.ID).Scan(&exists); {
		case err == nil:
			return fmt.Errorf("%w: %q", history.ErrExists, spec.ID)
		case !errors.Is(err, sql.ErrNoRows):
			return s.fail(ctx, op, err)
		}
		q := txQuerier{s: s, ctx: ctx, tx: tx, op: op}
		src, err := chainOf(q, spec.From)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		// at is the fork point, n the number of messages inherited.
		at, n := nextPos-1, count
		if spec.At != "" {
			pos, seq, found, err := src.find(q, spec.At)
			switch {
			case err != nil:
				return err
			case !found:
				return storekit.UnknownMessage(spec.From, spec.At)
			}
			at, n = pos, seq+1
		}
		var inside string
		err = tx.QueryRowContext(ctx, `SELECT compact_id FROM compactions WHERE session_id = ? AND pos <= ?
			AND (status = 'in_progress' OR (segment_id IS NOT NULL AND to_pos > ?)) ORDER BY pos LIMIT 1`, spec.From, at, at).Scan(&inside)
		switch {
		case err == nil:
			return storekit.ForkInCompaction(spec.From, at, inside)
		case !errors.Is(err, sql.ErrNoRows):
			return s.fail(ctx, op, err)
		}
		// The state at the fork point: the newest Segment standing then.
		var (
			activeFrom, archived int64
			summary              string
			toPos                sql.NullInt64
		)
		err = tx.QueryRowContext(ctx, `SELECT to_pos, summary FROM compactions WHERE session_id = ? AND segment_id IS NOT NULL
			AND pos <= ? AND (undo_pos IS NULL OR undo_pos > ?) ORDER BY from_pos DESC LIMIT 1`, spec.From, at, at).Scan(&toPos, &summary)
		switch {
		case err == nil:
			var seq int64
			if err := tx.QueryRowContext(ctx, `SELECT seq FROM messages WHERE session_id = ? AND pos = ?`, src.byPos(toPos.Int64).id, toPos.Int64).Scan(&seq); err != nil {
				return s.fail(ctx, op, err)
			}
			activeFrom, archived = toPos.Int64+1, seq+1
		case !errors.Is(err, sql.ErrNoRows):
			return s.fail(ctx, op, err)
		}
		forkAt, err := s.messageID(ctx, tx, op, src, n-1)
		if err != nil {
			return err
		}
		if spec.Config != nil {
			config = spec.Config
		}
		if spec.Title != "" {
			title = spec.Title
		} else {
			title = defaultTitle(title)
		}
		if spec.Cwd != "" {
			cwd = spec.Cwd
		}
		now := time.Now().UnixNano()
		_, err = tx.ExecContext(ctx, `INSERT INTO sessions (id, version, config, summary, active_from, archived, message_count, next_pos,
				title, cwd, created_at, updated_at, num, fork_of, fork_pos, fork_seq, fork_at, indexed)
			VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(max(num), 0) + 1 FROM sessions), ?, ?, ?, ?, ?)`,
			spec.ID, nullBytes(config), summary, activeFrom, archived, n, at+1, title, cwd, now, now,
			spec.From, at, n, forkAt, n)
		switch {
		case isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY):
			return fmt.Errorf("%w: %q", history.ErrExists, spec.ID)
		case err != nil:
			return s.fail(ctx, op, err)
		}
		for _, table := range []string{"compactions", "configs"} {
			if err := s.copyRows(ctx, tx, table, spec.ID, spec.From, at); err != nil {
				return err
			}
		}
		// A Segment undone after the fork point stands in the fork.
		_, err = tx.ExecContext(ctx, `UPDATE compactions SET undo_id = NULL, undo_pos = NULL, undone_at = NULL, restored = NULL
			WHERE session_id = ? AND undo_pos > ?`, spec.ID, at)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		snap = &history.Snapshot{ID: spec.ID, Version: 1, Config: config, Summary: summary, Title: title, Cwd: cwd,
			Archived: archived, NextPosition: at + 1, ForkOf: spec.From, ForkAt: forkAt, ForkPosition: at}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
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
