package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

// sent makes one plain request to a fresh server and returns what it
// received.
func sent(t *testing.T, req *provider.Request, opts ...Option) at.Received {
	t.Helper()
	srv := at.NewServer(t, testKey, at.Reply("ok", at.Usage{Input: 1, Output: 1}))
	p, _ := newTestProvider(t, srv, opts...)
	_, err := p.Complete(t.Context(), req, nil)
	require.NoError(t, err)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	return reqs[0]
}

// turnWithTools is a turn after a compaction: a summary, two tool calls
// answered by two tool messages, a steer, and an assistant message without
// text.
func turnWithTools() *provider.Request {
	return &provider.Request{
		Purpose: provider.PurposeTurn,
		System:  "You are a coding agent.",
		Summary: "The user asked about a.go.",
		Messages: []history.Message{
			{ID: "u1", Role: history.RoleUser, Text: "read a.go and b.go"},
			{ID: "a1", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
				{ID: "toolu_a", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "toolu_b", Name: "read_file", Arguments: nil},
			}},
			{ID: "t1", Role: history.RoleTool, ToolCallID: "toolu_a", Text: "package a"},
			{ID: "t2", Role: history.RoleTool, ToolCallID: "toolu_b", Text: ""},
			{ID: "s1", Role: history.RoleUser, Text: "only a.go matters", Steer: true},
			{ID: "a2", Role: history.RoleAssistant, Text: ""},
			{ID: "u2", Role: history.RoleUser, Text: "go on"},
		},
		Tools: []provider.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "now", Parameters: nil},
		},
	}
}

func TestRequestBody(t *testing.T) {
	rec := sent(t, turnWithTools())
	r := rec.Request
	assert.Equal(t, "claude-test", r.Model)
	assert.Equal(t, DefaultMaxTokens, r.MaxTokens, "max_tokens is always sent")
	assert.False(t, r.Stream)

	require.Len(t, r.System, 2)
	assert.Equal(t, "You are a coding agent.", r.System[0].Text)
	assert.Equal(t, provider.SummaryPreamble+"\n\n<summary>\nThe user asked about a.go.\n</summary>", r.System[1].Text,
		"the retained summary is marked as a summary of earlier conversation")

	require.Len(t, r.Messages, 5)
	assert.Equal(t, "user", r.Messages[0].Role)
	assert.Equal(t, at.Content{{Type: "text", Text: "read a.go and b.go"}}, stripCache(r.Messages[0].Content))

	assert.Equal(t, "assistant", r.Messages[1].Role)
	assert.Equal(t, at.Content{
		{Type: "tool_use", ID: "toolu_a", Name: "read_file", Input: json.RawMessage(`{"path":"a.go"}`)},
		{Type: "tool_use", ID: "toolu_b", Name: "read_file", Input: json.RawMessage(`{}`)},
	}, stripCache(r.Messages[1].Content), "no empty text block before the tool calls")

	assert.Equal(t, "user", r.Messages[2].Role, "the tool results and the steer are one user message")
	assert.Equal(t, at.Content{
		{Type: "tool_result", ToolUseID: "toolu_a", Content: at.Content{{Type: "text", Text: "package a"}}},
		{Type: "tool_result", ToolUseID: "toolu_b"},
		{Type: "text", Text: "only a.go matters"},
	}, stripCache(r.Messages[2].Content), "results paired by ID, first in their message; an empty result has no content block")

	assert.Equal(t, "assistant", r.Messages[3].Role)
	assert.Equal(t, at.Content{{Type: "text", Text: emptyText}}, stripCache(r.Messages[3].Content))
	assert.Equal(t, "user", r.Messages[4].Role)

	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "text" {
				assert.NotEmpty(t, b.Text, "an empty text is never sent")
			}
		}
	}

	require.Len(t, r.Tools, 2)
	assert.Equal(t, "read_file", r.Tools[0].Name)
	assert.Equal(t, "Read a file.", r.Tools[0].Description)
	assert.JSONEq(t, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`, string(r.Tools[0].InputSchema))
	assert.Equal(t, "now", r.Tools[1].Name)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(r.Tools[1].InputSchema))
}

func stripCache(c at.Content) at.Content {
	out := make(at.Content, len(c))
	for i, b := range c {
		b.CacheControl = nil
		out[i] = b
	}
	return out
}

// TestCacheBreakpoints: the last tool, the system prompt, the summary and
// the last message of a turn request carry an ephemeral breakpoint (four,
// the API's limit); a summary request has its own on its system prompt and
// its one message, and no tools; WithPromptCaching(false) sends none.
func TestCacheBreakpoints(t *testing.T) {
	t.Run("turn", func(t *testing.T) {
		r := sent(t, turnWithTools()).Request
		assert.Equal(t, []string{"tools[1]", "system[0]", "system[1]", "messages[4].content[0]"}, r.Breakpoints())
		assert.Equal(t, &at.CacheControl{Type: "ephemeral"}, r.Messages[4].Content[0].CacheControl)
	})
	t.Run("turn ending with tool results", func(t *testing.T) {
		req := turnWithTools()
		req.Summary = ""
		req.Messages = req.Messages[:4]
		r := sent(t, req).Request
		assert.Equal(t, []string{"tools[1]", "system[0]", "messages[2].content[1]"}, r.Breakpoints(), "on the last tool_result block")
	})
	t.Run("summary request", func(t *testing.T) {
		req := &provider.Request{
			Purpose:  provider.PurposeSummary,
			System:   "Summarize the transcript.",
			Messages: []history.Message{{ID: "input", Role: history.RoleUser, Text: "user: hi\nassistant: hello"}},
			Tools:    turnWithTools().Tools,
		}
		r := sent(t, req).Request
		assert.Empty(t, r.Tools, "a summary request sends no tools")
		assert.Equal(t, []string{"system[0]", "messages[0].content[0]"}, r.Breakpoints())
		assert.Equal(t, "user: hi\nassistant: hello", r.Messages[0].Content[0].Text)
	})
	t.Run("caching off", func(t *testing.T) {
		rec := sent(t, turnWithTools(), WithPromptCaching(false))
		assert.Empty(t, rec.Request.Breakpoints())
		assert.NotContains(t, string(rec.Raw), "cache_control")
	})
}

func TestMaxTokens(t *testing.T) {
	assert.Equal(t, 1000, sent(t, userRequest("hi"), WithMaxTokens(1000)).Request.MaxTokens, "WithMaxTokens")
	req := userRequest("hi")
	req.MaxTokens = 77
	assert.Equal(t, 77, sent(t, req, WithMaxTokens(1000)).Request.MaxTokens, "the request's own")
}

// TestRequestModel: a request that names a model asks for it; one that
// names none asks for the configured model (WithModel).
func TestRequestModel(t *testing.T) {
	req := userRequest("hi")
	assert.Equal(t, "claude-test", sent(t, req).Request.Model, "the configured model")
	req.Model = "claude-picked"
	assert.Equal(t, "claude-picked", sent(t, req).Request.Model, "the request's own")
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	tests := map[string]*provider.Request{
		"no messages":    {Purpose: provider.PurposeSummary, System: "Summarize."},
		"unknown role":   {Messages: []history.Message{{ID: "x", Role: "system", Text: "hi"}}},
		"bad schema":     {Messages: userRequest("hi").Messages, Tools: []provider.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}},
		"bad tool input": {Messages: []history.Message{{ID: "a", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c", Name: "t", Arguments: json.RawMessage(`{`)}}}}},
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, at.Reply("ok", at.Usage{}))
			p, _ := newTestProvider(t, srv)
			_, err := p.Complete(t.Context(), req, nil)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Empty(t, srv.Requests())
		})
	}
	p, _ := newTestProvider(t, at.NewServer(t, testKey))
	_, err := p.Complete(t.Context(), nil, nil)
	require.Error(t, err)
}

// TestFirstMessageIsTheUser: after a compaction Active may start with an
// assistant message; the request still opens with a user message.
func TestFirstMessageIsTheUser(t *testing.T) {
	req := &provider.Request{
		Purpose: provider.PurposeTurn,
		Summary: "Earlier: the user asked for a plan.",
		Messages: []history.Message{
			{ID: "a1", Role: history.RoleAssistant, Text: "Here is the plan."},
			{ID: "u1", Role: history.RoleUser, Text: "go on"},
		},
	}
	r := sent(t, req).Request
	require.Len(t, r.Messages, 3)
	assert.Equal(t, "user", r.Messages[0].Role)
	assert.Equal(t, leadText, r.Messages[0].Content[0].Text)
	assert.Equal(t, "assistant", r.Messages[1].Role)
	assert.Equal(t, "user", r.Messages[2].Role)
}
