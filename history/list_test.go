package history

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
