package sqlstore

import (
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// ListQuery is the statement of one ListSessions page, and its limit (the
// page holds at most limit sessions; the statement reads one more, which
// tells whether there is a next page). title is the store's expression of
// a session's title; arg adds a value to the statement's arguments and
// returns its placeholder; text is the argument value of a string column.
// The page goes through the (updated_at, id) index, or the (cwd,
// updated_at, id) index with a Cwd; the forks of one session (ForkOf),
// few, through the fork_of index.
// Sessions deleted while forks read them (marked deleted) are left out.
func ListQuery(opts history.ListOptions, title string, arg func(v any) string, text func(string) any) (q string, limit int, err error) {
	limit, after, err := storekit.ParseList(opts)
	if err != nil {
		return "", 0, err
	}
	where := []string{`deleted = ` + arg(false)}
	if opts.Cwd != "" {
		where = append(where, `cwd = `+arg(text(opts.Cwd)))
	}
	if opts.ForkOf != "" {
		where = append(where, `fork_of = `+arg(text(opts.ForkOf)))
	}
	if after != nil {
		where = append(where, `(updated_at, id) < (`+arg(after.UpdatedAt)+`, `+arg(text(after.ID))+`)`)
	}
	q = `SELECT id, created_at, updated_at, ` + title + `, cwd, message_count, fork_of, fork_at FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	return q + ` ORDER BY updated_at DESC, id DESC LIMIT ` + arg(limit+1), limit, nil
}

// CopyRows is the statement that writes the rows of table whose
// session_id is the parameter from and whose position is at most the
// parameter at again, with the parameter to as their session_id: cols are
// the table's columns, each copied as it is but session_id.
func CopyRows(table string, cols []string, to, from, at string) string {
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = c
		if c == "session_id" {
			sel[i] = to
		}
	}
	return `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(sel, ", ") +
		` FROM ` + table + ` WHERE session_id = ` + from + ` AND pos <= ` + at
}
