package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// titleColumn reads a session's title: "=" and its own title, or the body
// of its first message (encodeBody, which never starts with "="), from whose
// text defaultTitle makes the default one, or "" without messages. The first
// message is found through the (session_id, seq) index.
const titleColumn = `CASE WHEN title <> '' THEN '=' || title
	ELSE COALESCE((SELECT body FROM messages m WHERE m.session_id = sessions.id AND m.seq = 0), '') END`

// defaultTitle decodes a value of titleColumn.
func defaultTitle(v string) string {
	if t, ok := strings.CutPrefix(v, "="); ok {
		return t
	}
	var first history.Message
	if v != "" {
		if _, err := decodeBody([]byte(v), &first); err != nil {
			return history.DefaultTitle("")
		}
	}
	return history.DefaultTitle(first.Text)
}

// ListSessions implements [history.Lister]. It reads one page through the
// (updated_at, id) index, or the (cwd, updated_at, id) index with a Cwd.
func (s *Store) ListSessions(ctx context.Context, opts history.ListOptions) (history.SessionPage, error) {
	const op = "list sessions"
	limit, after, err := history.ParseList(opts)
	if err != nil {
		return history.SessionPage{}, err
	}
	var (
		where []string
		args  []any
	)
	if opts.Cwd != "" {
		where, args = append(where, `cwd = ?`), append(args, opts.Cwd)
	}
	if after != nil {
		where, args = append(where, `(updated_at, id) < (?, ?)`), append(args, after.UpdatedAt, after.ID)
	}
	q := `SELECT id, created_at, updated_at, ` + titleColumn + `, cwd, message_count FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	var out []history.SessionInfo
	err = s.read(ctx, op, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var (
				info             history.SessionInfo
				created, updated sql.NullInt64
				title            string
			)
			if err := rows.Scan(&info.ID, &created, &updated, &title, &info.Cwd, &info.Messages); err != nil {
				return s.fail(ctx, op, err)
			}
			info.CreatedAt, info.UpdatedAt, info.Title = decodeTime(created), decodeTime(updated), defaultTitle(title)
			out = append(out, info)
		}
		if err := rows.Err(); err != nil {
			return s.fail(ctx, op, err)
		}
		return nil
	})
	if err != nil {
		return history.SessionPage{}, err
	}
	return history.Page(out, limit), nil
}
