package textsearch

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// snippetWhole is Snippet as it was before it read only a window of the
// text: the whole text made clean first (NULs, white space runs and
// invalid UTF-8 replaced), every matching word of it found, then the
// excerpt cut around the first. TestSnippetReadsAWindow holds Snippet to
// it.
func snippetWhole(q Query, text string) string {
	text = strings.Join(strings.Fields(strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", " "), "\uFFFD")), " ")
	m := newMatcher(q.Terms)
	var froms, tos []int // the matching words, in bytes
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += n
			continue
		}
		j := i + n
		for j < len(text) {
			r, n := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) {
				break
			}
			j += n
		}
		if len(q.Terms) > 0 && m.match(text[i:min(j, i+MaxWordBytes)]) >= 0 {
			froms, tos = append(froms, i), append(tos, j)
		}
		i = j
	}
	start, end := 0, 0
	if len(froms) > 0 {
		start = froms[0]
		for range snippetBefore {
			if start == 0 {
				break
			}
			_, n := utf8.DecodeLastRuneInString(text[:start])
			start -= n
		}
		if sp := strings.IndexByte(text[start:froms[0]], ' '); start > 0 && sp >= 0 {
			start += sp + 1
		}
	}
	end = start
	for range snippetLen {
		if end == len(text) {
			break
		}
		_, n := utf8.DecodeRuneInString(text[end:])
		end += n
	}
	for k := range froms {
		if froms[k] < end && tos[k] > end {
			end = tos[k]
		}
	}
	out := ""
	if start > 0 {
		out = "…"
	}
	at := start
	for k := range froms {
		if froms[k] >= start && froms[k] < end {
			out += text[at:froms[k]] + "«" + text[froms[k]:tos[k]] + "»"
			at = tos[k]
		}
	}
	out += text[at:end]
	if end < len(text) {
		out += "…"
	}
	return out
}

// TestSnippetReadsAWindow: Snippet, which makes clean only the window of
// the text the excerpt comes from, returns what snippetWhole returns, for
// random texts of words (matching and not, any case, multibyte, with
// combining marks, longer than MaxWordBytes) between separators of every
// kind (runs of spaces, tabs and newlines, Unicode white space, NUL bytes,
// invalid UTF-8, punctuation), short and long, matching at the start, the
// end, both or nowhere; and for a matcher shared by many texts, as Page
// shares one.
func TestSnippetReadsAWindow(t *testing.T) {
	words := []string{
		"ledger", "Ledgers", "LEDGER", "rounding", "round", "met", "MET", "meet", "children", "child", "café", "CAFÉ",
		"naïve", "nai\u0308ve", "\u212Aept", "kept", "日本", "жизнь", "Жизнь", "x", "42", strings.Repeat("ledger", 12),
		strings.Repeat("é", 40) + "ledger", "ledger" + strings.Repeat("é", 40), "\u0301", "\uFFFD", "lorem", "ipsum", "dolor",
	}
	seps := []string{
		" ", " ", " ", " ", "  ", "\t", "\n", "\r\n", " \t\n ", "\x00", "\x00 \x00", "\xff", "\xff\xfe", "\xe2\x82", "\xc3",
		"\u00a0", "\u2003", "\u3000", "\u0085", "\v\f", ", ", ". ", "-", "'", "\xff \xff", " \xff", "\u0301 ",
	}
	queries := []Query{
		ParseQuery("ledger"), ParseQuery("rounding ledgers"), ParseQuery("When did they meet the children?"),
		ParseQuery("café naïve"), ParseQuery("kept Жизнь 日本"), ParseQuery(strings.Repeat("ledger", 12)), ParseQuery("lorem"),
		ParseQuery("the"), {},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 4000 {
		var b strings.Builder
		n := []int{1, 3, 10, 40, 80, 200, 600}[r.IntN(7)]
		common := r.IntN(len(words) + 1) // a word most of the text is
		for i := range n {
			if i > 0 || r.IntN(3) == 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			if common < len(words) && r.IntN(10) > 0 {
				b.WriteString(words[common])
			} else {
				b.WriteString(words[r.IntN(len(words))])
			}
		}
		if r.IntN(3) == 0 {
			b.WriteString(seps[r.IntN(len(seps))])
		}
		text := b.String()
		q := queries[r.IntN(len(queries))]
		if got, want := Snippet(q, text), snippetWhole(q, text); got != want {
			t.Fatalf("round %d: Snippet(%q, %q)\n = %q\nwant %q", round, q.Terms, text, got, want)
		}
	}
	// One matcher for many texts: what it remembers of one does not change
	// another's excerpt, whether the text is clean or not.
	for _, q := range queries {
		m := newMatcher(q.Terms)
		for range 200 {
			var b strings.Builder
			for range 1 + r.IntN(100) {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteString(seps[r.IntN(len(seps))])
			}
			if got, want := m.snippet(b.String()), snippetWhole(q, b.String()); got != want {
				t.Fatalf("shared matcher: snippet(%q, %q)\n = %q\nwant %q", q.Terms, b.String(), got, want)
			}
		}
		for w, i := range m.seen { // no word it remembers has changed under it
			if want := slices.Index(q.Terms, Term(lower(w))); i != want {
				t.Fatalf("the matcher remembers %q as term %d, but it is %d", w, i, want)
			}
		}
	}
}

// TestSnippetCases: excerpts of texts with white space, NUL bytes and
// invalid UTF-8 around the match, cut at either end or not.
func TestSnippetCases(t *testing.T) {
	q := ParseQuery("ledger")
	long := strings.Repeat("word ", 100)
	for _, c := range []struct{ text, want string }{
		{"", ""},
		{"no match here", "no match here"},
		{"  the\tledger\n\nis\x00here  ", "the «ledger» is here"},
		{"bad\xff\xfebytes \xffledger\xff", "bad\uFFFDbytes \uFFFD«ledger»\uFFFD"},
		{"Ledger ledgers LEDGER", "«Ledger» «ledgers» «LEDGER»"},
		{long + "ledger", "…" + strings.Repeat("word ", 11) + "«ledger»"}, // 60 runes back, then the next word
		{"ledger " + long, "«ledger» " + strings.Repeat("word ", 46) + "wor…"},
		{"café ledger", "café «ledger»"},
		{strings.Repeat("é", 300), strings.Repeat("é", 240) + "…"},
		{strings.Repeat("x", 239) + " ledger", "…«ledger»"},
		{strings.Repeat("x", 20) + " ledger " + long, strings.Repeat("x", 20) + " «ledger» " + strings.Repeat("word ", 42) + "wo…"},
		{strings.Repeat("x", 20) + " ledgerword " + long, strings.Repeat("x", 20) + " ledgerword " + strings.Repeat("word ", 41) + "wor…"}, // no match: the start,
	} {
		if got := Snippet(q, c.text); got != c.want {
			t.Errorf("Snippet(%q)\n = %q\nwant %q", c.text, got, c.want)
		}
		if got := snippetWhole(q, c.text); got != c.want {
			t.Errorf("snippetWhole(%q)\n = %q\nwant %q", c.text, got, c.want)
		}
	}
}

// TestMatchIsTermOf: a matcher finds for a word what stemming the word
// finds (the index of Term(lower(w)) among the terms), for every word of
// the edge texts and words that start like a term without stemming to it.
func TestMatchIsTermOf(t *testing.T) {
	terms := ParseQuery("When did Evan meet his children at the rounding ledger café? Жизнь 日本 kept configs").Terms
	m := newMatcher(terms)
	words := strings.Fields(`meet met MET meeting metal Met children child childish CHILDREN round rounded Rounding
		roundabout ledger ledgers LEDGERED café CAFÉ cafés жизнь Жизнь ЖИЗНИ 日本 日本語 kept keep keeping \u212Aept
		config configs configuration Configured evan Evans EVAN evangelist a x ab`)
	words = append(words, "\u212Aept", strings.Repeat("ledger", 10), "ledger"+strings.Repeat("é", 30))
	for range 2 { // the second time, as remembered
		for _, w := range words {
			w = w[:min(len(w), MaxWordBytes)]
			if got, want := m.match(w), slices.Index(terms, Term(lower(w))); got != want {
				t.Errorf("match(%q) = %d, want %d (terms %q)", w, got, want, terms)
			}
		}
	}
}
