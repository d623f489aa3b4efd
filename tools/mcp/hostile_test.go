package mcp_test

import (
	"net/http"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/mcp"
)

// raw reports whether s holds a character that can rewrite a screen or
// reorder text: a control character other than newline and tab, or a
// format character (bidi, zero-width).
func raw(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && r != '\t' && (r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r))
	})
}

// A server's results, errors and names reach the model (and, as the
// call's content, the editor) with their control and bidi characters
// shown escaped, never as they are.
func TestHostileResultsAreEscaped(t *testing.T) {
	url := httpServer(t, "ansi")
	set := connect(t, options(t), mcp.Server{Name: "ansi", URL: url, Headers: http.Header{"X-Token": {"secret"}}})
	require.Empty(t, set.Failed())

	out, err := run(t, tool(t, set, "mcp__ansi__ansi"), `{}`)
	require.NoError(t, err)
	assert.Equal(t, hostileShown, out, "the result")
	assert.False(t, raw(out), "%q", out)

	for _, name := range []string{"mcp__ansi__ansi-error", "mcp__ansi__ansi-fail"} {
		_, err = run(t, tool(t, set, name), `{}`)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `red\x1b[31m bell\a back\b cr\r nul\x00 csi\u009b rlo\u202etxt.exe\u2066iso\u2069 zw\u200b ok`, name)
		assert.False(t, raw(err.Error()), "%s: %q", name, err.Error())
	}

	var hostile string
	for _, tl := range set.Tools() {
		o, _ := set.Origin(tl.Name)
		if strings.HasPrefix(o.Tool, "evil") {
			hostile = o.Tool
		}
	}
	assert.Equal(t, `evil\x1b[2J\u202ename`, hostile, "the tool's own name")
}
