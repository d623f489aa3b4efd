package textsearch

import (
	"database/sql"
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
