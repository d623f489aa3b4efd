package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
)

// Window implements [history.Reader] (segments.ReadWindow): the message
// is found through the messages_id index (selectPosOfID), the window's
// messages are two ranges of the primary key from there, each message with
// its tool name from the search index (the message_fts row of its
// number), all in one read transaction whose cost does not grow with the
// session.
func (s *Store) Window(ctx context.Context, id string, q history.WindowQuery) (out []history.WindowMessage, err error) {
	err = s.read(ctx, "window", func(tx *sql.Tx) error {
		out, err = segments.ReadWindow(id, q, s.windowReads(ctx, tx, id))
		return err
	})
	return out, err
}

// windowReads are the reads of Window in tx.
func (s *Store) windowReads(ctx context.Context, tx *sql.Tx, id string) segments.WindowReads {
	const op = "window"
	var num int64 // the session's number: its messages' rowids in message_fts
	return segments.WindowReads{
		Session: func() (activeFrom int64, err error) {
			return activeFrom, s.row(ctx, tx, op, id, "num, active_from", &num, &activeFrom)
		},
		Find: func(msgID string) (pos int64, found bool, err error) {
			err = tx.QueryRowContext(ctx, selectPosOfID, id, []byte(msgID)).Scan(&pos)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, false, nil
			}
			if err != nil {
				return 0, false, s.fail(ctx, op, err)
			}
			return pos, true, nil
		},
		Before: func(pos int64, limit int) ([]history.WindowMessage, error) {
			return s.windowRange(ctx, tx, `m.pos < ? ORDER BY m.pos DESC`, num, id, pos, limit)
		},
		From: func(pos int64, limit int) ([]history.WindowMessage, error) {
			return s.windowRange(ctx, tx, `m.pos >= ? ORDER BY m.pos`, num, id, pos, limit)
		},
		Standing: func() (*segments.Standing, error) { return s.standing(ctx, tx, op, id) },
	}
}

// windowRange reads at most limit messages of session id (number num)
// from position at in the direction where says, each with the tool name
// its message_fts row holds (a LEFT JOIN: a message the index lacks has
// none).
func (s *Store) windowRange(ctx context.Context, tx *sql.Tx, where string, num int64, id string, at int64, limit int) ([]history.WindowMessage, error) {
	var out []history.WindowMessage
	err := s.each(ctx, tx, "window", `
		SELECT m.pos, CAST(m.body AS TEXT), COALESCE(f.tool, '') FROM messages AS m
		LEFT JOIN message_fts AS f ON f.rowid = ? + m.seq
		WHERE m.session_id = ? AND `+where+` LIMIT ?`, []any{rowidOf(num, 0), id, at, limit}, func(rows *sql.Rows) error {
		var (
			w    history.WindowMessage
			body string
		)
		if err := rows.Scan(&w.Position, &body, &w.ToolName); err != nil {
			return err
		}
		if err := decodeText(body, &w.Message); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	return out, err
}
