package mcp

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
)

func listed(pairs ...string) []listedTool {
	var out []listedTool
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, listedTool{serverName: pairs[i], tool: &sdk.Tool{Name: pairs[i+1]}})
	}
	return out
}

// Names are unique, accepted by the providers, and depend on the tools
// alone, not on their order; a name nobody shares and short enough is
// kept as it is.
func TestToolNames(t *testing.T) {
	long := strings.Repeat("t", 70)
	tools := listed("a__b", "c", "a", "b__c", "git", "status", "git", long, "git", long+"2", "x y", "z", "x_y", "z")
	got := toolNames(tools)
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	seen := map[string]bool{}
	for _, n := range got {
		assert.Regexp(t, valid, n)
		assert.False(t, seen[n], n)
		seen[n] = true
	}
	assert.Equal(t, "mcp__git__status", got[2])
	for _, i := range []int{0, 1, 3, 4, 5, 6} {
		assert.Regexp(t, `_[0-9a-f]{8}$`, got[i])
		assert.Len(t, got[i], min(len("mcp__"+sanitize(tools[i].serverName)+"__"+sanitize(tools[i].tool.Name))+9, MaxNameLen))
	}

	rev := slices.Clone(tools)
	slices.Reverse(rev)
	again := toolNames(rev)
	slices.Reverse(again)
	assert.Equal(t, got, again, "the same names in any order")
}

func TestClean(t *testing.T) {
	assert.Equal(t, "a\tb\n"+`c\x1b[0m\x00\u202e\u200b\ufeff\u0085`, clean("a\tb\r\nc\x1b[0m\x00\u202e\u200b\ufeff\u0085", 100))
	assert.Equal(t, `\xffx`, clean("\xffx", 100))
	assert.Equal(t, "éé…", clean("éééé", 7))
	assert.LessOrEqual(t, len(clean(strings.Repeat("é", 100), 10)), 10)
}

func TestSchemas(t *testing.T) {
	for _, tc := range []struct {
		schema any
		why    string
	}{
		{nil, ""},
		{map[string]any{"type": "object"}, ""},
		{map[string]any{"properties": map[string]any{}}, ""},
		{map[string]any{"type": "string"}, "its input schema is of type string, not object"},
		{[]any{1}, "its input schema is not a JSON object"},
		{map[string]any{"description": strings.Repeat("x", 100)}, "its input schema is 118 bytes (at most 50)"},
	} {
		assert.Equal(t, tc.why, checkSchema(&sdk.Tool{InputSchema: tc.schema}, 50), "%v", tc.schema)
	}
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(objectSchema([]byte("null"))))
	assert.JSONEq(t, `{"type":"object","properties":{"a":{}}}`, string(objectSchema([]byte(`{"properties":{"a":{}}}`))))
	assert.JSONEq(t, `{"type":"object","required":["a"]}`, string(objectSchema([]byte(`{"type":"object","required":["a"]}`))))
}

func TestTail(t *testing.T) {
	var b tailBuffer
	b.Write([]byte(strings.Repeat("x", 2000) + "\n"))
	b.Write([]byte("one\r\n\x1b[1mtwo\n\n"))
	s := b.String()
	assert.True(t, strings.HasSuffix(s, ` | one | \x1b[1mtwo`), s)
	assert.LessOrEqual(t, len(s), tailMax+10)
}

func TestServerErrorIsOneCleanLine(t *testing.T) {
	e := &ServerError{Server: "x", Err: errors.New("bad\x1b[2J\nanswer" + strings.Repeat("!", 5000))}
	msg := e.Error()
	assert.True(t, strings.HasPrefix(msg, `mcp server "x": bad\x1b[2J answer!!`), msg[:40])
	assert.LessOrEqual(t, len(msg), maxErrorLen)
	assert.True(t, errors.Is(e, e.Err))
}
