package history

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultTitle(t *testing.T) {
	long := strings.Repeat("ab ", 40)
	for in, want := range map[string]string{
		"Fix the build":                 "Fix the build",
		"\n\n  Fix   the\tbuild \nmore": "Fix the build",
		"":                              "",
		"   \n\t\n":                     "",
		strings.Repeat("é", MaxTitle):   strings.Repeat("é", MaxTitle),
		strings.Repeat("é", MaxTitle+1): strings.Repeat("é", MaxTitle-1) + "…",
		long:                            strings.TrimSpace(long[:MaxTitle-1]) + "…",
	} {
		got := DefaultTitle(in)
		assert.Equal(t, want, got, "%q", in)
		assert.LessOrEqual(t, len([]rune(got)), MaxTitle)
	}
}

func TestListCursor(t *testing.T) {
	for _, p := range []ListPosition{{UpdatedAt: 0, ID: ""}, {UpdatedAt: -5, ID: "a:b:c"}, {UpdatedAt: 1 << 62, ID: "\x00é"}} {
		limit, after, err := ParseList(ListOptions{Cursor: p.Cursor()})
		require.NoError(t, err)
		assert.Equal(t, DefaultListLimit, limit)
		assert.Equal(t, p, *after)
	}
	limit, _, err := ParseList(ListOptions{Limit: MaxListLimit + 1})
	require.NoError(t, err)
	assert.Equal(t, MaxListLimit, limit)
}
