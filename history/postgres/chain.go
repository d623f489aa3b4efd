package postgres

import (
	"context"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
)

// A fork's messages are not copied (docs/storage.md, "Forks"), as in the
// SQLite store: the rows of a fork hold its own messages, at positions
// after its fork point, and the messages up to the fork point are its
// parent's rows (those of the parent's parent below the parent's own fork
// point, and so on). A chain lists where the messages of one session are.
// A read of a session that is no fork reads its own rows as before; a
// read of a fork reads each link's range of the primary key (or of the
// (session_id, seq) or (session_id, id) index), all links in one
// statement (a LATERAL join over the links) or one batch (range reads,
// each in position order).

// link is one session of a chain: its rows hold the chain's messages at
// positions lo < pos <= hi, numbered seqLo <= seq < seqHi.
type link struct {
	key          []byte
	lo, hi       int64
	seqLo, seqHi int64
}

// chain is the links of one session, the session itself first and its
// root last.
type chain []link

// selectChain reads the chain of session $1, the session first: one
// statement however deep, each step through the sessions primary key.
const selectChain = `
	WITH RECURSIVE c (depth, id, lo, hi, seq_lo, seq_hi, parent) AS (
		SELECT 0, id, fork_pos, 9223372036854775807::bigint, fork_seq, 9223372036854775807::bigint, fork_of FROM sessions WHERE id = $1
		UNION ALL
		SELECT c.depth + 1, s.id, s.fork_pos, c.lo, s.fork_seq, c.seq_lo, s.fork_of FROM sessions s JOIN c ON s.id = c.parent
	)
	SELECT id, lo, hi, seq_lo, seq_hi FROM c ORDER BY depth`

// chainOf reads the chain of session id, which the caller found to be a
// fork.
func (s *Store) chainOf(ctx context.Context, tx pgx.Tx, op, id string) (chain, error) {
	c, err := collect(ctx, s, tx, op, selectChain, []any{bin(id)}, func(rows pgx.Rows) (link, error) {
		var l link
		err := rows.Scan(&l.key, &l.lo, &l.hi, &l.seqLo, &l.seqHi)
		return l, err
	})
	if err == nil && len(c) == 0 {
		err = s.found(ctx, op, id, pgx.ErrNoRows)
	}
	return c, err
}

// session reads the watermark of session id, and its chain when it is a
// fork (nil for a session that is no fork); history.ErrNotFound for an
// unknown session.
func (s *Store) session(ctx context.Context, tx pgx.Tx, op, id string) (activeFrom int64, c chain, err error) {
	var forked bool
	err = tx.QueryRow(ctx, `SELECT active_from, fork_of IS NOT NULL FROM sessions WHERE id = $1`, bin(id)).Scan(&activeFrom, &forked)
	if err := s.found(ctx, op, id, err); err != nil {
		return 0, nil, err
	}
	if forked {
		c, err = s.chainOf(ctx, tx, op, id)
	}
	return activeFrom, c, err
}

// spans returns, for each link that holds positions from <= pos < to,
// its key and its part of that range, [f, t), oldest link first; newest
// first when desc.
func (c chain) spans(from, to int64, desc bool) (keys [][]byte, fs, ts []int64) {
	for i := range c {
		l := &c[i]
		if !desc {
			l = &c[len(c)-1-i]
		}
		f, t := max(from, l.lo+1), to
		if l.hi < math.MaxInt64 {
			t = min(to, l.hi+1)
		}
		if f < t {
			keys, fs, ts = append(keys, l.key), append(fs, f), append(ts, t)
		}
	}
	return keys, fs, ts
}

// seqs returns each link's key and range of numbers, newest link first.
func (c chain) seqs() (keys [][]byte, los, his []int64) {
	for i := range c {
		keys, los, his = append(keys, c[i].key), append(los, c[i].seqLo), append(his, c[i].seqHi)
	}
	return keys, los, his
}

// bySeq returns the key of the link whose rows hold message number seq.
func (c chain) bySeq(seq int64) []byte {
	for i := range c {
		if seq >= c[i].seqLo && seq < c[i].seqHi {
			return c[i].key
		}
	}
	return c[len(c)-1].key
}

// byPos returns the key of the link whose rows hold position pos.
func (c chain) byPos(pos int64) []byte {
	for i := range c {
		if pos > c[i].lo && pos <= c[i].hi {
			return c[i].key
		}
	}
	return c[len(c)-1].key
}

// selectSpan reads one link's part of a range of positions, in order.
const selectSpan = `SELECT ` + messageColumns + ` FROM messages WHERE session_id = $1 AND pos >= $2 AND pos < $3 ORDER BY pos`

// queueMessages queues in b the reads of the chain's messages at
// positions from up to, not including, to, one statement per link, and
// returns how many it queued (readMessages reads them).
func (c chain) queueMessages(b *pgx.Batch, from, to int64) int {
	keys, fs, ts := c.spans(from, to, false)
	for i := range keys {
		b.Queue(selectSpan, keys[i], fs[i], ts[i])
	}
	return len(keys)
}

// readMessages reads the results of n reads queueMessages queued, in
// order, with their positions.
func (s *Store) readMessages(ctx context.Context, br pgx.BatchResults, op string, n int) ([]int64, []history.Message, error) {
	var (
		positions []int64
		msgs      = []history.Message{}
	)
	for range n {
		err := s.eachOf(ctx, op, func() (pgx.Rows, error) { return br.Query() }, func(rows pgx.Rows) error {
			pos, m, err := scanMessage(rows)
			positions, msgs = append(positions, pos), append(msgs, m)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return positions, msgs, nil
}

// chainMessages reads the chain's messages at positions from up to, not
// including, to, in position order, in one batch.
func (s *Store) chainMessages(ctx context.Context, tx pgx.Tx, op string, c chain, from, to int64) ([]int64, []history.Message, error) {
	b := &pgx.Batch{}
	n := c.queueMessages(b, from, to)
	if n == 0 {
		return nil, []history.Message{}, nil
	}
	br := tx.SendBatch(ctx, b)
	positions, msgs, err := s.readMessages(ctx, br, op, n)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = s.fail(ctx, op, cerr)
	}
	return positions, msgs, err
}

// overSpans is the FROM clause of a statement over the parts of a range
// that spans gave: $1 keys, $2 and $3 each part's bounds, [f, t).
const overSpans = `FROM unnest($1::bytea[], $2::bigint[], $3::bigint[]) AS c (id, f, t) CROSS JOIN LATERAL`

// chainCount is the number of the chain's messages at positions from
// through to.
func (s *Store) chainCount(ctx context.Context, tx pgx.Tx, op string, c chain, from, to int64) (int64, error) {
	keys, fs, ts := c.spans(from, to+1, false)
	var n int64
	err := tx.QueryRow(ctx, `SELECT COALESCE(sum(m.n), 0)::bigint `+overSpans+`
		(SELECT count(*) AS n FROM messages WHERE session_id = c.id AND pos >= c.f AND pos < c.t) m`, keys, fs, ts).Scan(&n)
	if err != nil {
		return 0, s.fail(ctx, op, err)
	}
	return n, nil
}

// chainFind returns the position and number of the chain's newest message
// with ID msgID; found is false when there is none.
func (s *Store) chainFind(ctx context.Context, tx pgx.Tx, op string, c chain, msgID string) (pos, seq int64, found bool, err error) {
	keys, fs, ts := c.spans(0, math.MaxInt64, true)
	err = tx.QueryRow(ctx, `SELECT m.pos, m.seq `+overSpans+`
		(SELECT pos, seq FROM messages WHERE session_id = c.id AND id = $4 AND pos >= c.f AND pos < c.t ORDER BY pos DESC LIMIT 1) m
		ORDER BY m.pos DESC LIMIT 1`, keys, fs, ts, bin(msgID)).Scan(&pos, &seq)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, s.fail(ctx, op, err)
	}
	return pos, seq, true, nil
}

// chainWindow reads at most limit messages of chain c next to position
// at, with their tool names: before it, newest first, or from it on
// (from), oldest first.
func (s *Store) chainWindow(ctx context.Context, tx pgx.Tx, c chain, at int64, limit int, from bool) ([]history.WindowMessage, error) {
	keys, fs, ts := c.spans(0, at, true)
	order := `DESC`
	if from {
		keys, fs, ts = c.spans(at, math.MaxInt64, false)
		order = ``
	}
	var out []history.WindowMessage
	err := s.each(ctx, tx, "window", `SELECT m.* `+overSpans+`
		(SELECT `+messageColumns+`, tool_name FROM messages WHERE session_id = c.id AND pos >= c.f AND pos < c.t ORDER BY pos `+order+` LIMIT $4) m
		ORDER BY m.pos `+order+` LIMIT $4`, []any{keys, fs, ts, limit}, func(rows pgx.Rows) error {
		w, err := scanWindow(rows)
		out = append(out, w)
		return err
	})
	return out, err
}
