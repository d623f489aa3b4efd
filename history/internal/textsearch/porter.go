package textsearch

// Stem returns the Porter stem of word, a lowercase token of Words: the
// original algorithm of M. F. Porter (1980), as SQLite's FTS5 "porter"
// tokenizer applies it, so that a word and its stem agree between the Go
// side of a search and SQLite's index. Words shorter than three letters,
// longer than 64 bytes or holding anything but the letters a to z are
// returned as they are.
func Stem(word string) string {
	if !stemmable(word) {
		return word
	}
	return string(stem([]byte(word)))
}

// stemmable reports whether Stem rewrites word at all: three to 64
// letters a to z.
func stemmable[T string | []byte](word T) bool {
	if len(word) < 3 || len(word) > 64 {
		return false
	}
	for i := 0; i < len(word); i++ {
		if word[i] < 'a' || word[i] > 'z' {
			return false
		}
	}
	return true
}

// stem is Stem of a word that is stemmable, in place: it returns b
// rewritten to its stem (b's array, unless a step grows it past its
// capacity).
func stem(b []byte) []byte {
	p := porter{b: b}
	p.step1a()
	p.step1b()
	p.step1c()
	p.step2()
	p.step3()
	p.step4()
	p.step5()
	return p.b
}

// porter is one word being stemmed.
type porter struct{ b []byte }

// cons reports whether b[i] is a consonant.
func (p *porter) cons(i int) bool {
	switch p.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !p.cons(i-1)
	}
	return true
}

// measure is m of the stem b[:n]: the number of vowel-consonant sequences
// in [C](VC)^m[V].
func (p *porter) measure(n int) int {
	m, i := 0, 0
	for i < n && p.cons(i) {
		i++
	}
	for i < n {
		for i < n && !p.cons(i) {
			i++
		}
		if i >= n {
			break
		}
		for i < n && p.cons(i) {
			i++
		}
		m++
	}
	return m
}

// vowelIn reports whether b[:n] holds a vowel.
func (p *porter) vowelIn(n int) bool {
	for i := range n {
		if !p.cons(i) {
			return true
		}
	}
	return false
}

// doubleC reports whether b[:n] ends in a double consonant.
func (p *porter) doubleC(n int) bool {
	return n >= 2 && p.b[n-1] == p.b[n-2] && p.cons(n-1)
}

// cvc reports whether b[:n] ends consonant-vowel-consonant, the last not
// w, x or y.
func (p *porter) cvc(n int) bool {
	if n < 3 || !p.cons(n-1) || p.cons(n-2) || !p.cons(n-3) {
		return false
	}
	c := p.b[n-1]
	return c != 'w' && c != 'x' && c != 'y'
}

// ends reports whether the word ends in s, and returns the stem's length.
func (p *porter) ends(s string) (int, bool) {
	if len(s) > len(p.b) || string(p.b[len(p.b)-len(s):]) != s {
		return 0, false
	}
	return len(p.b) - len(s), true
}

// set replaces the word's end from n on by s.
func (p *porter) set(n int, s string) { p.b = append(p.b[:n], s...) }

func (p *porter) step1a() {
	switch {
	case hasSuffix(p.b, "sses"), hasSuffix(p.b, "ies"):
		p.b = p.b[:len(p.b)-2]
	case hasSuffix(p.b, "ss"):
	case hasSuffix(p.b, "s"):
		p.b = p.b[:len(p.b)-1]
	}
}

func (p *porter) step1b() {
	if n, ok := p.ends("eed"); ok {
		if p.measure(n) > 0 {
			p.b = p.b[:len(p.b)-1]
		}
		return
	}
	n, ok := p.ends("ed")
	if !ok {
		n, ok = p.ends("ing")
	}
	if !ok || !p.vowelIn(n) {
		return
	}
	p.b = p.b[:n]
	switch {
	case hasSuffix(p.b, "at"), hasSuffix(p.b, "bl"), hasSuffix(p.b, "iz"):
		p.b = append(p.b, 'e')
	case p.doubleC(n):
		if c := p.b[n-1]; c != 'l' && c != 's' && c != 'z' {
			p.b = p.b[:n-1]
		}
	case p.measure(n) == 1 && p.cvc(n):
		p.b = append(p.b, 'e')
	}
}

func (p *porter) step1c() {
	if n, ok := p.ends("y"); ok && p.vowelIn(n) {
		p.b[n] = 'i'
	}
}

// rule is one suffix rewrite of steps 2 to 4.
type rule struct{ from, to string }

var step2Rules = []rule{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"logi", "log"},
}

var step3Rules = []rule{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

// apply rewrites the longest suffix of rules the word ends in when the
// stem before it has a measure above min; only that suffix is tried.
func (p *porter) apply(rules []rule, min int) {
	best, bestN := -1, 0
	for i, r := range rules {
		if n, ok := p.ends(r.from); ok && (best < 0 || len(r.from) > len(rules[best].from)) {
			best, bestN = i, n
		}
	}
	if best >= 0 && p.measure(bestN) > min {
		p.set(bestN, rules[best].to)
	}
}

func (p *porter) step2() { p.apply(step2Rules, 0) }
func (p *porter) step3() { p.apply(step3Rules, 0) }

func (p *porter) step4() {
	best, bestN := "", 0
	for _, s := range step4Suffixes {
		if n, ok := p.ends(s); ok && len(s) > len(best) {
			best, bestN = s, n
		}
	}
	if best == "" || p.measure(bestN) <= 1 {
		return
	}
	if best == "ion" && (bestN == 0 || p.b[bestN-1] != 's' && p.b[bestN-1] != 't') {
		return
	}
	p.b = p.b[:bestN]
}

func (p *porter) step5() {
	if n, ok := p.ends("e"); ok {
		if m := p.measure(n); m > 1 || m == 1 && !p.cvc(n) {
			p.b = p.b[:n]
		}
	}
	if n := len(p.b); hasSuffix(p.b, "ll") && p.measure(n) > 1 {
		p.b = p.b[:n-1]
	}
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}
