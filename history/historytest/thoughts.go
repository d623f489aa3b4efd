package historytest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// thoughtMessages are assistant messages with thoughts: with tool calls,
// alone, redacted, with bytes that are not UTF-8.
func thoughtMessages() []history.Message {
	return []history.Message{
		{ID: "u1", Role: history.RoleUser, Text: "fix it", CreatedAt: t0},
		{ID: "a1", Role: history.RoleAssistant, Text: "", CreatedAt: t0.Add(1),
			Thoughts:  []history.Thought{{Text: "the zanzibar flag is wrong", Signature: "sig\x00=="}, {Redacted: "opaque\xff"}},
			ToolCalls: []history.ToolCall{{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"p":"a"}`)}}},
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c1", Text: "contents", CreatedAt: t0.Add(2)},
		{ID: "a2", Role: history.RoleAssistant, Text: "fixed", CreatedAt: t0.Add(3), Thoughts: []history.Thought{{Text: "done \xfe now"}}},
		{ID: "u2", Role: history.RoleUser, Text: "thanks", CreatedAt: t0.Add(4)},
		{ID: "a3", Role: history.RoleAssistant, Text: "welcome", CreatedAt: t0.Add(5)},
	}
}

// testThoughts checks that an assistant message's thoughts come back
// exactly from every read (Load, Timeline, Segments, Window, after
// reopening), that search never finds a message by its thoughts, and
// that thoughts on a user or tool message are refused.
func testThoughts(t *testing.T, h Harness) {
	ctx := context.Background()
	msgs := thoughtMessages()
	s, v := h.roundTrip(t, "th", msgs, 4)
	w, err := s.Window(ctx, "th", history.WindowQuery{Around: "a1"})
	require.NoError(t, err)
	require.Len(t, w, 1)
	EqualMessages(t, msgs[1:2], []history.Message{w[0].Message})

	page, err := s.Search(ctx, "th", history.SearchQuery{Text: "zanzibar"})
	require.NoError(t, err)
	assert.Empty(t, page.Hits, "thoughts are not searched")

	for name, msg := range map[string]history.Message{
		"user with thoughts": {ID: "x", Role: history.RoleUser, Text: "ab", Thoughts: []history.Thought{{Text: "t"}}},
		"tool with thoughts": {ID: "x", Role: history.RoleTool, ToolCallID: "c", Text: "ab", Thoughts: []history.Thought{{Text: "t"}}},
	} {
		_, err := s.Append(ctx, "th", v, []history.Message{msg})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
}
