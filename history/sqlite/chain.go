package sqlite

import (
	"database/sql"
	"errors"
	"math"

	"github.com/sessionkit/sessionkit/history"
)

// A fork's messages are not copied (docs/storage.md, "Forks"): the rows
// of a fork hold its own messages, at positions after its fork point, and
// the messages up to the fork point are its parent's rows (those of the
// parent's parent below the parent's own fork point, and so on). A chain
// lists where the messages of one session are, and each read of messages
// reads each link's range of its primary key.

// link is one session of a chain: its rows hold the chain's messages at
// positions lo < pos <= hi, numbered seqLo <= seq < seqHi.
type link struct {
	id           string
	num          int64 // the session's number (its message_fts rowids)
	indexed      int64 // its own messages numbered from indexed on are not indexed (indexer.go)
	lo, hi       int64
	seqLo, seqHi int64
}

// upto is the position after the link's last: hi+1, or MaxInt64 for the
// session read.
func (l *link) upto() int64 {
	if l.hi == math.MaxInt64 {
		return l.hi
	}
	return l.hi + 1
}

// chain is the links of one session, the session itself first and its
// root last: one link for a session that is no fork.
type chain []link

// forked reports whether the chain is a fork's.
func (c chain) forked() bool { return len(c) > 1 }

// selectChain reads the chain of session ?, the session first: one
// statement however deep, each step through the sessions primary key.
const selectChain = `
	WITH RECURSIVE c (depth, id, num, lo, hi, seq_lo, seq_hi, parent, indexed) AS (
		SELECT 0, id, num, fork_pos, 9223372036854775807, fork_seq, 9223372036854775807, fork_of, indexed FROM sessions WHERE id = ?
		UNION ALL
		SELECT c.depth + 1, s.id, s.num, s.fork_pos, c.lo, s.fork_seq, c.seq_lo, s.fork_of, s.indexed FROM sessions AS s JOIN c ON s.id = c.parent
	)
	SELECT id, num, lo, hi, seq_lo, seq_hi, indexed FROM c ORDER BY depth`

// chainOf returns the chain of session id through q; sql.ErrNoRows for an
// unknown session.
func chainOf(q querier, id string) (chain, error) {
	var c chain
	err := q.query(selectChain, []any{id}, func(row rowScanner) error {
		var l link
		err := row.Scan(&l.id, &l.num, &l.lo, &l.hi, &l.seqLo, &l.seqHi, &l.indexed)
		c = append(c, l)
		return err
	})
	if err == nil && len(c) == 0 {
		err = sql.ErrNoRows
	}
	return c, err
}

// span calls fn with each link's part of the positions from up to, not
// including, to, oldest first, and stops at its first error.
func (c chain) span(from, to int64, fn func(l *link, from, to int64) error) error {
	for i := len(c) - 1; i >= 0; i-- {
		l := &c[i]
		f, t := max(from, l.lo+1), min(to, l.upto())
		if f >= t {
			continue
		}
		if err := fn(l, f, t); err != nil {
			return err
		}
	}
	return nil
}

// messages reads the chain's messages at positions from up to, not
// including, to, with their positions when withPos; expect is how many
// there are likely to be (the room made for them at once).
func (c chain) messages(q querier, withPos bool, from, to int64, expect int) ([]int64, []history.Message, error) {
	var positions []int64
	msgs := make([]history.Message, 0, max(expect, 0))
	err := c.span(from, to, func(l *link, f, t int64) error {
		var err error
		positions, msgs, err = scanAppend(q, withPos, positions, msgs, whereSpan, l.id, f, t)
		return err
	})
	return positions, msgs, err
}

// count is the number of the chain's messages at positions from through to.
func (c chain) count(q querier, from, to int64) (int64, error) {
	var n int64
	err := c.span(from, to+1, func(l *link, f, t int64) error {
		var k int64
		err := queryRow(q, `SELECT count(*) FROM messages `+whereSpan, []any{l.id, f, t}, &k)
		n += k
		return err
	})
	return n, err
}

// bySeq returns the link whose rows hold message number seq.
func (c chain) bySeq(seq int64) *link {
	for i := range c {
		if seq >= c[i].seqLo && seq < c[i].seqHi {
			return &c[i]
		}
	}
	return &c[len(c)-1]
}

// byPos returns the link whose rows hold position pos.
func (c chain) byPos(pos int64) *link {
	for i := range c {
		if pos > c[i].lo && pos <= c[i].hi {
			return &c[i]
		}
	}
	return &c[len(c)-1]
}

// find returns the position and number of the newest message of the
// chain with ID msgID; found is false when there is none. Each link, newest
// first, is looked up in its unindexed tail (selectTailID: the messages
// numbered from its watermark on, which message_ids does not hold yet),
// then in message_ids (selectIndexedID): every tail message is newer than
// every indexed one. The watermarks are the chain's, read in q's
// transaction, as message_ids is, so that a message the indexer moves
// meanwhile is seen in exactly one of the two.
func (c chain) find(q querier, msgID string) (pos, seq int64, found bool, err error) {
	id := []byte(msgID)
	for i := range c {
		l := &c[i]
		for _, st := range [...]struct {
			query string
			args  []any
		}{
			{selectTailID, []any{l.id, max(l.indexed, l.seqLo), l.seqHi, id}},
			{selectIndexedID, []any{l.id, id, l.lo, l.hi}},
		} {
			err := queryRow(q, st.query, st.args, &pos, &seq)
			switch {
			case err == nil:
				return pos, seq, true, nil
			case !errors.Is(err, sql.ErrNoRows):
				return 0, 0, false, err
			}
		}
	}
	return 0, 0, false, nil
}

// forkActive reads the Active messages of fork id, from the watermark
// activeFrom on, along its chain; active is how many there are.
func (s *Store) forkActive(q querier, id string, activeFrom int64, active int64) ([]history.Message, error) {
	c, err := chainOf(q, id)
	if err != nil {
		return nil, err
	}
	_, msgs, err := c.messages(q, false, activeFrom, math.MaxInt64, int(active))
	return msgs, err
}
