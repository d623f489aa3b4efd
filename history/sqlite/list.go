package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
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

// ListSessions implements [history.Catalog] (sqlstore.ListQuery).
func (s *Store) ListSessions(ctx context.Context, opts history.ListOptions) (history.SessionPage, error) {
	const op = "list sessions"
	var args []any
	q, limit, err := sqlstore.ListQuery(opts, titleColumn,
		func(v any) string { args = append(args, v); return "?" },
		func(v string) any { return v })
	if err != nil {
		return history.SessionPage{}, err
	}
	var out []history.SessionInfo
	err = s.read(ctx, op, func(tx *sql.Tx) error {
		return s.each(ctx, tx, op, q, args, func(rows *sql.Rows) error {
			var (
				info             history.SessionInfo
				created, updated sql.NullInt64
				title            string
				forkOf           sql.NullString
			)
			if err := rows.Scan(&info.ID, &created, &updated, &title, &info.Cwd, &info.Messages, &forkOf, &info.ForkAt); err != nil {
				return err
			}
			info.ForkOf = forkOf.String
			info.CreatedAt, info.UpdatedAt, info.Title = decodeTime(created), decodeTime(updated), defaultTitle(title)
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return history.SessionPage{}, err
	}
	return storekit.Page(out, limit), nil
}
