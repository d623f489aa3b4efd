package textcut

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestPrefix(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"hello", 0, ""},
		{"hello", -1, ""},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
		{"日本", 4, "日"},
	} {
		got := Prefix(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "Prefix(%q, %d)", tt.s, tt.n)
		assert.True(t, utf8.ValidString(got))
	}
}

func TestRunes(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
		cut  bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"hello", 0, "", true},
		{"", 0, "", false},
		{"héllo", 2, "hé", true}, // runes, not bytes
		{"日本語", 2, "日本", true},
		{"a\xffb", 2, "a\xff", true}, // a byte that is not UTF-8 is one
	} {
		got, cut := Runes(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "Runes(%q, %d)", tt.s, tt.n)
		assert.Equal(t, tt.cut, cut, "Runes(%q, %d) cut", tt.s, tt.n)
	}
}

func TestBound(t *testing.T) {
	assert.Equal(t, "short", Bound("short", 5))
	assert.Equal(t, "hél\n[output cut: the first 4 of 6 bytes shown]", Bound("héllo", 4))
	assert.Equal(t, "h\n[output cut: the first 1 of 6 bytes shown]", Bound("héllo", 2))
}

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"a\tb\r\nc\x1b[0m\x00\u202e\u200b\ufeff\u0085", `a` + "\t" + `b` + "\n" + `c\x1b[0m\x00\u202e\u200b\ufeff\u0085`},
		{"bell\a back\b cr\r del\x7f", `bell\a back\b cr\r del\x7f`},
		{"\u2066isolate\u2069 \u2028", `\u2066isolate\u2069 \u2028`},
		{"\xffx", `\xffx`},
		{`a\x1b stays`, `a\x1b stays`},
		{"日本", "日本"},
	} {
		got := Escape(tt.in)
		assert.Equal(t, tt.want, got, "Escape(%q)", tt.in)
		assert.True(t, utf8.ValidString(got))
	}
}

func TestQuote(t *testing.T) {
	assert.Equal(t, "src/main.go", Quote("src/main.go", 100))
	assert.Equal(t, "a b", Quote("a b", 100))
	assert.Equal(t, `"a\nb"`, Quote("a\nb", 100))
	assert.Equal(t, `"evil\u202egpj.exe"`, Quote("evil\u202egpj.exe", 100))
	assert.Equal(t, `"\x1b[2Jx"`, Quote("\x1b[2Jx", 100))
	assert.Equal(t, `"\xff"`, Quote("\xff", 100))
	assert.Equal(t, `"a\tb"`, Quote("a\tb", 100))
	assert.Equal(t, `"abc"… (6 bytes)`, Quote("abcdef", 3))
}
