package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// titleColumn reads a session's title: "=" and its own title, or "~" and
// the text of its first message, from which defaultTitle makes the default
// one. The first message is found through the (session_id, seq) index.
const titleColumn = `CASE WHEN title <> ''::bytea THEN '\x3d'::bytea || title
	ELSE '\x7e'::bytea || COALESCE((SELECT text FROM messages m WHERE m.session_id = sessions.id AND m.seq = 0), ''::bytea) END`

// defaultTitle decodes a value of titleColumn.
func defaultTitle(v []byte) string {
	if t, ok := strings.CutPrefix(string(v), "="); ok {
		return t
	}
	return history.DefaultTitle(strings.TrimPrefix(string(v), "~"))
}

// ListSessions implements [history.Catalog] (sqlstore.ListQuery).
func (s *Store) ListSessions(ctx context.Context, opts history.ListOptions) (history.SessionPage, error) {
	const op = "list sessions"
	var args []any
	q, limit, err := sqlstore.ListQuery(opts, titleColumn,
		func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) },
		func(v string) any { return bin(v) })
	if err != nil {
		return history.SessionPage{}, err
	}
	var out []history.SessionInfo
	err = s.read(ctx, op, "", func(tx pgx.Tx) error {
		return s.each(ctx, tx, op, q, args, func(rows pgx.Rows) error {
			var (
				info             history.SessionInfo
				id, title, cwd   []byte
				forkOf, forkAt   []byte
				created, updated int64
			)
			if err := rows.Scan(&id, &created, &updated, &title, &cwd, &info.Messages, &forkOf, &forkAt); err != nil {
				return err
			}
			info.ForkOf, info.ForkAt = string(forkOf), string(forkAt)
			info.ID, info.Title, info.Cwd = string(id), defaultTitle(title), string(cwd)
			info.CreatedAt, info.UpdatedAt = decodeTime(&created), decodeTime(&updated)
			out = append(out, info)
			return nil
		})
	})
	if err != nil {
		return history.SessionPage{}, err
	}
	return storekit.Page(out, limit), nil
}
