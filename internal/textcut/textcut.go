// Package textcut cuts text to a byte bound without splitting a rune, and
// shows untrusted text so that nothing in it can hide or rewrite what a
// screen shows, for the tools that hand text to the model and the editor
// (tools/workspace, tools/mcp): [Escape] for a body of text, [Quote] for
// a title or a name shown on one line.
package textcut

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a rune ("" for n <= 0).
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Runes returns the longest prefix of s of at most n runes (a byte that
// is not UTF-8 counts as one), and whether it is shorter than s.
func Runes(s string, n int) (string, bool) {
	cut, count := 0, 0
	for cut < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
		count++
	}
	return s[:cut], cut < len(s)
}

// Bound returns s when it has at most max bytes, else its Prefix of max
// bytes followed by a line that says how much of it is shown.
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	kept := Prefix(s, max)
	return kept + fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(kept), len(s))
}

// hidden reports whether r can hide or rewrite text on a screen: a
// control character (C0, DEL, C1; newline and tab too), a format
// character (bidirectional overrides and isolates, zero-width
// characters, the byte order mark: Unicode's Cf) or a line or paragraph
// separator.
func hidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r < 0xa0) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Plain reports whether s is shown as it is on one line: valid UTF-8,
// printable characters and spaces only, nothing [Escape] would escape and
// no newline or tab.
func Plain(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return hidden(r) || !unicode.IsPrint(r) && r != ' ' })
}

// Escape returns s with every character that could hide or rewrite text
// on a screen (an ANSI escape, a backspace, a carriage return, NUL, a
// bidirectional override; see hidden) written as Go writes it in a quoted
// string (\x1b, \r, \u202e), and every byte that is not UTF-8 as \xNN;
// newlines and tabs stay, and a CR that ends a line (CRLF) is dropped.
// What is left is valid UTF-8 and shows as the characters it names.
func Escape(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return hidden(r) && r != '\n' && r != '\t' }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// CRLF: the line ends, as with LF.
		case r == '\n' || r == '\t' || !hidden(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\r', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Quote returns s as a title, a label or a name in a sentence shows it:
// as it is when it is [Plain] and at most max bytes, otherwise quoted
// with strconv.Quote (so a newline, a control or a format character
// cannot hide what follows) and, past max bytes, cut with its length
// said. Text a model or a program chose goes through it before a user
// sees it on one line.
func Quote(s string, max int) string {
	if len(s) <= max && Plain(s) {
		return s
	}
	if len(s) > max {
		return strconv.Quote(Prefix(s, max)) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return strconv.Quote(s)
}
