package textsearch_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/internal/textsearch"
)

// workload is what a store hands textsearch for each of a set of queries
// over historytest.SearchCorpus: the query, its term lists (Gather, from a
// word index of the corpus, at the stores' bound of 512 candidates), its
// Stats and the candidates Prune keeps for a page of 10 hits with one
// neighbour on each side (147 a query on average).
type workload struct {
	msgs    []history.Message
	tools   []string
	queries []textsearch.Query
	lists   [][]textsearch.TermHits
	stats   []textsearch.Stats
	cands   [][]textsearch.Candidate
}

var (
	workloadOnce sync.Once
	theWorkload  *workload
)

// corpusWorkload is the workload of 200 queries over 20,000 messages,
// built once.
func corpusWorkload() *workload {
	workloadOnce.Do(func() { theWorkload = newWorkload(20_000, 200) })
	return theWorkload
}

func newWorkload(n, queries int) *workload {
	w := &workload{msgs: historytest.SearchCorpus(n, 1), tools: make([]string, n)}
	index := map[string][]int64{} // term: positions holding it, newest first
	for i := n - 1; i >= 0; i-- {
		w.tools[i] = textsearch.ToolName(w.msgs, i, nil)
		d := textsearch.DocOf(&w.msgs[i], w.tools[i])
		seen := map[string]bool{}
		for _, s := range []string{d.Text, d.Tool} {
			textsearch.Words(s, func(word string) bool {
				if t := textsearch.Term(word); !seen[t] {
					seen[t] = true
					index[t] = append(index[t], int64(i))
				}
				return true
			})
		}
	}
	keys := func(word string, limit int) ([]int64, error) {
		k := index[textsearch.Term(word)]
		return k[:min(limit, len(k))], nil
	}
	for _, text := range historytest.SearchQueries(w.msgs, queries, 2) {
		q := textsearch.ParseQuery(text)
		lists, st, err := textsearch.Gather(q, n, 512, 0, keys)
		if err != nil {
			panic(err)
		}
		var cands []textsearch.Candidate
		for _, k := range textsearch.Prune(lists, st, textsearch.Need(0, 10, 1)) {
			cands = append(cands, textsearch.Candidate{Message: w.msgs[k], Position: k, ToolName: w.tools[k]})
		}
		w.queries = append(w.queries, q)
		w.lists = append(w.lists, lists)
		w.stats = append(w.stats, st)
		w.cands = append(w.cands, cands)
	}
	return w
}

// around reads the neighbours of a position from the corpus, as a store's
// textsearch.Around does.
func (w *workload) around(pos int64, limit int, after bool) ([]history.WindowMessage, error) {
	var out []history.WindowMessage
	for p, step := pos, int64(-1); len(out) < limit; {
		if after {
			step = 1
		}
		p += step
		if p < 0 || p >= int64(len(w.msgs)) {
			break
		}
		out = append(out, history.WindowMessage{Message: w.msgs[p], Position: p})
	}
	return out, nil
}

// pinned are the SHA-256 of what textsearch returned for the workload and
// the edge texts (see TestResultsPinned), computed with the code as it was
// before one matcher was shared by a query's Rank and Snippets and Snippet
// read only a window: the same hits, order, scores and snippets since.
var pinned = map[string]string{
	"prune":        "7a9e42377ae05fd643b471f39b59a367c7f5dc79399ed54bf7562cc8f031953c",
	"rank":         "7a59533b99f16445fb162f3ad8f908e79a3d73123d556521c278e66f8a273a04",
	"page":         "3752b0cce10ea330804b5ead065669f4f5988e7711a0204000eecd11fe8e720e",
	"snippet":      "ec223a98efe26f12b5b8d2377bcb3d2b25a37b9ca66b8e27b35d7d3926aedf56",
	"edge snippet": "9e25c4e879733fb799572868eb6527632a0ab0538d0c8f8f005e2ebe767aa571",
	"edge rank":    "6f83342387c6aea087db1cb5262f7186022091f52df028351ec3e412e5b2b81c",
}

// TestResultsPinned: Prune, Rank, Page (with and without neighbours, and
// its next page) and Snippet return what they returned before they were
// made to allocate less, to the bit of every score, for 200 corpus queries
// (each candidate's snippet, not only the hits') and for edge texts: NUL
// bytes, invalid UTF-8, runs of white space of every kind, tabs and
// newlines, matches at the very start and end of long texts, multibyte
// letters and combining marks, words over MaxWordBytes, irregular forms,
// no match at all.
func TestResultsPinned(t *testing.T) {
	w := corpusWorkload()
	sums := map[string]hash.Hash{}
	out := func(section string, format string, args ...any) {
		h := sums[section]
		if h == nil {
			h = sha256.New()
			sums[section] = h
		}
		fmt.Fprintf(h, format, args...)
	}
	for qi, q := range w.queries {
		out("prune", "%d %v\n", qi, textsearch.Prune(w.lists[qi], w.stats[qi], textsearch.Need(0, 10, 1)))
		out("prune", "%d %v\n", qi, textsearch.Prune(w.lists[qi], w.stats[qi], textsearch.Need(0, 10, 0)))
		cands := w.cands[qi]
		docs := make([]textsearch.Doc, len(cands))
		order := make([]int64, len(cands))
		for i := range cands {
			docs[i], order[i] = textsearch.DocOf(&cands[i].Message, cands[i].ToolName), cands[i].Position
		}
		for _, r := range textsearch.Rank(q, docs, order, w.stats[qi]) {
			out("rank", "%d %d %x %x\n", qi, r.Index, math.Float64bits(r.Cover), math.Float64bits(r.Score))
		}
		for _, n := range []int{0, 1} {
			p, err := textsearch.Page(q, 0, 10, n, cands, w.stats[qi], w.around)
			if err != nil {
				t.Fatal(err)
			}
			off, err := textsearch.ParseCursor(q, p.Next)
			if err != nil {
				t.Fatal(err)
			}
			next, err := textsearch.Page(q, off, 10, n, cands, w.stats[qi], w.around)
			if err != nil {
				t.Fatal(err)
			}
			for _, page := range []history.SearchPage{p, next} {
				out("page", "%d %d next %q\n", qi, n, page.Next)
				for _, h := range page.Hits {
					out("page", "%s %d %s %s %q %x %d", h.MessageID, h.Position, h.Role, h.ToolName, h.Snippet, math.Float64bits(h.Score), h.NeighborsBefore)
					for _, m := range h.Neighbors {
						out("page", " %s", m.ID)
					}
					out("page", "\n")
				}
			}
		}
		for _, d := range docs {
			out("snippet", "%q\n", textsearch.Snippet(q, d.Text))
		}
	}
	queries, texts := edgeCases()
	for qi, text := range queries {
		q := textsearch.ParseQuery(text)
		docs := make([]textsearch.Doc, len(texts))
		order := make([]int64, len(texts))
		for i, s := range texts {
			out("edge snippet", "%d %d %q\n", qi, i, textsearch.Snippet(q, s))
			docs[i], order[i] = textsearch.Doc{Text: s, Tool: texts[(i+1)%len(texts)][:min(20, len(texts[(i+1)%len(texts)]))]}, int64(i%7)
		}
		st := textsearch.Stats{N: 100, DF: make([]int, len(q.Terms))}
		for i := range st.DF {
			st.DF[i] = 1 + (qi+i*13)%60
		}
		for _, r := range textsearch.Rank(q, docs, order, st) {
			out("edge rank", "%d %d %x %x\n", qi, r.Index, math.Float64bits(r.Cover), math.Float64bits(r.Score))
		}
	}
	for section, want := range pinned {
		got := hex.EncodeToString(sums[section].Sum(nil))
		if got != want {
			t.Errorf("%s: results hash %s, pinned %s", section, got, want)
		}
	}
}

// edgeCases returns queries and texts that reach the corners of Snippet
// and Rank: see TestResultsPinned.
func edgeCases() (queries, texts []string) {
	queries = []string{
		"rounding ledger", "When did Evan meet his wife?", "children bought", "Parsing config",
		"éte café", "Жизнь", "naïve resume", "日本", "kept running", "x", "the of and", "",
		"PARSERS migrations timeouts", strings.Repeat("ab", 40), "ﬁle", "Kelvin",
	}
	words := []string{
		"rounding", "Rounded", "LEDGER", "ledgers", "met", "MET", "meeting", "Evan", "wife's", "wives",
		"children", "Child", "bought", "buying", "parse", "Parsed", "parser", "config", "configs", "configuration",
		"café", "CAFÉ", "éte", "Été", "жизнь", "ЖИЗНЬ", "nai\u0308ve", "naïve", "résumé", "resume", "日本", "日本語",
		"\u212Aept", "kept", "KEEP", "running", "ran", "x", "X1", "ﬁle", "file", "kelvin", "\u212Aelvin",
		"migration", "Migrations", "timeout", "timeouts", strings.Repeat("ab", 40), strings.Repeat("é", 40),
		"the", "of", "and", "a", "42", "v1.2.3", "ledger.go", "/path/to/parser_test.go", "\u0301x", "\uFFFD",
	}
	seps := []string{
		" ", " ", " ", " ", "  ", "\t", "\n", "\r\n", " \t ", "\x00", "\x00\x00", "\xff", "\xff\xfe", "\xe2\x82",
		"\u00a0", "\u2003", "\u3000", "\u0085", "\v\f", ", ", ". ", " - ", "\xc3", " \x00 \xff ",
	}
	r := rand.New(rand.NewPCG(43, 44))
	text := func(n int) string {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString(seps[r.IntN(len(seps))])
		}
		for i := range n {
			if i > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			if r.IntN(3) == 0 {
				b.WriteString(words[r.IntN(len(words))])
			} else {
				b.WriteString(fmt.Sprintf("w%c%d", 'a'+rune(r.IntN(26)), r.IntN(100)))
			}
		}
		if r.IntN(4) == 0 {
			b.WriteString(seps[r.IntN(len(seps))])
		}
		return b.String()
	}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 20)
	texts = []string{
		"", " ", "\x00", "\xff", "ledger", " ledger ", "\x00ledger\x00", "rounding ledger",
		filler + "ledger", "ledger " + filler, filler + "ledger" + filler, filler + "\t\t ledger \n\n" + filler,
		strings.ReplaceAll(filler, " ", "\x00") + "ledger", strings.ReplaceAll(filler, " ", "  \t") + "ledger  " + filler,
		strings.ReplaceAll(filler, " ", "\xff") + "ledger\xff" + filler, strings.Repeat("日本語 ", 100) + "ledger " + strings.Repeat("日本語 ", 100),
		strings.Repeat("é", 100) + " ledger " + strings.Repeat("ж", 300), filler + strings.Repeat("x", 300) + " ledger",
		filler[:200] + "ledger" + strings.Repeat("l", 300), filler + " ledgerledgerledger" + strings.Repeat("é", 200) + " ledger",
		"café CAFÉ éte Été", "I met this amazing woman. We should meet soon.", "The children are asleep; the child is not.",
		strings.Repeat("ab", 40) + " " + strings.Repeat("ab", 41), "\u212Aept \u212Aelvin kelvin", "\u0301ledger \u0301 ledger\u0301x",
		"ledger" + strings.Repeat(" ", 300), strings.Repeat(" ", 300) + "ledger", strings.Repeat("\n", 300) + "ledger" + strings.Repeat("\t", 300),
		"\uFFFD\xff\uFFFD ledger \xff\xff\xff", "a\x00\x00\x00b ledger c\xff\xfe\xfdd",
	}
	for _, n := range []int{5, 20, 60, 120, 400} {
		for range 12 {
			texts = append(texts, text(n))
		}
	}
	return queries, texts
}

// BenchmarkPage is the text side of a store's search: one Page of 10 hits
// without neighbours for the next of 200 corpus queries, over the
// candidates Prune keeps for it (147 on average, reported as cands/query).
func BenchmarkPage(b *testing.B) {
	w := corpusWorkload()
	cands := 0
	for _, c := range w.cands {
		cands += len(c)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		qi := i % len(w.queries)
		i++
		if _, err := textsearch.Page(w.queries[qi], 0, 10, 0, w.cands[qi], w.stats[qi], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cands)/float64(len(w.cands)), "cands/query")
}

// BenchmarkPrune is Prune for the next of the workload's queries, for a
// page of 10 hits with one neighbour on each side.
func BenchmarkPrune(b *testing.B) {
	w := corpusWorkload()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		qi := i % len(w.queries)
		i++
		textsearch.Prune(w.lists[qi], w.stats[qi], textsearch.Need(0, 10, 1))
	}
}
