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

func TestBound(t *testing.T) {
	assert.Equal(t, "short", Bound("short", 5))
	assert.Equal(t, "hél\n[output cut: the first 4 of 6 bytes shown]", Bound("héllo", 4))
	assert.Equal(t, "h\n[output cut: the first 1 of 6 bytes shown]", Bound("héllo", 2))
}
