package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Search (docs/storage.md, "Search"). Every message has one row in the FTS5
// table message_fts (porter tokenizer), inserted after the Append that
// stores the message, in the committer's idle time or by a later Append
// (indexer.go); until then the message is in its session's unindexed tail,
// which Search reads and matches itself. A row's rowid is the session's number
// (sessions.num) times 2^32 plus the message's seq, so that a session's
// rows are one rowid range, which FTS5 searches without visiting other
// sessions' rows. A commit or an undo writes nothing to the index: which
// Segment holds a message follows from its position and the standing
// Segments' spans, read when searching.
//
// Search asks the index, for each content word of the query, for the
// newest messages holding it (at most maxCandidates in all), reads those
// messages and ranks them with history/internal/textsearch, as memstore ranks its
// own. A word held by more messages than its share has its message count
// (bm25's document frequency) estimated from how far back its share
// reaches (textsearch.Estimate), which costs no scan of its matches. A message that holds a word held by fewer messages than its share
// of maxCandidates is always a candidate; only a message whose every
// matching word is that common and that is older than the newest
// maxCandidates holding it can be missed.

// maxCandidates bounds the messages one search reads and ranks.
const maxCandidates = 512

// rowidOf is the message_fts rowid of message seq of session num.
func rowidOf(num, seq int64) int64 { return num<<32 | seq }

// ftsPhrase is word as one FTS5 phrase: a double-quoted string, any quote
// doubled, so that no text is FTS5 syntax.
func ftsPhrase(word string) string { return `"` + strings.ReplaceAll(word, `"`, `""`) + `"` }

// Search implements [history.Reader]; see the comment at the top of
// search.go for how.
func (s *Store) Search(ctx context.Context, id string, sq history.SearchQuery) (history.SearchPage, error) {
	const op = "search"
	q, offset, limit, err := textsearch.Request(sq)
	if err != nil {
		return history.SearchPage{}, err
	}
	var page history.SearchPage
	err = s.view(ctx, op, func(rq querier) error {
		var num, activeFrom, count int64
		err := queryRow(rq, `SELECT num, active_from, message_count FROM sessions WHERE id = ?`, []any{id}, &num, &activeFrom, &count)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		if len(q.Terms) == 0 {
			page = history.SearchPage{Hits: []history.SearchHit{}}
			return nil
		}
		c, err := chainOf(rq, id)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		lo, hi := rowidOf(num, 0), rowidOf(num, 1<<32-1)
		var rowOf map[int64]int64 // a fork's keys are seqs: their rowids
		keys := func(word string, limit int) ([]int64, error) {
			var keys []int64
			err := rq.query(`SELECT rowid FROM message_fts WHERE message_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?`,
				[]any{ftsPhrase(word), lo, hi, limit}, func(rows rowScanner) error {
					var r int64
					if err := rows.Scan(&r); err != nil {
						return err
					}
					keys = append(keys, r)
					return nil
				})
			return keys, err
		}
		first := lo
		if c.forked() {
			first, rowOf = 0, map[int64]int64{}
			keys = func(word string, limit int) ([]int64, error) {
				var seqs []int64
				for i := range c {
					l := &c[i]
					if len(seqs) >= limit {
						break
					}
					err := rq.query(`SELECT rowid FROM message_fts WHERE message_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?`,
						[]any{ftsPhrase(word), rowidOf(l.num, l.seqLo), rowidOf(l.num, min(l.seqHi, 1<<32)-1), limit - len(seqs)}, func(rows rowScanner) error {
							var r int64
							if err := rows.Scan(&r); err != nil {
								return err
							}
							seqs = append(seqs, r&(1<<32-1))
							rowOf[r&(1<<32-1)] = r
							return nil
						})
					if err != nil {
						return nil, err
					}
				}
				return seqs, nil
			}
		}
		t, err := s.readTail(rq, c, count, q)
		if err != nil {
			return err
		}
		defer s.hurry(c, t.read)
		indexKeys := keys
		keys = func(word string, limit int) ([]int64, error) {
			found, err := indexKeys(word, limit)
			if err != nil {
				return nil, err
			}
			own := t.match(word)
			if c.forked() { // the keys are seqs
				seqs := make([]int64, len(own))
				for i, r := range own {
					seqs[i] = r & (1<<32 - 1)
					rowOf[seqs[i]] = r
				}
				own = seqs
			}
			return merge(own, found, limit), nil
		}
		lists, st, err := textsearch.Gather(q, int(count), maxCandidates, first, keys)
		if err != nil {
			return err
		}
		rowids := textsearch.Prune(lists, st, textsearch.Need(offset, limit, sq.Neighbors))
		if c.forked() {
			for i, k := range rowids {
				rowids[i] = rowOf[k]
			}
		}
		cands, err := s.candidates(rq, rowids, t)
		if err != nil {
			return err
		}
		standing, err := s.standing(rq, id)
		if err != nil {
			return err
		}
		textsearch.Place(cands, activeFrom, standing)
		page, err = textsearch.Page(q, offset, limit, sq.Neighbors, cands, st, func(pos int64, limit int, after bool) ([]history.WindowMessage, error) {
			where := `m.pos < ? ORDER BY m.pos DESC`
			if after {
				where = `m.pos > ? ORDER BY m.pos`
			}
			if c.forked() {
				return s.chainWindow(rq, c, pos, limit, after)
			}
			return s.windowRange(rq, where, &c[0], limit, pos)
		})
		return err
	})
	if err != nil {
		return history.SearchPage{}, err
	}
	return page, nil
}

// candidates reads what the index holds of the messages of the given
// message_fts rowids, or takes it from the unindexed tail t: each one's
// searchable text (as its Text, tool calls included), ID, role, position
// and tool name.
func (s *Store) candidates(q querier, rowids []int64, t *tail) ([]textsearch.Candidate, error) {
	var (
		out     []textsearch.Candidate
		indexed []int64
	)
	for _, r := range rowids {
		if c, ok := t.cands[r]; ok {
			out = append(out, c)
		} else {
			indexed = append(indexed, r)
		}
	}
	if len(indexed) == 0 {
		return out, nil
	}
	list, err := json.Marshal(indexed)
	if err != nil {
		return nil, err
	}
	found, err := collect(q, `
		SELECT f.text, f.tool, f.id, f.role, f.pos FROM json_each(?) AS j
		JOIN message_fts AS f ON f.rowid = j.value`,
		[]any{string(list)}, func(rows rowScanner) (textsearch.Candidate, error) {
			var c textsearch.Candidate
			err := rows.Scan(&c.Message.Text, &c.ToolName, &c.Message.ID, &c.Message.Role, &c.Position)
			return c, err
		})
	return append(out, found...), err
}

// standing reads the session's standing Segments with their compaction
// numbers (segments.StandingQuery).
func (s *Store) standing(q querier, id string) (*segments.Standing, error) {
	var st segments.Standing
	err := q.query(segments.StandingQuery, []any{id}, func(rows rowScanner) error {
		var (
			g   string
			sp  storekit.SegmentSpan
			num int
		)
		if err := rows.Scan(&g, &sp.From, &sp.To, &num); err != nil {
			return err
		}
		st.Add(g, sp, num)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// encodeMissing is the fidelity_missing column of missing facts.
func encodeMissing(missing []string) (sql.NullString, error) {
	if len(missing) == 0 {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(missing)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// decodeMissing is the inverse of encodeMissing.
func decodeMissing(col sql.NullString) ([]string, error) {
	if !col.Valid {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(col.String), &out); err != nil {
		return nil, err
	}
	return out, nil
}
