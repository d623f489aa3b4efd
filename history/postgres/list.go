package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.Cwd != "" {
		where = append(where, `cwd = `+arg(bin(opts.Cwd)))
	}
	if after != nil {
		where = append(where, `(updated_at, id) < (`+arg(after.UpdatedAt)+`, `+arg(bin(after.ID))+`)`)
	}
	q := `SELECT id, created_at, updated_at, ` + titleColumn + `, cwd, message_count FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ` + arg(limit+1)
	var out []history.SessionInfo
	err = s.read(ctx, op, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				info             history.SessionInfo
				id, title, cwd   []byte
				created, updated int64
			)
			if err := rows.Scan(&id, &created, &updated, &title, &cwd, &info.Messages); err != nil {
				return s.fail(ctx, op, err)
			}
			info.ID, info.Title, info.Cwd = string(id), defaultTitle(title), string(cwd)
			info.CreatedAt, info.UpdatedAt = decodeTime(&created), decodeTime(&updated)
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
