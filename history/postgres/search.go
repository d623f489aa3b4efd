package postgres

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Search (docs/storage.md, "Search"). Every message row holds its words as
// a tsvector (column search, 'english' configuration, GIN index) and the
// name of the tool a tool result answers (tool_name), both written by the
// INSERT of the Append that stores the message. A commit or an undo writes
// nothing to them: which Segment holds a message follows from its position
// and the standing Segments' spans, read when searching.
//
// The same INSERT writes the message's postings (migration 18): one row
// of the postings table per lexeme of its tsvector, keyed by (session_id,
// word, seq), so that a word's newest messages are one backward range scan
// of that key away. The GIN index cannot give them: it reads a word's whole
// posting list (10-17 ms for a word of 1 to 5% of 1,000,000 messages),
// and a backward scan of messages_seq that filters on the tsvector reads
// every newer message without the word.
//
// Search asks, for each content word of the query, for the newest of the
// session's messages whose tsvector matches the word, at most
// maxCandidates in all: from the postings for a word that is one lexeme
// (lexemes), as plainto_tsquery would make it, which is the same set of
// messages; with plainto_tsquery on the GIN index for a word of several
// (any text is a valid query); none for a word of none. It reads them and
// ranks them with history/internal/textsearch, as the other stores rank theirs (a
// word held by more messages than its share has its message count
// estimated, textsearch.Estimate).

// maxCandidates bounds the messages one search reads and ranks.
const maxCandidates = 512

// indexText is s as PostgreSQL text takes it: invalid UTF-8 and NUL bytes
// become spaces (a query word is letters and digits already; this is the
// guard).
func indexText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, " "), "\x00", " ")
}

// searchDocs returns, for msgs about to be appended after the state st,
// the tool each answers (textsearch.ToolName) and the text to_tsvector
// indexes: the words of the message as history/internal/textsearch splits them
// (Joined), so that PostgreSQL's parser finds the same words (on its own it
// keeps "ledger.go" or a path as one token).
func (s *Store) searchDocs(ctx context.Context, tx pgx.Tx, id string, st *state, msgs []history.Message) (tools [][]byte, docs []string, err error) {
	tools, docs = make([][]byte, len(msgs)), make([]string, len(msgs))
	before := func(fn func(m *history.Message) bool) {
		if err != nil {
			return
		}
		var older []history.Message
		if st.forked { // along the chain (chain.go)
			var c chain
			if c, err = s.chainOf(ctx, tx, "append", id); err != nil {
				return
			}
			var win []history.WindowMessage
			win, err = s.chainWindow(ctx, tx, c, st.nextPos, textsearch.ToolLookback, false)
			for _, w := range win {
				older = append(older, w.Message)
			}
		} else {
			_, older, err = s.messages(ctx, tx, "append", `WHERE session_id = $1 AND pos < $2 ORDER BY pos DESC LIMIT $3`, bin(id), st.nextPos, textsearch.ToolLookback)
		}
		for i := range older {
			if !fn(&older[i]) {
				return
			}
		}
	}
	for i := range msgs {
		tool := textsearch.ToolName(msgs, i, before)
		if err != nil {
			return nil, nil, err
		}
		doc := textsearch.DocOf(&msgs[i], tool)
		tools[i], docs[i] = bin(tool), textsearch.Joined(doc.Text+"\n"+doc.Tool)
	}
	return tools, docs, nil
}

// Search implements [history.Reader]; see the comment at the top of
// search.go for how.
func (s *Store) Search(ctx context.Context, id string, sq history.SearchQuery) (history.SearchPage, error) {
	const op = "search"
	q, offset, limit, err := textsearch.Request(sq)
	if err != nil {
		return history.SearchPage{}, err
	}
	var page history.SearchPage
	err = s.read(ctx, op, id, func(tx pgx.Tx) error {
		var (
			activeFrom, count int64
			forked            bool
		)
		err := tx.QueryRow(ctx, `SELECT active_from, message_count, fork_of IS NOT NULL FROM sessions WHERE id = $1`, bin(id)).Scan(&activeFrom, &count, &forked)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		if len(q.Terms) == 0 {
			page = history.SearchPage{Hits: []history.SearchHit{}}
			return nil
		}
		stmts, err := s.searchStatements(ctx, tx, op, id, forked)
		if err != nil {
			return err
		}
		c := stmts.chain
		lex, err := s.lexemes(ctx, tx, op, q)
		if err != nil {
			return err
		}
		lists, st, err := textsearch.Gather(q, int(count), maxCandidates, 0, func(word string, limit int) ([]int64, error) {
			l, asked := lex[word]
			return s.wordKeys(ctx, tx, op, &stmts, id, word, l, asked, limit)
		})
		if err != nil {
			return err
		}
		seqs := textsearch.Prune(lists, st, textsearch.Need(offset, limit, sq.Neighbors))
		var cands []textsearch.Candidate
		if len(seqs) > 0 {
			if cands, err = s.candidates(ctx, tx, op, stmts.cands, append([]any{stmts.chainArgs[0], seqs}, stmts.chainArgs[1:]...)); err != nil {
				return err
			}
		}
		standing, err := s.standing(ctx, tx, op, id)
		if err != nil {
			return err
		}
		textsearch.Place(cands, activeFrom, standing)
		page, err = textsearch.Page(q, offset, limit, sq.Neighbors, cands, st, func(pos int64, limit int, after bool) ([]history.WindowMessage, error) {
			if c != nil {
				if after {
					return s.chainWindow(ctx, tx, c, pos+1, limit, true)
				}
				return s.chainWindow(ctx, tx, c, pos, limit, false)
			}
			where := `pos < $2 ORDER BY pos DESC`
			if after {
				where = `pos > $2 ORDER BY pos`
			}
			return s.windowRange(ctx, tx, where, id, pos, limit)
		})
		return err
	})
	if err != nil {
		return history.SearchPage{}, err
	}
	return page, nil
}

// searchSQL is what a search of one session or fork reads with: the
// statements of its per-word keys (by the search column or by the
// postings) and of its candidates, each over a fork's chain of ranges of
// message numbers, newest link first.
type searchSQL struct {
	keys, postings, cands string
	chain                 chain // a fork's chain (chain.go); nil for a session of its own
	chainArgs             []any // the candidates' statement's arguments besides the numbers
}

// searchStatements returns the statements that search session id (a
// fork when forked) reads with.
func (s *Store) searchStatements(ctx context.Context, tx pgx.Tx, op, id string, forked bool) (searchSQL, error) {
	if !forked {
		return searchSQL{
			keys:      `SELECT seq FROM messages WHERE session_id = $1 AND search @@ plainto_tsquery('english', $2) ORDER BY seq DESC LIMIT $3`,
			postings:  `SELECT seq FROM postings WHERE session_id = $1 AND word = $2 ORDER BY seq DESC LIMIT $3`,
			cands:     `SELECT ` + messageColumns + `, tool_name FROM messages WHERE session_id = $1 AND seq = ANY($2)`,
			chainArgs: []any{bin(id)},
		}, nil
	}
	c, err := s.chainOf(ctx, tx, op, id)
	if err != nil {
		return searchSQL{}, err
	}
	// Planned for each link's own numbers every time: a generic plan of
	// the keys' statement (which PostgreSQL picks after five runs, its
	// range estimated at a few rows) ANDs a bitmap of the whole range with
	// the word's, 1.3 s against 0.5 ms at 100,000 messages.
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return searchSQL{}, s.fail(ctx, op, err)
	}
	keys, los, his := c.seqs()
	return searchSQL{
		keys: `SELECT seq FROM messages WHERE session_id = $1 AND seq >= $4 AND seq < $5
			AND search @@ plainto_tsquery('english', $2) ORDER BY seq DESC LIMIT $3`,
		postings: `SELECT seq FROM postings WHERE session_id = $1 AND word = $2 AND seq >= $4 AND seq < $5 ORDER BY seq DESC LIMIT $3`,
		cands: `SELECT m.* FROM unnest($1::bytea[], $3::bigint[], $4::bigint[]) AS c (id, lo, hi) CROSS JOIN LATERAL (SELECT ` + messageColumns + `, tool_name FROM messages
			WHERE session_id = c.id AND seq >= c.lo AND seq < c.hi AND seq = ANY($2)) m`,
		chain:     c,
		chainArgs: []any{keys, los, his},
	}, nil
}

// wordKeys returns the numbers of the newest limit messages that hold
// word (whose lexemes are lex, when the index was asked for them), newest
// first: through its postings when it is one lexeme, else through the
// search column.
func (s *Store) wordKeys(ctx context.Context, tx pgx.Tx, op string, q *searchSQL, id, word string, lex []string, asked bool, limit int) ([]int64, error) {
	var keys []int64
	query, arg := q.keys, indexText(word)
	if asked {
		switch len(lex) {
		case 0: // no lexeme (a stop word of 'english'): matches nothing
			return nil, nil
		case 1: // its postings, newest first
			query, arg = q.postings, lex[0]
		}
	}
	scan := func(rows pgx.Rows) error {
		var seq int64
		err := rows.Scan(&seq)
		if len(keys) < limit {
			keys = append(keys, seq)
		}
		return err
	}
	c := q.chain
	if c == nil {
		return keys, s.each(ctx, tx, op, query, []any{bin(id), arg, limit}, scan)
	}
	// One statement a link, newest first, in one batch: each planned for
	// its own range of numbers (a LATERAL join over the links is planned
	// for none, and ANDs a bitmap of the range's numbers, 680 ms against
	// 9 ms).
	b := &pgx.Batch{}
	for i := range c {
		b.Queue(query, c[i].key, arg, limit, c[i].seqLo, c[i].seqHi)
	}
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	for range c {
		if err := s.eachOf(ctx, op, func() (pgx.Rows, error) { return br.Query() }, scan); err != nil {
			return nil, err
		}
	}
	return keys, br.Close()
}

// lexemes returns, for each word an index is asked for q (its Words and
// Forms), the lexemes of 'english' it stands for, as plainto_tsquery
// would make them: a word of one lexeme matches exactly the messages
// whose postings hold it; one of none matches nothing.
func (s *Store) lexemes(ctx context.Context, tx pgx.Tx, op string, q textsearch.Query) (map[string][]string, error) {
	var words []string
	for i := range q.Terms {
		words = append(words, q.Words[i])
		if i < len(q.Forms) {
			words = append(words, q.Forms[i]...)
		}
	}
	texts := make([]string, len(words))
	for i, w := range words {
		texts[i] = indexText(w)
	}
	out := make(map[string][]string, len(words))
	i := 0
	err := s.each(ctx, tx, op, `SELECT tsvector_to_array(to_tsvector('english', w)) FROM unnest($1::text[]) WITH ORDINALITY AS u (w, o) ORDER BY o`,
		[]any{texts}, func(rows pgx.Rows) error {
			var l []string
			err := rows.Scan(&l)
			if i < len(words) {
				out[words[i]] = l
			}
			i++
			return err
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// candidates reads the messages of a search's candidates (query, with
// args, reads their rows and tool names, as scanWindow scans them).
func (s *Store) candidates(ctx context.Context, tx pgx.Tx, op, query string, args []any) ([]textsearch.Candidate, error) {
	return sqlstore.Collect(func(scan func(pgx.Rows) error) error { return s.each(ctx, tx, op, query, args, scan) },
		func(rows pgx.Rows) (textsearch.Candidate, error) {
			w, err := scanWindow(rows)
			return textsearch.Candidate(w), err
		})
}

// standing reads the session's standing Segments with their compaction
// numbers (segments.StandingQuery).
func (s *Store) standing(ctx context.Context, tx pgx.Tx, op, id string) (*segments.Standing, error) {
	var st segments.Standing
	err := s.each(ctx, tx, op, segments.StandingQuery, []any{bin(id)}, func(rows pgx.Rows) error {
		var (
			g   []byte
			sp  storekit.SegmentSpan
			num int
		)
		if err := rows.Scan(&g, &sp.From, &sp.To, &num); err != nil {
			return err
		}
		st.Add(string(g), sp, num)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// encodeMissing is the fidelity_missing column: NULL for none.
func encodeMissing(missing []string) [][]byte {
	if len(missing) == 0 {
		return nil
	}
	out := make([][]byte, len(missing))
	for i, m := range missing {
		out[i] = bin(m)
	}
	return out
}

// decodeMissing is the inverse of encodeMissing.
func decodeMissing(col [][]byte) []string {
	if len(col) == 0 {
		return nil
	}
	out := make([]string, len(col))
	for i, b := range col {
		out[i] = string(b)
	}
	return out
}
