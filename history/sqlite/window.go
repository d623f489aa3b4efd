package sqlite

import (
	"context"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
)

// Window implements [history.Reader] (segments.ReadWindow): the message
// is found by its ID along the session's chain (chain.find: in each link's
// unindexed tail, then in message_ids, which the indexer writes; an Append
// writes no index of IDs), the window's messages are two ranges of the
// primary key from there, each message with its tool name from the search
// index (the message_fts row of its number), all in one read transaction
// whose cost does not grow with the session (the tail a lookup reads is
// bounded, as a search's is: indexer.go).
func (s *Store) Window(ctx context.Context, id string, q history.WindowQuery) (out []history.WindowMessage, err error) {
	const op = "window"
	err = s.view(ctx, op, func(rq querier) error {
		out, err = segments.ReadWindow(id, q, s.windowReads(ctx, rq, op, id))
		return err
	})
	return out, err
}

// windowReads are the reads of Window through q, for operation op.
func (s *Store) windowReads(ctx context.Context, q querier, op, id string) segments.WindowReads {
	var c chain // the session's chain: one link unless a fork
	return segments.WindowReads{
		Session: func() (activeFrom int64, err error) {
			if activeFrom, err = s.existsIn(ctx, q, op, id); err != nil {
				return 0, err
			}
			if c, err = chainOf(q, id); err != nil {
				return 0, s.fail(ctx, op, err)
			}
			return activeFrom, nil
		},
		Find: func(msgID string) (pos int64, found bool, err error) {
			pos, _, found, err = c.find(q, msgID)
			return pos, found, err
		},
		Before: func(pos int64, limit int) ([]history.WindowMessage, error) {
			if c.forked() {
				return s.chainWindow(q, c, pos, limit, false)
			}
			return s.windowRange(q, `m.pos < ? ORDER BY m.pos DESC`, &c[0], limit, pos)
		},
		From: func(pos int64, limit int) ([]history.WindowMessage, error) {
			if c.forked() {
				return s.chainWindow(q, c, pos-1, limit, true)
			}
			return s.windowRange(q, `m.pos >= ? ORDER BY m.pos`, &c[0], limit, pos)
		},
		Standing: func() (*segments.Standing, error) { return s.standing(q, id) },
	}
}

// windowRange reads at most limit messages of link l's own rows from the
// position where says (bounds are its parameters) in the direction it
// says, each with the tool name its message_fts row holds (a LEFT JOIN),
// or for a tool result not indexed yet (indexer.go), the one its
// look-back finds.
func (s *Store) windowRange(q querier, where string, l *link, limit int, bounds ...any) ([]history.WindowMessage, error) {
	var (
		out     []history.WindowMessage
		unnamed []int // tool results of the tail, in out
	)
	err := q.query(`
		SELECT m.pos, m.seq, CAST(m.body AS TEXT), COALESCE(f.tool, '') FROM messages AS m
		LEFT JOIN message_fts AS f ON f.rowid = ? + m.seq
		WHERE m.session_id = ? AND `+where+` LIMIT ?`, append(append([]any{rowidOf(l.num, 0), l.id}, bounds...), limit), func(rows rowScanner) error {
		var (
			w    history.WindowMessage
			seq  int64
			body string
		)
		if err := rows.Scan(&w.Position, &seq, &body, &w.ToolName); err != nil {
			return err
		}
		if err := decodeText(body, &w.Message); err != nil {
			return err
		}
		if seq >= l.indexed && w.Message.Role == history.RoleTool {
			unnamed = append(unnamed, len(out))
		}
		out = append(out, w)
		return nil
	})
	for _, i := range unnamed {
		if err != nil {
			break
		}
		w := &out[i]
		before, lookErr := s.lookBack(q, l.id, w.Position)
		w.ToolName = textsearch.ToolName([]history.Message{w.Message}, 0, before)
		err = *lookErr
	}
	return out, err
}

// chainWindow reads at most limit messages of chain c next to position
// at: before it, newest first, or after it (after), oldest first; each
// link's range of positions is read from its own rows.
func (s *Store) chainWindow(q querier, c chain, at int64, limit int, after bool) ([]history.WindowMessage, error) {
	var out []history.WindowMessage
	for k := range c {
		l := &c[k]
		if after {
			l = &c[len(c)-1-k]
		}
		n := limit - len(out)
		if n <= 0 {
			break
		}
		var (
			got []history.WindowMessage
			err error
		)
		switch {
		case after && l.hi > at:
			got, err = s.windowRange(q, `m.pos > ? AND m.pos <= ? ORDER BY m.pos`, l, n, max(at, l.lo), l.hi)
		case !after && l.lo+1 < at:
			got, err = s.windowRange(q, `m.pos < ? AND m.pos > ? ORDER BY m.pos DESC`, l, n, min(at, l.upto()), l.lo)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}
