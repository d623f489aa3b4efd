package offline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// collapse replaces every run of whitespace with one space and trims s.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// truncate shortens s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	cut, count := 0, 0
	for i := range s {
		if count == n-1 {
			cut = i
			break
		}
		count++
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// sentences splits one line of text after ".", "!", "?" or "…" followed by
// whitespace. The pieces are trimmed; empty ones are dropped.
func sentences(line string) []string {
	var out []string
	start := 0
	runes := []rune(line)
	pos := 0 // byte offset of runes[i]
	for i, r := range runes {
		size := utf8.RuneLen(r)
		if strings.ContainsRune(".!?…", r) && i+1 < len(runes) && unicode.IsSpace(runes[i+1]) {
			if s := strings.TrimSpace(line[start : pos+size]); s != "" {
				out = append(out, s)
			}
			start = pos + size
		}
		pos += size
	}
	if s := strings.TrimSpace(line[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// lead returns the first sentence of s with whitespace collapsed, extended by
// the following sentences while it is shorter than 40 runes, and cut at max
// runes.
func lead(s string, max int) string {
	parts := sentences(collapse(s))
	if len(parts) == 0 {
		return ""
	}
	out := parts[0]
	for _, p := range parts[1:] {
		if utf8.RuneCountInString(out) >= 40 || utf8.RuneCountInString(out)+1+utf8.RuneCountInString(p) > max {
			break
		}
		out += " " + p
	}
	return truncate(out, max)
}

// trimToken strips the punctuation that surrounds a word in prose.
func trimToken(w string) string {
	w = strings.TrimLeft(w, "\"'`“”‘’([{<*")
	w = strings.TrimRight(w, "\"'`“”‘’)]}>*,;:!?…")
	return strings.TrimRight(w, ".")
}

// stopwords are the words that carry no content for matching.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but nor so yet if then than as at by for from in into of on onto
		to with without about above after again against all also am any are aren't be because been before being
		below between both can can't could couldn't did didn't do does doesn't doing don't down during each few
		further had hadn't has hasn't have haven't having he her here hers herself him himself his how i i'm i've
		i'd i'll is isn't it it's its itself just let's me more most my myself no not now off once only other our
		ours ourselves out over own same she should shouldn't some such that that's their theirs them themselves
		there these they this those through too under until up very was wasn't we we're were weren't what what's
		when where which while who whom whose why will won't would wouldn't you you're your yours yourself
		yourselves please tell say said remember recall remind earlier before ok okay yes hi hello thanks thank
		know like get got make us one ever again really`) {
		m[w] = true
	}
	return m
}()

// normWord lowercases w and strips a possessive and a plural "s", so that
// "Files" and "file" match.
func normWord(w string) string {
	w = strings.ToLower(w)
	w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
	if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w = w[:len(w)-1]
	}
	return w
}

// contentWords returns the normalized words of s that are not stopwords.
// Words keep inner ".", "_", "/" and "-", so file names stay whole.
func contentWords(s string) map[string]bool {
	out := map[string]bool{}
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._/-'’", r)
	})
	for _, f := range fields {
		f = strings.Trim(f, ".-/_'’")
		lower := strings.ToLower(f)
		if utf8.RuneCountInString(f) < 2 || stopwords[lower] {
			continue
		}
		w := normWord(f)
		if stopwords[w] || w == "" {
			continue
		}
		out[w] = true
	}
	return out
}

// overlap counts the words of a that are in b.
func overlap(a, b map[string]bool) int {
	n := 0
	for w := range a {
		if b[w] {
			n++
		}
	}
	return n
}

// isWordRune reports whether r belongs to an identifier-like word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
}

// findWord returns the byte offset of the first occurrence of word in s that
// is not part of a longer identifier, or -1. Both are compared as given.
func findWord(s, word string) int {
	if word == "" {
		return -1
	}
	for from := 0; from <= len(s)-len(word); {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(word):])
		if (i == 0 || !isWordRune(before)) && (i+len(word) == len(s) || !isWordRune(after)) {
			return i
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		from = i + size
	}
	return -1
}
