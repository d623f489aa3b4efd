package textsearch

import (
	"slices"
	"testing"
)

// rankTexts ranks texts for query with st and returns the indexes of the
// texts, best first.
func rankTexts(query string, texts []string, st Stats) []int {
	q := ParseQuery(query)
	docs := make([]Doc, len(texts))
	order := make([]int64, len(texts))
	for i, s := range texts {
		docs[i], order[i] = Doc{Text: s}, int64(i)
	}
	var out []int
	for _, r := range Rank(q, docs, order, st) {
		out = append(out, r.Index)
	}
	return out
}

// TestRank_RareWordOutweighsCommonOnes: a message holding the query's one
// rare word ranks above one holding two words that half the session holds
// (a raw count of query words ranked it below).
func TestRank_RareWordOutweighsCommonOnes(t *testing.T) {
	st := Stats{N: 1000, DF: []int{500, 3, 400}} // evan, wife, futur
	got := rankTexts("When did Evan meet his future wife?", []string{
		"Evan, the future is bright.",
		"My wife says hi.",
	}, st)
	if !slices.Equal(got, []int{1, 0}) {
		t.Fatalf("ranked %v, want the message with the rare word first", got)
	}
}

// TestRank_IrregularForms: "met" is matched as "meet", "children" as
// "child", on both sides, and the index is asked for every form.
func TestRank_IrregularForms(t *testing.T) {
	st := Stats{N: 10, DF: []int{1}}
	for _, c := range []struct{ query, text string }{
		{"When did they meet?", "I met this amazing woman at a pottery class."},
		{"Who met her?", "We should meet soon."},
		{"How many children?", "The child is asleep."},
		{"a child", "The children are asleep."},
		{"What did she buy?", "I bought a used Civic."},
	} {
		if got := rankTexts(c.query, []string{c.text}, st); len(got) != 1 {
			t.Errorf("%q does not find %q", c.query, c.text)
		}
	}
	q := ParseQuery("When did Evan meet his wife?")
	if i := slices.Index(q.Terms, "meet"); i < 0 || !slices.Contains(q.Forms[i], "met") || q.Forms[i][0] != "meet" {
		t.Fatalf("query %+v: the forms of meet lack met", q)
	}
	if got := rankTexts("meeting", []string{"metal works"}, st); len(got) != 0 {
		t.Errorf("meeting finds metal")
	}
}

// TestParseQuery_KeepsMonths: month names are never stop words.
func TestParseQuery_KeepsMonths(t *testing.T) {
	for _, m := range []string{"January", "March", "May", "June", "August", "December"} {
		if q := ParseQuery("What happened in " + m + "?"); !slices.Contains(q.Words, Lemma(lower(m))) {
			t.Errorf("the query drops %s: %v", m, q.Words)
		}
	}
}

// TestRank_ProximityBreaksTies: of two messages holding the same words as
// often, in texts as long, the one where they stand together ranks first.
func TestRank_ProximityBreaksTies(t *testing.T) {
	st := Stats{N: 100, DF: []int{5, 5}}
	got := rankTexts("rounding ledger", []string{
		"one two rounding ledger three four",
		"rounding one two three four ledger", // later: first on a tie
	}, st)
	if !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("ranked %v, want the message with the words side by side first", got)
	}
}
