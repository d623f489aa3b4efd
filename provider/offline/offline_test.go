package offline

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

func user(text string) history.Message {
	return history.Message{Role: history.RoleUser, Text: text}
}

func assistant(text string) history.Message {
	return history.Message{Role: history.RoleAssistant, Text: text}
}

func TestCountTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"12345678", 2},
		{"héllo wörld", 3}, // 11 runes, not 13 bytes
		{"日本語", 1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, CountTokens(tt.in))
		})
	}
}

func TestUsage(t *testing.T) {
	req := &provider.Request{
		Purpose: provider.PurposeTurn,
		System:  "12345678", // 2
		Summary: "1234",     // 1
		Tools:   []provider.ToolSpec{{Name: "not_counted", Description: "tool specs are not part of the estimate"}},
		Messages: []history.Message{
			user("hello"), // 2
			{Role: history.RoleAssistant, Text: "ok", ToolCalls: []history.ToolCall{ // 1
				{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"a":"bcd"}`)}, // 11 runes: 3
			}},
			{Role: history.RoleTool, ToolCallID: "c1", Text: "result"}, // 2
		},
	}
	resp, err := New().Complete(t.Context(), req, nil)
	require.NoError(t, err)
	assert.Equal(t, 2+1+2+1+3+2, resp.Usage.InputTokens)
	assert.Equal(t, CountTokens(resp.Message.Text), resp.Usage.OutputTokens)

	t.Run("tool call arguments count as output", func(t *testing.T) {
		req := &provider.Request{
			Tools:    []provider.ToolSpec{{Name: "read_file", Parameters: json.RawMessage(`{"properties":{"path":{"type":"string"}}}`)}},
			Messages: []history.Message{user("read_file main.go")},
		}
		resp, err := New().Complete(t.Context(), req, nil)
		require.NoError(t, err)
		require.Len(t, resp.Message.ToolCalls, 1)
		want := CountTokens(resp.Message.Text) + CountTokens(string(resp.Message.ToolCalls[0].Arguments))
		assert.Equal(t, want, resp.Usage.OutputTokens)
		assert.Equal(t, CountTokens("read_file main.go"), resp.Usage.InputTokens)
	})

	t.Run("summary", func(t *testing.T) {
		in := "<transcript>\n[user] Use tabs in main.go.\n</transcript>"
		req := &provider.Request{Purpose: provider.PurposeSummary, System: "Summarize.", Messages: []history.Message{user(in)}}
		resp, err := New().Complete(t.Context(), req, nil)
		require.NoError(t, err)
		assert.Equal(t, CountTokens("Summarize.")+CountTokens(in), resp.Usage.InputTokens)
		assert.Equal(t, CountTokens(resp.Message.Text), resp.Usage.OutputTokens)
	})
}

func TestCompleteDeterministic(t *testing.T) {
	reqs := map[string]*provider.Request{
		"ack":      {Messages: []history.Message{user("Refactor the parser.")}},
		"question": {Messages: []history.Message{user("My name is Ada."), assistant("ok"), user("What is my name?")}},
		"tool": {
			Tools:    []provider.ToolSpec{{Name: "search", Parameters: json.RawMessage(`{"properties":{"q":{"type":"string"}}}`)}},
			Messages: []history.Message{user("search for cats")},
		},
		"summary": {Purpose: provider.PurposeSummary, Messages: []history.Message{user("<transcript>\n[user] Use tabs.\n[assistant] I will use tabs in main.go.\n</transcript>")}},
	}
	for name, req := range reqs {
		t.Run(name, func(t *testing.T) {
			var first *provider.Response
			for range 3 {
				var deltas []string
				resp, err := New().Complete(t.Context(), req, func(d string) { deltas = append(deltas, d) })
				require.NoError(t, err)
				assert.Equal(t, resp.Message.Text, strings.Join(deltas, ""))
				assert.Equal(t, history.RoleAssistant, resp.Message.Role)
				assert.NotEmpty(t, strings.TrimSpace(resp.Message.Text))
				if first == nil {
					first = resp
					continue
				}
				assert.Equal(t, first, resp)
			}
		})
	}
}

func TestSplitDeltas(t *testing.T) {
	texts := []string{
		"",
		"one",
		"one two three four five six seven",
		"  leading and trailing  ",
		"lines\nand\n\n  tabs\tin   between\n",
		"ünïcödé wörds 日本 語 ",
		"\n\n",
	}
	for _, text := range texts {
		for n := 1; n <= 4; n++ {
			got := splitDeltas(text, n)
			assert.Equal(t, text, strings.Join(got, ""), "n=%d", n)
			for i, d := range got {
				assert.NotEmpty(t, d)
				assert.LessOrEqual(t, len(strings.Fields(d)), n, "delta %d of %q", i, text)
			}
		}
	}
	assert.Equal(t, []string{"  hello  world, ", "this is\n ", "a test "}, splitDeltas("  hello  world, this is\n a test ", 2))
}

func TestStreamingDeltaSize(t *testing.T) {
	req := &provider.Request{Messages: []history.Message{user("one two three four five six seven eight nine ten")}}
	for _, size := range []int{1, 2, 5} {
		var deltas []string
		resp, err := New(WithDeltaSize(size)).Complete(t.Context(), req, func(d string) { deltas = append(deltas, d) })
		require.NoError(t, err)
		assert.Equal(t, resp.Message.Text, strings.Join(deltas, ""))
		assert.Len(t, deltas, (len(strings.Fields(resp.Message.Text))+size-1)/size)
	}
	// The zero value and invalid options fall back to the default.
	for _, p := range []*Provider{{}, New(WithDeltaSize(0), WithMaxSummaryChars(-1))} {
		var deltas []string
		resp, err := p.Complete(t.Context(), req, func(d string) { deltas = append(deltas, d) })
		require.NoError(t, err)
		assert.Len(t, deltas, (len(strings.Fields(resp.Message.Text))+DefaultDeltaSize-1)/DefaultDeltaSize)
	}
}

func TestCompleteCancellation(t *testing.T) {
	req := &provider.Request{Messages: []history.Message{user("one two three four five six seven eight nine ten")}}

	t.Run("cancelled between deltas", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var deltas []string
		resp, err := New(WithDeltaSize(1)).Complete(ctx, req, func(d string) {
			deltas = append(deltas, d)
			cancel()
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, resp)
		assert.Len(t, deltas, 1)
	})

	t.Run("done before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		called := false
		_, err := New().Complete(ctx, req, func(string) { called = true })
		require.ErrorIs(t, err, context.Canceled)
		assert.False(t, called)
	})

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 0)
		defer cancel()
		_, err := New().Complete(ctx, req, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestCompleteInvalid(t *testing.T) {
	_, err := New().Complete(t.Context(), nil, nil)
	require.ErrorIs(t, err, ErrInvalidRequest)

	_, err = New().Complete(t.Context(), &provider.Request{Purpose: "poem"}, nil)
	require.ErrorIs(t, err, ErrInvalidRequest)
	assert.Contains(t, err.Error(), "poem")

	// An empty purpose is a turn.
	resp, err := New().Complete(t.Context(), &provider.Request{Messages: []history.Message{user("hi")}}, nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(resp.Message.Text, "Noted: hi"))
	assert.False(t, errors.Is(err, ErrInvalidRequest))
}

func TestCompleteDoesNotModifyRequest(t *testing.T) {
	req := &provider.Request{
		Summary:  "- The project is called Falcon.",
		Tools:    []provider.ToolSpec{{Name: "search", Parameters: json.RawMessage(`{"properties":{"q":{"type":"string"}}}`)}},
		Messages: []history.Message{user("My name is Ada."), user("search for cats")},
	}
	before, err := json.Marshal(req)
	require.NoError(t, err)
	_, err = New().Complete(t.Context(), req, nil)
	require.NoError(t, err)
	after, err := json.Marshal(req)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
}
