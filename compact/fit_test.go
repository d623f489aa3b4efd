package compact_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
)

func msg(id string, role history.Role, text string, calls ...history.ToolCall) history.Message {
	m := history.Message{ID: id, Role: role, Text: text, ToolCalls: calls}
	if role == history.RoleTool {
		m.ToolCallID = "call-" + id
	}
	return m
}

// TestCutThrough: the prefix ends at the named message, moved past the
// tool results after it; an unknown ID is not a plan.
func TestCutThrough(t *testing.T) {
	active := []history.Message{
		msg("u1", history.RoleUser, "u1"),
		msg("a1", history.RoleAssistant, "a1", history.ToolCall{ID: "c1", Name: "x"}, history.ToolCall{ID: "c2", Name: "x"}),
		msg("t1", history.RoleTool, "r1"),
		msg("t2", history.RoleTool, "r2"),
		msg("a2", history.RoleAssistant, "a2"),
		msg("u2", history.RoleUser, "u2"),
	}
	tests := []struct {
		id      string
		archive int
		k       int
	}{
		{"u1", 1, 1},
		{"a1", 4, 2}, // its results come along
		{"t1", 4, 2}, // so does the other result
		{"t2", 4, 2},
		{"a2", 5, 3},
		{"u2", 6, 4},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p, ok := compact.CutThrough(active, tt.id)
			require.True(t, ok)
			assert.Equal(t, compact.Cut{N: 4, K: tt.k, Archive: tt.archive}, p)
		})
	}
	_, ok := compact.CutThrough(active, "nope")
	assert.False(t, ok)
}

// TestEstimateTokens: the documented estimate, 4 bytes a token rounded up.
func TestEstimateTokens(t *testing.T) {
	assert.Equal(t, 0, compact.EstimateTokens("", 0))
	assert.Equal(t, 1, compact.EstimateTokens("abc", 0))
	assert.Equal(t, 3, compact.EstimateTokens("abcdefghij", 0))
	assert.Equal(t, 10, compact.EstimateTokens("abcdefghij", 1))
}

func longPrefix(n int) []history.Message {
	var out []history.Message
	for i := range n {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		out = append(out, msg(fmt.Sprintf("m%d", i), role, fmt.Sprintf("message %d %s", i, strings.Repeat("x", 200))))
	}
	return out
}

// TestContextWindowFits: with a window, the request fits within it minus
// the summary's maximum output, the oldest messages are left out behind
// the marker, and the newest are kept; without one nothing is left out.
func TestContextWindowFits(t *testing.T) {
	prefix := longPrefix(1000)
	for _, window := range []int{2000, 8000, 32000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			c := &compact.Composer{ContextWindow: window}
			req, err := c.Request(compact.Input{PreviousSummary: "earlier", Prefix: prefix})
			require.NoError(t, err)
			require.Positive(t, req.MaxTokens)
			size := compact.EstimateTokens(req.System, 0) + compact.EstimateMessages(req.Messages, 0)
			assert.LessOrEqual(t, size, window-req.MaxTokens)
			text := req.Messages[0].Text
			assert.Contains(t, text, "message 999 ")
			assert.NotContains(t, text, "message 0 ")
			assert.Contains(t, text, "left out of this summary input")
			assert.Contains(t, text, "earlier", "the previous summary is kept")
		})
	}
	c := &compact.Composer{}
	req, err := c.Request(compact.Input{Prefix: prefix})
	require.NoError(t, err)
	assert.Contains(t, req.Messages[0].Text, "message 0 ")
	assert.NotContains(t, req.Messages[0].Text, "left out")
	assert.Zero(t, req.MaxTokens)
}

// TestContextWindowCutsNewestWhenAlone: a newest message longer than the
// window alone is cut, never sent whole.
func TestContextWindowCutsNewestWhenAlone(t *testing.T) {
	prefix := []history.Message{msg("u", history.RoleUser, "old"), msg("a", history.RoleAssistant, strings.Repeat("y", 100000))}
	c := &compact.Composer{ContextWindow: 4000}
	req, err := c.Request(compact.Input{Prefix: prefix})
	require.NoError(t, err)
	size := compact.EstimateTokens(req.System, 0) + compact.EstimateMessages(req.Messages, 0)
	assert.LessOrEqual(t, size, 4000-req.MaxTokens)
	assert.Contains(t, req.Messages[0].Text, "cut to fit")
}
