package textsearch

import (
	"database/sql"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// words is a sample of English and code words with the suffixes every step
// of the Porter algorithm handles.
var words = strings.Fields(`caresses ponies ties caress cats feed agreed plastered bled motoring sing
conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky relational
conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli
vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness
revival allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment
dependent adoption homologou communism activate angulariti homologous effective bowdlerize probate rate
cease controll roll renamed rename renaming renames rounding rounded changed changing ledger parser
parsing parsed configuration configured timeout timeouts retries retried generalization archived
archive compaction compacted summarizer summaries tested testing tests database migrations migrate
apology logical analogies analogy generously ylang yes eye eyes queued queue fly flies dying lying
agreement hesitated relate relational connection connections connective connected running runner`)

func TestStemMatchesFTS5Porter(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5(x, tokenize='porter ascii'); CREATE VIRTUAL TABLE v USING fts5vocab(f, 'row')`); err != nil {
		t.Fatal(err)
	}
	// Each word alone in the table: the one term FTS5 indexed is its stem.
	for _, w := range words {
		var stem string
		if _, err := db.Exec(`DELETE FROM f; INSERT INTO f (x) VALUES (?)`, w); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT term FROM v`).Scan(&stem); err != nil {
			t.Fatal(err)
		}
		if got := Stem(w); got != stem {
			t.Errorf("Stem(%q) = %q, FTS5's porter tokenizer stems it %q", w, got, stem)
		}
	}
}

func TestStemExamples(t *testing.T) {
	for w, want := range map[string]string{
		"renamed": "renam", "rename": "renam", "caresses": "caress", "ponies": "poni", "hopping": "hop",
		"relational": "relat", "generalization": "gener", "go": "go", "ledger": "ledger",
	} {
		if got := Stem(w); got != want {
			t.Errorf("Stem(%q) = %q, want %q", w, got, want)
		}
	}
}

// TestPruneKeepsTheBest: the hits of a page ranked from the pruned
// candidates are those ranked from all of them, for term lists cut as a
// store cuts them (the newest k of each term), whatever the page.
func TestPruneKeepsTheBest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vocab := strings.Fields("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega")
	for round := range 200 {
		n := 50 + r.IntN(200)
		docs := make([]Doc, n)
		order := make([]int64, n)
		for i := range docs {
			var w []string
			for range 1 + r.IntN(12) {
				w = append(w, vocab[r.IntN(1+r.IntN(len(vocab)))])
			}
			docs[i] = Doc{Text: strings.Join(w, " ")}
			order[i] = int64(i)
		}
		q := ParseQuery(strings.Join(vocab[:2+r.IntN(5)], " "))
		k := 5 + r.IntN(40)
		lists := make([]TermHits, len(q.Terms))
		st := Stats{N: n, DF: make([]int, len(q.Terms))}
		for ti, term := range q.Terms {
			var keys []int64
			for i := n - 1; i >= 0; i-- {
				has := false
				Words(docs[i].Text, func(w string) bool { has = has || Term(w) == term; return !has })
				if has {
					keys = append(keys, int64(i))
				}
			}
			st.DF[ti] = len(keys)
			lists[ti] = TermHits{Keys: keys[:min(k, len(keys))], Complete: len(keys) <= k}
		}
		var union []int64
		seen := map[int64]bool{}
		for _, l := range lists {
			for _, key := range l.Keys {
				if !seen[key] {
					seen[key] = true
					union = append(union, key)
				}
			}
		}
		need := 1 + r.IntN(15)
		pick := func(keys []int64) []int {
			ds := make([]Doc, len(keys))
			os := make([]int64, len(keys))
			for i, key := range keys {
				ds[i], os[i] = docs[key], order[key]
			}
			var out []int
			for _, rk := range Rank(q, ds, os, st) {
				if len(out) == need {
					break
				}
				out = append(out, int(keys[rk.Index]))
			}
			return out
		}
		if got, want := pick(Prune(lists, st, need)), pick(union); !slices.Equal(got, want) {
			t.Fatalf("round %d: the best %d of the pruned candidates are %v, of all %v", round, need, got, want)
		}
	}
}
