package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
)

// Background indexing (docs/storage.md, "Search"). An Append does not
// write the search index: its messages are the session's unindexed tail,
// the messages numbered from sessions.indexed (the watermark) on, and the
// committer indexes them when it has had no write to run for idleAfter, in
// one transaction of up to idleBatch messages, one FTS5 segment for many
// messages instead of one per Append. Search and Window read the tail from
// the messages table and match it in Go with the words and stems the index
// uses (textsearch.Words, textsearch.Stem, as FTS5's unicode61 and porter
// tokenizers split and stem), so a message is found by the search that
// follows its acknowledged Append, indexed or not. A session's tail is
// bounded: the Append that would make it longer than maxTail indexes its
// oldest messages in its own transaction, so a search reads at most
// maxTail messages outside the index even under a load that leaves the
// committer no idle time (a bulk load; an agent's appends leave it idle
// between them). A process that stops before its committer indexed leaves
// a tail behind; the next Open's committer finds it (indexed <
// message_count) and indexes it in its idle time.

const (
	// maxTail bounds the unindexed messages of one session: a bulk load of
	// up to this many messages into a session runs at the rate of appends
	// that write no index, and a longer one at the index's rate past it.
	maxTail = 1 << 18
	// overChunk is how far below maxTail (or the test's bound, if
	// smaller) the Append that passes it brings the tail: it indexes
	// its session's oldest messages in chunks of about this many, each
	// one FTS5 segment, instead of a few messages at every Append.
	overChunk = 1024
	// idleAfter is how long the committer waits without a write before it
	// indexes.
	idleAfter = 2 * time.Millisecond
	// idleBatch bounds the messages one background transaction indexes,
	// and so how long a write that arrives meanwhile waits.
	idleBatch = 4096
	// hurryTail is the tail a search reads past which it asks the
	// committer to index the session without waiting for idle time
	// (Store.hurry): the searches that follow read less of it.
	hurryTail = tailChunk
	// hurryQueue bounds the hurry requests waiting for the committer; a
	// search whose request finds the queue full does not wait.
	hurryQueue = 64
)

// tailBound is the longest unindexed tail an Append leaves: maxTail, or
// the test's bound (hooks.indexBound).
func (s *Store) tailBound() int64 {
	if s.hooks.indexBound != nil {
		return int64(*s.hooks.indexBound)
	}
	return maxTail
}

// afterAppend is what an Append that took session id to total messages
// does about the index: when the tail has grown past the bound, it
// indexes its oldest messages, leaving overChunk fewer than the bound (the
// whole tail for a bound of at most overChunk), and it leaves the rest to
// the committer's idle time. It runs on the committer (as every write's
// function does), which owns pending.
func (s *Store) afterAppend(ctx context.Context, tx *sql.Tx, id string, st *state, total int64) error {
	if s.hooks.noIndex {
		return nil
	}
	if bound := s.tailBound(); total-st.indexed > bound {
		to := total - bound + min(overChunk, bound)
		if err := s.indexRange(ctx, s.c, tx, "append", id, st.num, st.indexed, to); err != nil {
			return err
		}
		if to == total {
			return nil
		}
	}
	s.c.pending[id] = struct{}{}
	return nil
}

// indexIdle is the committer's work when it has had no write for
// idleAfter (urgent false): at its first idle time, it reads which
// sessions have a tail (a process that stopped left it); then it indexes
// up to idleBatch messages of the sessions in pending in one transaction.
// With urgent, it does the same for the sessions in c.urgent, between
// batches of writes. A failure drops the sessions it was indexing from
// pending (and urgent): their tails stay searchable, and the bound or the
// next Open indexes them.
func (s *Store) indexIdle(c *committer, urgent bool) {
	if urgent {
		s.indexSome(c, c.urgent)
		return
	}
	if c.scan {
		c.scan = false
		ids, err := unindexed(context.Background(), c.w)
		for _, id := range ids {
			c.pending[id] = struct{}{}
		}
		if err != nil {
			clear(c.pending)
			return
		}
	}
	if s.hooks.noIdleIndex || len(c.pending) == 0 {
		clear(c.pending)
		return
	}
	s.indexSome(c, c.pending)
}

// indexSome indexes up to idleBatch messages of the sessions in set (the
// committer's pending or urgent) in one transaction, and drops from both
// the sessions whose tails it indexed whole.
func (s *Store) indexSome(c *committer, set map[string]struct{}) {
	ctx := context.Background()
	drop := func(id string) {
		delete(c.pending, id)
		delete(c.urgent, id)
	}
	fail := func() {
		for id := range set {
			drop(id)
		}
	}
	if c.stmts == nil {
		var err error
		if c.stmts, err = prepare(c.w); err != nil {
			fail()
			return
		}
	}
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		fail()
		return
	}
	left, done := int64(idleBatch), []string{}
	for id := range set {
		if left <= 0 {
			break
		}
		var num, indexed, count int64
		err := tx.QueryRowContext(ctx, `SELECT num, indexed, message_count FROM sessions WHERE id = ?`, id).Scan(&num, &indexed, &count)
		if err == nil {
			to := min(count, indexed+left)
			err = s.indexRange(ctx, c, tx, "index", id, num, indexed, to)
			left -= to - indexed
			if to == count {
				done = append(done, id)
			}
		}
		if errors.Is(err, sql.ErrNoRows) { // deleted meanwhile
			done, err = append(done, id), nil
		}
		if err != nil {
			_ = tx.Rollback()
			drop(id)
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail()
		return
	}
	for _, id := range done {
		drop(id)
	}
	if s.hooks.onIndexed != nil {
		s.hooks.onIndexed(idleBatch - int(left))
	}
}

// hurry asks the committer to index the sessions of chain c whose tails
// (read lists how many messages of each link's tail a search read) reach
// hurryTail between its batches, without waiting for idle time. It never
// waits: a request that finds the queue full is dropped (a later search
// asks again).
func (s *Store) hurry(c chain, read []int64) {
	if s.hooks.noHurry || s.c.readOnly {
		return
	}
	for i, n := range read {
		if n < hurryTail {
			continue
		}
		select {
		case s.c.hurry <- c[i].id:
		default:
		}
	}
}

// indexRange adds the messages of session id (number num) numbered from
// up to, not including, to to the search index and to message_ids (the
// IDs a Window or a fork looks up: chain.go, find) and moves its watermark
// to to, in tx, with the statements of committer c. It takes c rather than
// reading s.c: the committer's first idle work may run before Open has
// stored s.c.
func (s *Store) indexRange(ctx context.Context, c *committer, tx *sql.Tx, op, id string, num, from, to int64) error {
	if from >= to {
		return nil
	}
	q := txQuerier{s: s, ctx: ctx, tx: tx, op: op}
	pos, msgs, err := s.numbered(q, id, from, to)
	if err != nil {
		return err
	}
	docs, err := s.docs(q, id, pos, msgs)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, c.stmts.indexMessage)
	for i := range msgs {
		m := &msgs[i]
		if _, err := stmt.ExecContext(ctx, rowidOf(num, from+int64(i)), docs[i].Text, docs[i].Tool, m.ID, string(m.Role), pos[i]); err != nil {
			return s.fail(ctx, op, err)
		}
	}
	if _, err := tx.ExecContext(ctx, insertMessageIDs, id, from, to); err != nil {
		return s.fail(ctx, op, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET indexed = ? WHERE id = ?`, to, id); err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// numbered reads the messages of session id's own rows numbered from up
// to, not including, to, in order, with their positions.
func (s *Store) numbered(q querier, id string, from, to int64) ([]int64, []history.Message, error) {
	var (
		pos  []int64
		msgs []history.Message
	)
	err := q.query(`SELECT pos, body FROM messages WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq`,
		[]any{id, from, to}, func(rows rowScanner) error {
			var p int64
			m, err := decodeMessage(rows, &p)
			if err != nil {
				return err
			}
			pos, msgs = append(pos, p), append(msgs, m)
			return nil
		})
	return pos, msgs, err
}

// docs is the searchable text of msgs, consecutive messages of session id
// at positions pos: a tool result's tool name is found among the messages
// before it, and those before msgs[0] along a fork's chain (lookBack).
func (s *Store) docs(q querier, id string, pos []int64, msgs []history.Message) ([]textsearch.Doc, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	before, lookErr := s.lookBack(q, id, pos[0])
	docs := make([]textsearch.Doc, len(msgs))
	for i := range msgs {
		docs[i] = textsearch.DocOf(&msgs[i], textsearch.ToolName(msgs, i, before))
		if *lookErr != nil {
			return nil, *lookErr
		}
	}
	return docs, nil
}

// lookBack is the look-back of textsearch.ToolName for a message of
// session id at position upto: it reads the messages before it, newest
// first, along the session's chain (chain.go), at most ToolLookback. Its
// error is left in the second result.
func (s *Store) lookBack(q querier, id string, upto int64) (func(fn func(m *history.Message) bool), *error) {
	var lookErr error
	return func(fn func(m *history.Message) bool) {
		c, err := chainOf(q, id)
		if err != nil {
			lookErr = err
			return
		}
		left := textsearch.ToolLookback
		for i := range c {
			l := &c[i]
			lookErr = q.query(`SELECT body FROM messages WHERE session_id = ? AND pos < ? AND pos > ? ORDER BY pos DESC LIMIT ?`,
				[]any{l.id, min(upto, l.upto()), l.lo, left}, func(rows rowScanner) error {
					m, err := decodeMessage(rows, nil)
					if err != nil {
						return err
					}
					left--
					if !fn(&m) {
						return errStop
					}
					return nil
				})
			if lookErr != nil || left <= 0 {
				break
			}
		}
		if errors.Is(lookErr, errStop) {
			lookErr = nil
		}
	}, &lookErr
}

// errStop ends a look-back early.
var errStop = errors.New("look-back done")

// tail is the unindexed messages of a chain that one search reads: each
// one's candidate by rowid, and for each stem of the query's words, the
// rowids of the messages holding a word of that stem, newest first.
type tail struct {
	cands map[int64]textsearch.Candidate
	stems map[string][]int64
	read  []int64 // the messages read of each link's tail
}

// readTail reads the unindexed messages of chain c (whose session holds
// count messages) and matches them against the words of q as FTS5 would:
// a message holds a word when one of its words (textsearch.Words) has the
// word's Porter stem. Only the messages that hold a word are kept, as
// candidates.
func (s *Store) readTail(rq querier, c chain, count int64, q textsearch.Query) (*tail, error) {
	t := &tail{cands: map[int64]textsearch.Candidate{}, stems: map[string][]int64{}}
	// Only a word that begins as a stem does is stemmed: Porter's stem of
	// a word shares all its bytes but the last two with the word (a
	// replaced suffix: "ability" is "able", "happy" "happi"), and
	// returns a word of fewer than three letters as it is. So a word
	// whose first byte (for a stem of three bytes or less) or first two
	// bytes do not begin a stem cannot have it.
	var (
		one   [256]bool
		two   = new([256][256]bool)
		stems = map[string]string{} // the words stemmed, each once
	)
	for i := range q.Terms {
		forms := q.Words[i : i+1]
		if i < len(q.Forms) {
			forms = q.Forms[i]
		}
		for _, f := range forms {
			st := textsearch.Stem(f)
			switch {
			case len(st) <= 3:
				one[st[0]] = true
			default:
				two[st[0]][st[1]] = true
			}
			t.stems[st] = nil
		}
	}
	// match adds message r to the lists of the query's stems that word w
	// has, and reports whether it did.
	match := func(r int64, w string) bool {
		if !one[w[0]] && (len(w) < 2 || !two[w[0]][w[1]]) {
			return false
		}
		st, ok := stems[w]
		if !ok {
			st = textsearch.Stem(w)
			stems[w] = st
		}
		if keys, ok := t.stems[st]; ok && (len(keys) == 0 || keys[len(keys)-1] != r) {
			t.stems[st] = append(keys, r)
			return true
		}
		return false
	}
	for i := range c {
		l := &c[i]
		lo, hi := max(l.indexed, l.seqLo), min(l.seqHi, count)
		t.read = append(t.read, max(0, hi-lo))
		for to := hi; to > lo; to -= tailChunk { // newest first
			from := max(lo, to-tailChunk)
			if err := s.matchTail(rq, l, from, to, t, match); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// tailChunk is how many messages of a tail a search reads at once.
const tailChunk = 4096

// matchTail matches the messages of link l numbered from up to, not
// including, to, newest first, with match (readTail), and adds the ones
// that hold a word of the query to t's candidates.
func (s *Store) matchTail(q querier, l *link, from, to int64, t *tail, match func(r int64, w string) bool) error {
	pos, msgs, err := s.numbered(q, l.id, from, to)
	if err != nil {
		return err
	}
	docs, err := s.docs(q, l.id, pos, msgs)
	if err != nil {
		return err
	}
	for k := len(msgs) - 1; k >= 0; k-- { // newest first
		r, held := rowidOf(l.num, from+int64(k)), false
		words := func(w string) bool {
			held = match(r, w) || held
			return true
		}
		textsearch.Words(docs[k].Text, words)
		textsearch.Words(docs[k].Tool, words)
		if !held {
			continue
		}
		m := &msgs[k]
		t.cands[r] = textsearch.Candidate{
			Message:  history.Message{ID: m.ID, Role: m.Role, Text: docs[k].Text},
			ToolName: docs[k].Tool,
			Position: pos[k],
		}
	}
	return nil
}

// match returns the rowids of the tail's messages holding word, newest
// first.
func (t *tail) match(word string) []int64 { return t.stems[textsearch.Stem(word)] }

// merge returns the keys of a and b (each newest first), newest first, at
// most limit.
func merge(a, b []int64, limit int) []int64 {
	if len(a) == 0 {
		return b
	}
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(x, y int64) int { return cmp.Compare(y, x) })
	all = slices.Compact(all)
	return all[:min(limit, len(all))]
}

// unindexed lists the sessions of w with a tail.
func unindexed(ctx context.Context, w *sql.DB) ([]string, error) {
	rows, err := w.QueryContext(ctx, `SELECT id FROM sessions WHERE indexed < message_count`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
