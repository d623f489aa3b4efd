// Package textsearch is the text side of message search shared by the
// stores (history/memstore, history/sqlite, history/postgres) and anything
// else that ranks text the way they do: the words of a text, the stop words
// a query drops, the Porter stem ([Stem]), the ranking of candidate
// messages (how many of the query's words each holds, then bm25), the
// «marked» snippet and the opaque page cursor.
//
// A query is a question, not an expression: [ParseQuery] keeps its
// distinct content words (stop words dropped, stemmed) and nothing else, so
// any text is a valid query. The stores find candidate messages through
// their own index (FTS5, a tsvector, a word map) and then rank them here,
// so all three rank alike.
package textsearch

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
)

// MaxTerms bounds the distinct words of a query that count; the rest of a
// longer query is ignored.
const MaxTerms = 32

// MaxWordBytes is the longest word that is indexed or searched; longer
// runs of letters (encoded data, hashes) are cut to it.
const MaxWordBytes = 64

// Words calls fn with every word of s in order, lowercased: a word is a run
// of letters and digits (as SQLite's unicode61 tokenizer splits text), cut
// to MaxWordBytes. Invalid UTF-8 and NUL bytes separate words. Words stops
// when fn returns false.
func Words(s string, fn func(w string) bool) {
	scan(s, func(w string) bool { return fn(lower(w)) })
}

// wordByte tells the ASCII bytes that are part of a word.
var wordByte = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return t
}()

// scan is Words without the lowercasing.
func scan(s string, fn func(w string) bool) {
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		in, n := false, 1
		if c < utf8.RuneSelf {
			in = wordByte[c]
		} else {
			var r rune
			r, n = utf8.DecodeRuneInString(s[i:])
			in = r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || start >= 0 && unicode.Is(unicode.Mn, r))
		}
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			if !fn(cut(s[start:i])) {
				return
			}
			start = -1
		}
		i += n
	}
	if start >= 0 {
		fn(cut(s[start:]))
	}
}

// cut shortens w to at most MaxWordBytes, at a rune boundary.
func cut(w string) string {
	if len(w) <= MaxWordBytes {
		return w
	}
	w = w[:MaxWordBytes]
	for !utf8.ValidString(w) {
		w = w[:len(w)-1]
	}
	return w
}

// Joined is the words of s (see [Words]) joined by spaces: text an index
// with a tokenizer of its own (PostgreSQL's, which keeps "ledger.go" or a
// path as one token) splits into the same words.
func Joined(s string) string {
	var b strings.Builder
	Words(s, func(w string) bool {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		return true
	})
	return b.String()
}

// lower lowercases w, without allocating when it is lowercase ASCII.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// Term is the form a word (lowercase) is matched in: the Porter stem of
// its lemma ([Lemma]: "met" is matched as "meet").
func Term(word string) string { return Stem(Lemma(word)) }

// Query is a parsed search query.
type Query struct {
	// Terms are the distinct stems of the query's content words, in the
	// order they first occur, at most MaxTerms.
	Terms []string
	// Words[i] is the word Terms[i] came from (its first occurrence), for
	// an index that stems on its own side.
	Words []string
	// Forms[i] are the words such an index is asked for Terms[i]:
	// Words[i], and the lemma and irregular forms of the term ("meet",
	// "met"), each once.
	Forms [][]string
}

// ParseQuery returns the content words of text: every word of [Words] that
// is not a stop word, stemmed, each stem once. It never fails; a text with
// no content word gives a Query without Terms.
func ParseQuery(text string) Query {
	var q Query
	Words(text, func(w string) bool {
		if stopWords[w] {
			return true
		}
		t := Term(w)
		if !slices.Contains(q.Terms, t) {
			q.Terms = append(q.Terms, t)
			q.Words = append(q.Words, w)
			forms := []string{w}
			for _, f := range formsOf[t] {
				if f != w {
					forms = append(forms, f)
				}
			}
			q.Forms = append(q.Forms, forms)
		}
		return len(q.Terms) < MaxTerms
	})
	return q
}

// Key is a short fingerprint of the query's terms, which a Cursor carries
// so that a cursor of another query is refused.
func (q Query) Key() uint32 {
	h := fnv.New32a()
	for _, t := range q.Terms {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

// Doc is the searchable text of one message: its Text, the names and
// arguments of its tool calls, and the name of the tool it answers.
type Doc struct {
	Text string // Text, then each tool call as "name arguments" on a line
	Tool string // the tool a tool message answers; "" otherwise
}

// Stats is what the bm25 part of a score needs about the searched
// session's messages.
type Stats struct {
	N  int   // messages in the session
	DF []int // DF[i]: messages holding Terms[i]
}

// Estimate is the DF of a word whose newest found matches lie within the
// newest span of a session's n messages: found/span of them hold it there,
// and as many of the rest are taken to.
func Estimate(found, span, n int) int {
	if span <= 0 || found >= span {
		return max(found, n)
	}
	return max(found, int(float64(found)*float64(n)/float64(span)))
}

// TermHits are the messages an index found for one term of a query,
// newest first, by keys that grow with the message's age order (a seq, a
// rowid): all of them (Complete), or the newest ones only, every message
// newer than the last key holding the term being among them.
type TermHits struct {
	Keys     []int64
	Complete bool
}

// Gather asks an index for the candidates of q in a session of n messages,
// at most total in all: keys(word, limit) returns the keys of the newest
// messages holding word, newest first, at most limit; first is the key of
// the session's first message. Each term gets an equal share of total (at
// least 32); a term with more matches than its share keeps the newest of
// them, and its DF is estimated from how far back they reach ([Estimate]).
func Gather(q Query, n, total int, first int64, keys func(word string, limit int) ([]int64, error)) ([]TermHits, Stats, error) {
	per := max(32, total/max(1, len(q.Terms)))
	st := Stats{N: n, DF: make([]int, len(q.Terms))}
	lists := make([]TermHits, len(q.Terms))
	for i := range q.Terms {
		k, complete, err := union(q.forms(i), per, keys)
		if err != nil {
			return nil, Stats{}, err
		}
		lists[i] = TermHits{Keys: k, Complete: complete}
		st.DF[i] = len(k)
		if !complete && len(k) > 0 {
			st.DF[i] = Estimate(len(k), n-int(k[len(k)-1]-first), n)
		}
	}
	return lists, st, nil
}

// forms are the words of Forms[i], or Words[i] for a Query built without
// Forms.
func (q Query) forms(i int) []string {
	if i < len(q.Forms) {
		return q.Forms[i]
	}
	return q.Words[i : i+1]
}

// union asks keys for the newest per+1 messages holding each of words
// and returns the newest of all of them, at most per, newest first, and
// whether they are every message holding one of the words. A list that was
// cut holds every match newer than its last key; the union keeps the keys
// no older than the newest such cut, where every list is whole.
func union(words []string, per int, keys func(word string, limit int) ([]int64, error)) ([]int64, bool, error) {
	var all []int64
	complete, floor := true, int64(math.MinInt64)
	for _, w := range words {
		k, err := keys(w, per+1)
		if err != nil {
			return nil, false, err
		}
		if len(k) > per {
			complete = false
			k = k[:per]
			floor = max(floor, k[per-1])
		}
		if len(words) == 1 {
			return k, complete, nil
		}
		all = append(all, k...)
	}
	slices.SortFunc(all, func(a, b int64) int { return cmp.Compare(b, a) })
	all = slices.Compact(all)
	if i := slices.IndexFunc(all, func(k int64) bool { return k < floor }); i >= 0 {
		all = all[:i]
	}
	if len(all) > per {
		all, complete = all[:per], false
	}
	return all, complete, nil
}

// Prune returns the keys of the messages among lists (those of the terms
// of a query, in order, with the query's Stats) that can be among the need
// best by Cover (see [Rank]); the others are left out without being read.
// A message's Cover is at least the weight of the lists that hold it; it
// can be more only by the weights of the terms whose list is not Complete
// and whose last key is newer than the message. With fewer than need
// messages, all are kept.
func Prune(lists []TermHits, st Stats, need int) []int64 {
	w := weights(len(lists), st)
	total := 0
	for _, l := range lists {
		total += len(l.Keys)
	}
	lb := make(map[int64]float64, total)
	keys := make([]int64, 0, total)
	for i, l := range lists {
		for _, k := range l.Keys {
			if _, ok := lb[k]; !ok {
				keys = append(keys, k)
			}
			lb[k] += w[i]
		}
	}
	if len(keys) <= need {
		return keys
	}
	covers := make([]float64, 0, len(keys))
	for _, k := range keys {
		covers = append(covers, lb[k])
	}
	slices.Sort(covers)
	floor := covers[len(covers)-need] - tieRoom // the need-th largest lower bound
	out := keys[:0]
	for _, k := range keys {
		ub := lb[k]
		for i, l := range lists {
			if !l.Complete && len(l.Keys) > 0 && k < l.Keys[len(l.Keys)-1] {
				ub += w[i]
			}
		}
		if ub >= floor {
			out = append(out, k)
		}
	}
	return out
}

// idf is the bm25 idf of each of n terms with st.
func idf(n int, st Stats) []float64 {
	out := make([]float64, n)
	for i := range out {
		df := 1
		if i < len(st.DF) {
			df = max(st.DF[i], 1)
		}
		all := max(st.N, df)
		out[i] = math.Log(1 + (float64(all-df)+0.5)/(float64(df)+0.5))
	}
	return out
}

// weights are the idf of n terms with st as shares of their sum: a
// message's Cover is the sum of the weights of the terms it holds.
func weights(n int, st Stats) []float64 {
	w := idf(n, st)
	sum := 0.0
	for _, x := range w {
		sum += x
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// Ranked is a candidate with its score.
type Ranked struct {
	Index int // the candidate's index in the slice given to Rank
	// Cover is the evidence of the query's terms the message holds: the
	// sum of their idf (how rare each is in the session) as a share of the
	// idf of all the query's terms, in (0, 1]. One rare word outweighs
	// two that half the messages hold.
	Cover float64
	// Score is Cover plus, within tieRoom, the proximity of the matched
	// words and then the message's bm25: a message with more evidence
	// scores higher, and of two with the same terms, the one whose words
	// stand closer together.
	Score float64
}

// tieRoom bounds what proximity and bm25 add to a Cover: two Covers that
// differ by more are never reordered by them.
const tieRoom = 1e-3

// AvgWords is the message length, in words, bm25 weighs lengths against.
const AvgWords = 80

// The bm25 parameters (the usual ones, those of FTS5's bm25).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Rank scores docs against q and returns those that hold at least one of
// its terms, best first: by Cover, then by proximity (the shortest run of
// words holding every matched term once), then bm25, then the later
// candidate (order[i] larger) first. Document lengths are counted in words
// and weighed against AvgWords, a fixed length, so that a message's score
// does not depend on which other messages were candidates.
func Rank(q Query, docs []Doc, order []int64, st Stats) []Ranked {
	if len(q.Terms) == 0 {
		return nil
	}
	return rank(newMatcher(q.Terms), docs, order, st)
}

// rank is Rank with the matcher of the query's terms.
func rank(m *matcher, docs []Doc, order []int64, st Stats) []Ranked {
	terms := len(m.terms)
	w := weights(terms, st)
	idfs := idf(terms, st)
	avg := float64(AvgWords)
	tf := make([]int, 2*terms)
	tf, have := tf[:terms], tf[terms:]
	hits := make([]posTerm, 0, 64)
	var out []Ranked
	n := 0
	count := func(word string) bool {
		if i := m.match(word); i >= 0 {
			tf[i]++
			hits = append(hits, posTerm{n, i})
		}
		n++
		return true
	}
	for d := range docs {
		clear(tf)
		hits = hits[:0]
		n = 0
		scan(docs[d].Text, count)
		scan(docs[d].Tool, count)
		cover, bm, matched := 0.0, 0.0, 0
		for i, f := range tf {
			if f == 0 {
				continue
			}
			matched++
			cover += w[i]
			t := float64(f)
			bm += idfs[i] * t * (bm25K1 + 1) / (t + bm25K1*(1-bm25B+bm25B*float64(n)/avg))
		}
		if matched == 0 {
			continue
		}
		if out == nil {
			out = make([]Ranked, 0, len(docs)-d)
		}
		prox := float64(matched) / float64(span(hits, matched, have)) // 1: side by side
		out = append(out, Ranked{Index: d, Cover: cover, Score: min(cover, 1) + tieRoom*(0.9*prox+0.09*bm/(1+bm))})
	}
	slices.SortStableFunc(out, func(a, b Ranked) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case order[a.Index] > order[b.Index]:
			return -1
		case order[a.Index] < order[b.Index]:
			return 1
		}
		return 0
	})
	return out
}

// posTerm is a word of a document that matched term at word position pos.
type posTerm struct{ pos, term int }

// span returns the length in words of the shortest run of hits (in
// position order) that holds each of the matched distinct terms once;
// have, one count a term, is scratch space.
func span(hits []posTerm, matched int, have []int) int {
	if matched <= 1 {
		return 1
	}
	clear(have)
	best, distinct, lo := math.MaxInt, 0, 0
	for _, h := range hits {
		if have[h.term] == 0 {
			distinct++
		}
		have[h.term]++
		for distinct == matched {
			best = min(best, h.pos-hits[lo].pos+1)
			have[hits[lo].term]--
			if have[hits[lo].term] == 0 {
				distinct--
			}
			lo++
		}
	}
	return best
}

// matcher tells which term a word stems to without stemming most words: a
// Porter stem is the word with its end rewritten, and all of the stem but
// its last letter is a prefix of the word (the rewrites keep the letters
// before the suffix, and change at most the last one of those: "y" to
// "i", "biliti" to "ble"). A word whose start no term's prefix matches
// cannot stem to a term. A word that does is stemmed once: the matcher
// remembers the term of each such word it was asked about. A matcher is
// built once a query (by Page for its Rank and every Snippet) and used by
// one goroutine.
type matcher struct {
	terms  []string
	pre    []string       // pre[i]: terms[i] without its last letter (one letter at least)
	firsts [4]uint64      // the terms' first bytes, a bit each
	irr    map[string]int // irregular forms (lemmas) of the terms
	irrLen [2]int         // the shortest and longest of irr's forms, in bytes
	seen   map[string]int // words that start like a term: the term they stem to, or -1
	// volatile: the words matched now lie in scratch space, and are not
	// remembered in seen
	volatile bool
	buf      []byte // scratch for lowercasing and stemming a word
	text     []byte // scratch for a snippet's window of text
	word     [MaxWordBytes + 16]byte
}

// maxSeen bounds the words a matcher remembers.
const maxSeen = 1 << 12

func newMatcher(terms []string) *matcher {
	m := &matcher{terms: terms, pre: make([]string, len(terms))}
	m.buf = m.word[:0]
	for i, t := range terms {
		for _, f := range formsOf[t] {
			if Stem(f) != t { // a form the stem and prefix do not find
				if m.irr == nil {
					m.irr = map[string]int{}
					m.irrLen = [2]int{len(f), len(f)}
				}
				m.irr[f] = i
				m.irrLen = [2]int{min(m.irrLen[0], len(f)), max(m.irrLen[1], len(f))}
			}
		}
		m.pre[i] = t[:max(1, len(t)-1)]
		m.firsts[t[0]>>6] |= 1 << (t[0] & 63)
	}
	return m
}

// match returns the index of the term w, a word of scan (any case),
// stems to, or -1. It lowercases and stems only a word that starts like a
// term, and each such word once.
func (m *matcher) match(w string) int {
	if m.irr != nil {
		if i, ok := m.irregular(w); ok {
			return i
		}
	}
	c := w[0]
	if c >= utf8.RuneSelf {
		w = lower(w)
		c = w[0]
	} else if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	if m.firsts[c>>6]&(1<<(c&63)) == 0 {
		return -1
	}
	for i, t := range m.terms { // in the order of the terms: the first whose prefix w has decides
		if t[0] == c && prefixFold(w, m.pre[i]) {
			return m.stemmed(w)
		}
	}
	return -1
}

// irregular looks w (any case) up among the irregular forms of the terms.
func (m *matcher) irregular(w string) (int, bool) {
	if len(w) < m.irrLen[0] || len(w) > m.irrLen[1] { // lowercasing keeps an ASCII word's length
		for i := 0; i < len(w); i++ {
			if w[i] >= utf8.RuneSelf {
				i, ok := m.irr[lower(w)]
				return i, ok
			}
		}
		return 0, false
	}
	b, ascii := m.lowerASCII(w)
	if !ascii {
		i, ok := m.irr[lower(w)]
		return i, ok
	}
	i, ok := m.irr[string(b)]
	return i, ok
}

// stemmed returns the index of the term w stems to, or -1, as remembered
// for w or found and remembered now.
func (m *matcher) stemmed(w string) int {
	if i, ok := m.seen[w]; ok {
		return i
	}
	i := m.term(w)
	if m.volatile {
		return i
	}
	if m.seen == nil {
		m.seen = make(map[string]int, 64)
	}
	if len(m.seen) < maxSeen {
		m.seen[w] = i
	}
	return i
}

// term returns the index of Term(lower(w)) among the terms, or -1,
// stemming in m's scratch space when w is ASCII.
func (m *matcher) term(w string) int {
	b, ascii := m.lowerASCII(w)
	if !ascii {
		return slices.Index(m.terms, Term(lower(w)))
	}
	if l, ok := lemmas[string(b)]; ok {
		b = append(b[:0], l...)
	}
	if stemmable(b) {
		b = stem(b)
	}
	m.buf = b[:0]
	for i, t := range m.terms {
		if t == string(b) {
			return i
		}
	}
	return -1
}

// lowerASCII returns w lowercased in m's scratch space (valid until the
// next use of it), and true; or false when w is not ASCII.
func (m *matcher) lowerASCII(w string) ([]byte, bool) {
	b := m.buf[:0]
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			return nil, false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	m.buf = b[:0]
	return b, true
}

// prefixFold reports whether w starts with p, a lowercase string, ASCII
// letters compared without case.
func prefixFold(w, p string) bool {
	if len(w) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || p[i] >= utf8.RuneSelf {
			return strings.HasPrefix(lower(w), p)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// Snippet lengths, in runes.
const (
	snippetBefore = 60
	snippetLen    = 240
)

// Snippet returns an excerpt of text around its first word that matches a
// term of q, with every matching word in it marked «word», "…" where it is
// cut. With no matching word it is the start of text. White space runs
// become one space, NUL bytes are white space, and each run of invalid
// UTF-8 becomes one U+FFFD.
func Snippet(q Query, text string) string {
	return newMatcher(q.Terms).snippet(text)
}

// snippet is Snippet for m's terms. It reads text only around the first
// match: the excerpt is the same as if the whole text were made clean
// first (white space folded, NULs and invalid UTF-8 replaced), but only
// the window it comes from is.
func (m *matcher) snippet(text string) string {
	from := -1 // the first matching word, in text
	for i := 0; len(m.terms) > 0 && i < len(text); {
		w, j := nextWord(text, i)
		if w == j {
			break
		}
		if m.match(text[w:min(j, w+MaxWordBytes)]) >= 0 {
			from = w
			break
		}
		i = j
	}
	// The window [a, c) of text holds snippetBefore+1 runes of the clean
	// text before the match (or all there are), snippetLen+1 from it on,
	// and the whole word at its end: enough for the excerpt's start, its
	// end and a marked word the end would cut.
	a := max(from, 0)
	for k := 0; k <= snippetBefore && a > 0; {
		r, n := utf8.DecodeLastRuneInString(text[:a])
		if a -= n; solid(r, n) {
			k++
		}
	}
	c := max(from, 0)
	for k := 0; k <= snippetLen && c < len(text); {
		r, n := utf8.DecodeRuneInString(text[c:])
		if c += n; solid(r, n) {
			k++
		}
	}
	for c < len(text) {
		r, n := utf8.DecodeRuneInString(text[c:])
		if !inWord(r) {
			break
		}
		c += n
	}
	win, at, scratch := m.clean(text[a:c], from-a)
	more := c < len(text) && strings.TrimLeftFunc(text[c:], func(r rune) bool { return r == 0 || unicode.IsSpace(r) }) != ""
	start := 0
	if from >= 0 {
		start = at
		for k := 0; k < snippetBefore && start > 0; k++ {
			_, n := utf8.DecodeLastRuneInString(win[:start])
			start -= n
		}
		if start > 0 { // begin at a word boundary
			if sp := strings.IndexByte(win[start:at], ' '); sp >= 0 {
				start += sp + 1
			}
		}
	}
	end := start
	for k := 0; k < snippetLen && end < len(win); k++ {
		_, n := utf8.DecodeRuneInString(win[end:])
		end += n
	}
	var b strings.Builder
	b.Grow(end - start + 2*len("…") + 8*len("«»"))
	if start > 0 {
		b.WriteString("…")
	}
	done := start
	m.volatile = scratch // a word of win is then no key for m.seen
	for i := at; from >= 0 && i < end; {
		w, j := nextWord(win, i)
		if w == j || w >= end {
			break
		}
		if m.match(win[w:min(j, w+MaxWordBytes)]) >= 0 {
			b.WriteString(win[done:w])
			b.WriteString("«")
			b.WriteString(win[w:j])
			b.WriteString("»")
			done = j
			end = max(end, j) // a marked word is never cut
		}
		i = j
	}
	m.volatile = false
	b.WriteString(win[done:end])
	if end < len(win) || more {
		b.WriteString("…")
	}
	return b.String()
}

// solid reports whether the rune r, n bytes of text, stays one rune of
// the clean text (see [matcher.clean]): valid, not white space, not NUL.
func solid(r rune, n int) bool {
	if r < utf8.RuneSelf {
		return r != 0 && r != ' ' && !asciiSpace[r]
	}
	return !(r == utf8.RuneError && n == 1) && !unicode.IsSpace(r)
}

// inWord reports whether r continues a word of nextWord.
func inWord(r rune) bool {
	if r < utf8.RuneSelf {
		return wordByte[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// nextWord returns the first word of s at or after byte i as s[from:to],
// or from == to when there is none: a letter or digit and the letters,
// digits and nonspacing marks after it. Unlike scan it does not cut the
// word to MaxWordBytes.
func nextWord(s string, i int) (from, to int) {
	for i < len(s) {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if r < utf8.RuneSelf && wordByte[r] || r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			break
		}
		i += n
	}
	j := i
	for j < len(s) {
		r, n := rune(s[j]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[j:])
		}
		if !inWord(r) {
			break
		}
		j += n
	}
	return i, j
}

// clean returns s with every run of white space (NUL bytes included) one
// space, none at either end, and every run of invalid UTF-8 one U+FFFD,
// as strings.Fields and ToValidUTF8 make it; and where byte at of s (the
// start of a rune that is not white space; or negative) is in it. It is s
// itself when s is clean already; otherwise it is built in m's scratch
// space (scratch true), valid until the next call.
func (m *matcher) clean(s string, at int) (clean string, pos int, scratch bool) {
	if isClean(s) {
		return s, at, false
	}
	if cap(m.text) < len(s)+len(s)/2 {
		m.text = make([]byte, 0, len(s)+len(s)/2) // room for many an invalid byte's U+FFFD
	}
	b, space, invalid := m.text[:0], false, false
	pos = -1
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			if !invalid {
				if space && len(b) > 0 {
					b = append(b, ' ')
				}
				b = append(b, "\uFFFD"...)
			}
			space, invalid = false, true
		case r == 0 || unicode.IsSpace(r):
			space, invalid = true, false
		default:
			if space && len(b) > 0 {
				b = append(b, ' ')
			}
			if i == at {
				pos = len(b)
			}
			b = append(b, s[i:i+n]...)
			space, invalid = false, false
		}
		i += n
	}
	m.text = b
	return unsafe.String(unsafe.SliceData(b), len(b)), pos, true
}

// isClean reports whether clean would return s as it is.
func isClean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 || unicode.IsSpace(r) {
				return false
			}
			i += n
			continue
		}
		if c == ' ' {
			if i == 0 || i == len(s)-1 || s[i+1] == ' ' {
				return false
			}
		} else if c == 0 || asciiSpace[c] {
			return false
		}
		i++
	}
	return true
}

// asciiSpace tells the ASCII white space bytes but the space itself.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true}

// Cursor is the opaque SearchPage.Next of the page after offset hits of
// query q.
func Cursor(q Query, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("s1." + strconv.FormatUint(uint64(q.Key()), 16) + "." + strconv.Itoa(offset)))
}

// ParseCursor returns the offset a Cursor of q holds: 0 for "", an error
// for anything Cursor did not make for the same query's words. The error
// does not wrap history.ErrInvalid; the caller wraps it.
func ParseCursor(q Query, cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, fmt.Errorf("malformed search cursor %q", cursor)
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 || parts[0] != "s1" {
		return 0, fmt.Errorf("malformed search cursor %q", cursor)
	}
	key, err := strconv.ParseUint(parts[1], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("malformed search cursor %q", cursor)
	}
	if uint32(key) != q.Key() {
		return 0, fmt.Errorf("search cursor %q belongs to another query", cursor)
	}
	off, err := strconv.Atoi(parts[2])
	if err != nil || off < 1 {
		return 0, fmt.Errorf("malformed search cursor %q", cursor)
	}
	return off, nil
}

// DocOf is the searchable text of m, which answers the tool named tool
// ("" for none).
//
// A message's text comes first; then its tool calls as "name arguments"
// lines, and its attachments as lines of their name, URI and text (the
// description of a link, the contents of a resource); an image's bytes
// are never indexed.
func DocOf(m *history.Message, tool string) Doc {
	return Doc{Text: history.SearchText(m), Tool: tool}
}

// ToolName returns the name of the call a tool message at index i of msgs
// answers: the call with its ToolCallID in the nearest assistant message
// before it, looking back at most ToolLookback messages; "" when none is
// found (or msgs[i] is no tool message). before, if not nil, is asked for
// calls that msgs does not reach back to: it reads older messages, newest
// first, and reports false when there are none.
func ToolName(msgs []history.Message, i int, before func(fn func(m *history.Message) bool)) string {
	m := &msgs[i]
	if m.Role != history.RoleTool {
		return ""
	}
	name, looked := "", 0
	find := func(a *history.Message) bool {
		looked++
		if a.Role == history.RoleAssistant {
			for _, c := range a.ToolCalls {
				if c.ID == m.ToolCallID {
					name = c.Name
					return false
				}
			}
		}
		return looked < ToolLookback
	}
	for j := i - 1; j >= 0; j-- {
		if !find(&msgs[j]) {
			return name
		}
	}
	if before != nil {
		before(find)
	}
	return name
}

// ToolLookback is how many messages before a tool message [ToolName]
// searches for the call it answers.
const ToolLookback = 256

// Request checks a search query's Limit, Neighbors and Cursor and parses its text:
// it returns the query, the offset of the requested page and its limit,
// or an error wrapping history.ErrInvalid.
func Request(sq history.SearchQuery) (q Query, offset, limit int, err error) {
	switch {
	case sq.Limit < 0:
		return q, 0, 0, fmt.Errorf("%w: search limit %d is negative", history.ErrInvalid, sq.Limit)
	case sq.Neighbors < 0 || sq.Neighbors > history.MaxNeighbors:
		return q, 0, 0, fmt.Errorf("%w: search Neighbors %d is outside 0..%d", history.ErrInvalid, sq.Neighbors, history.MaxNeighbors)
	case sq.Limit == 0:
		limit = history.DefaultSearchLimit
	default:
		limit = min(sq.Limit, history.MaxSearchLimit)
	}
	q = ParseQuery(sq.Text)
	if offset, err = ParseCursor(q, sq.Cursor); err != nil {
		return q, 0, 0, fmt.Errorf("%w: %v", history.ErrInvalid, err)
	}
	return q, offset, limit, nil
}

// Candidate is a message a store's index found for a query.
type Candidate struct {
	Message   history.Message
	Position  int64
	SegmentID string // "" while Active
	// Compaction is the number of the compaction that archived the
	// message (history.SearchHit.Compaction), 0 while Active.
	Compaction int
	ToolName   string
}

// Need is how many of the best candidates a page of limit hits from
// offset on, with n neighbours a hit, may use (see [Prune]): every hit of
// the page can take up to 2n lower ones as its neighbours.
func Need(offset, limit, n int) int { return offset + limit*(2*n+1) + 1 }

// Page ranks the candidates (see [Rank]) and returns the page of limit
// hits from offset on, each with the n messages on each side of it that
// read returns (see [history.SearchHit.Neighbors]; read is not called for
// n = 0). The hits are served best first; a message already on the page
// (a hit, or a neighbour of a better hit) is not returned again, and a
// candidate that is already a neighbour of a better hit is not a hit of
// its own: the page then takes the next candidate, so that it still holds
// limit hits while there are any.
func Page(q Query, offset, limit, n int, cands []Candidate, st Stats, read Around) (history.SearchPage, error) {
	docs := make([]Doc, len(cands))
	order := make([]int64, len(cands))
	for i := range cands {
		docs[i] = DocOf(&cands[i].Message, cands[i].ToolName)
		order[i] = cands[i].Position
	}
	var ranked []Ranked
	m := newMatcher(q.Terms) // for Rank and every Snippet
	if len(q.Terms) > 0 {
		ranked = rank(m, docs, order, st)
	}
	page := history.SearchPage{Hits: make([]history.SearchHit, 0, max(0, min(limit, len(ranked)-offset)))}
	var taken map[int64]bool // the page's messages, by position
	if n > 0 {
		taken = make(map[int64]bool, min(limit, len(ranked))*(2*n+1))
	}
	end := offset
	for ; end < len(ranked) && len(page.Hits) < limit; end++ {
		r := ranked[end]
		c := &cands[r.Index]
		if taken[c.Position] {
			continue // a neighbour of a better hit
		}
		h := history.SearchHit{
			MessageID:  c.Message.ID,
			SegmentID:  c.SegmentID,
			Compaction: c.Compaction,
			Position:   c.Position,
			Role:       c.Message.Role,
			ToolName:   c.ToolName,
			Snippet:    m.snippet(docs[r.Index].Text),
			Score:      r.Score,
		}
		if n > 0 {
			taken[c.Position] = true
			if err := neighbors(&h, n, taken, read); err != nil {
				return history.SearchPage{}, err
			}
		}
		page.Hits = append(page.Hits, h)
	}
	if end < len(ranked) {
		page.Next = Cursor(q, end)
	}
	return page, nil
}

// Around reads the neighbours of a hit for [Page]: at most limit messages
// of the session before position pos, newest first (after false), or
// after it, oldest first (after true).
type Around func(pos int64, limit int, after bool) ([]history.WindowMessage, error)

// neighbors sets h's Neighbors to the n messages on each side of it that
// read returns, less those taken already, and takes them.
func neighbors(h *history.SearchHit, n int, taken map[int64]bool, read Around) error {
	before, err := read(h.Position, n, false)
	if err != nil {
		return err
	}
	after, err := read(h.Position, n, true)
	if err != nil {
		return err
	}
	for j := len(before) - 1; j >= 0; j-- {
		if w := &before[j]; !taken[w.Position] {
			taken[w.Position] = true
			h.Neighbors = append(h.Neighbors, w.Message)
			h.NeighborsBefore++
		}
	}
	for j := range after {
		if w := &after[j]; !taken[w.Position] {
			taken[w.Position] = true
			h.Neighbors = append(h.Neighbors, w.Message)
		}
	}
	return nil
}

// Place sets the SegmentID and Compaction of each candidate from its
// position (see [segments.Standing.At]).
func Place(cands []Candidate, activeFrom int64, standing *segments.Standing) {
	for i := range cands {
		cands[i].SegmentID, cands[i].Compaction = standing.At(cands[i].Position, activeFrom)
	}
}
