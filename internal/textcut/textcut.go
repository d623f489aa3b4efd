// Package textcut cuts text to a byte bound without splitting a rune, for
// the tools that bound what they hand the model (tools/workspace,
// tools/mcp).
package textcut

import (
	"fmt"
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

// Bound returns s when it has at most max bytes, else its Prefix of max
// bytes followed by a line that says how much of it is shown.
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	kept := Prefix(s, max)
	return kept + fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(kept), len(s))
}
