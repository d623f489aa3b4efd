package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
)

// Window implements [history.Reader] (segments.ReadWindow) in one read
// transaction: the messages_id index finds the message (the newest with
// the ID), the primary key reads the ranges on each side of it, and
// tool_name (search.go) names the tool each tool result answers.
func (s *Store) Window(ctx context.Context, id string, q history.WindowQuery) ([]history.WindowMessage, error) {
	const op = "window"
	var out []history.WindowMessage
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		var (
			c   chain // a fork's chain (chain.go)
			err error
		)
		out, err = segments.ReadWindow(id, q, segments.WindowReads{
			Session: func() (activeFrom int64, err error) {
				activeFrom, c, err = s.session(ctx, tx, op, id)
				return activeFrom, err
			},
			Find: func(msgID string) (pos int64, found bool, err error) {
				if c != nil {
					pos, _, found, err = s.chainFind(ctx, tx, op, c, msgID)
					return pos, found, err
				}
				err = tx.QueryRow(ctx, `SELECT pos FROM messages WHERE session_id = $1 AND id = $2 ORDER BY pos DESC LIMIT 1`, bin(id), bin(msgID)).Scan(&pos)
				switch {
				case errors.Is(err, pgx.ErrNoRows):
					return 0, false, nil
				case err != nil:
					return 0, false, s.fail(ctx, op, err)
				}
				return pos, true, nil
			},
			Before: func(pos int64, limit int) ([]history.WindowMessage, error) {
				if c != nil {
					return s.chainWindow(ctx, tx, c, pos, limit, false)
				}
				return s.windowRange(ctx, tx, `pos < $2 ORDER BY pos DESC`, id, pos, limit)
			},
			From: func(pos int64, limit int) ([]history.WindowMessage, error) {
				if c != nil {
					return s.chainWindow(ctx, tx, c, pos, limit, true)
				}
				return s.windowRange(ctx, tx, `pos >= $2 ORDER BY pos`, id, pos, limit)
			},
			Standing: func() (*segments.Standing, error) { return s.standing(ctx, tx, op, id) },
		})
		return err
	})
	return out, err
}

// windowRange reads at most limit messages of session id from position at
// in the direction where says, with their tool names.
func (s *Store) windowRange(ctx context.Context, tx pgx.Tx, where, id string, at int64, limit int) ([]history.WindowMessage, error) {
	var out []history.WindowMessage
	err := s.each(ctx, tx, "window", `SELECT `+messageColumns+`, tool_name FROM messages WHERE session_id = $1 AND `+where+` LIMIT $3`,
		[]any{bin(id), at, limit}, func(rows pgx.Rows) error {
			w, err := scanWindow(rows)
			out = append(out, w)
			return err
		})
	return out, err
}

// scanWindow scans one row of messageColumns and tool_name.
func scanWindow(rows pgx.Rows) (history.WindowMessage, error) {
	var (
		w    history.WindowMessage
		tool []byte
		err  error
	)
	w.Position, w.Message, err = scanMessage(rows, &tool)
	w.ToolName = string(tool)
	return w, err
}
