package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

// thinkingToolReply is a streamed response that thinks (a signed
// thinking block and a redacted one), says a word and calls a tool.
func thinkingToolReply(w http.ResponseWriter, r *http.Request) {
	var body struct{ Stream bool }
	_ = json.NewDecoder(r.Body).Decode(&body)
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, at.MessageBody("tool_use", at.Usage{Input: 10, Output: 5},
			map[string]any{"type": "thinking", "thinking": "Read it first.", "signature": "sig-A"},
			map[string]any{"type": "redacted_thinking", "data": "opaque-B"},
			at.Text("Reading."),
			at.ToolUse("toolu_1", "read_file", json.RawMessage(`{"path":"a.go"}`))))
		return
	}
	at.WriteSSE(w,
		at.MessageStart(at.Usage{Input: 10}),
		at.ThinkingStart(0), at.ThinkingDelta(0, "Read it "), at.ThinkingDelta(0, "first."), at.SignatureDelta(0, "sig-A"), at.BlockStop(0),
		at.RedactedThinking(1, "opaque-B"), at.BlockStop(1),
		at.TextStart(2), at.TextDelta(2, "Reading."), at.BlockStop(2),
		at.ToolStart(3, "toolu_1", "read_file"), at.InputJSONDelta(3, `{"path":"a.go"}`), at.BlockStop(3),
		at.MessageDelta("tool_use", 5), at.MessageStop())
}

// TestThinking_SignaturesGoBack: with a thinking budget the request asks
// for thinking; the response's thinking is reported as thoughts as it
// streams (never as text) and kept with its signature; the next request of
// the turn sends the assistant message's thinking blocks back, signed,
// before its text and tool_use (the server refuses it otherwise), and the
// summary request does not think.
func TestThinking_SignaturesGoBack(t *testing.T) {
	inModes(t, "turn", false, func(t *testing.T, streamed bool) {
		srv := at.NewServer(t, testKey, thinkingToolReply, at.Reply("Done.", at.Usage{Input: 20, Output: 2}), at.Reply("sum", at.Usage{Input: 5, Output: 1}))
		p, _ := newTestProvider(t, srv, WithThinkingBudget(2048))
		var thoughts []string
		ctx := provider.WithThoughtDeltas(t.Context(), func(s string) { thoughts = append(thoughts, s) })
		req := userRequest("read a.go")
		var deltas []string
		var onDelta func(string)
		if streamed {
			onDelta = func(s string) { deltas = append(deltas, s) }
		}
		resp, err := p.Complete(ctx, req, onDelta)
		require.NoError(t, err)
		want := []history.Thought{{Text: "Read it first.", Signature: "sig-A"}, {Redacted: "opaque-B"}}
		assert.Equal(t, want, resp.Message.Thoughts)
		assert.Equal(t, "Reading.", resp.Message.Text)
		if streamed {
			assert.Equal(t, []string{"Read it ", "first."}, thoughts)
			assert.Equal(t, []string{"Reading."}, deltas)
		}

		msg := resp.Message
		msg.ID = "a1"
		req.Messages = append(req.Messages, msg, history.Message{ID: "t1", Role: history.RoleTool, ToolCallID: "toolu_1", Text: "package a"})
		_, err = p.Complete(t.Context(), req, onDelta)
		require.NoError(t, err, "the server takes the thinking sent back")
		sent := srv.Requests()[1].Request
		require.NotNil(t, sent.Thinking)
		assert.Equal(t, 2048, sent.Thinking.BudgetTokens)
		blocks := sent.Messages[1].Content
		require.Len(t, blocks, 4)
		assert.Equal(t, at.Block{Type: "thinking", Thinking: "Read it first.", Signature: "sig-A"}, blocks[0])
		assert.Equal(t, at.Block{Type: "redacted_thinking", Data: "opaque-B"}, blocks[1])
		assert.Equal(t, []string{"text", "tool_use"}, []string{blocks[2].Type, blocks[3].Type})

		sum := &provider.Request{Purpose: provider.PurposeSummary, System: "summarize", Messages: []history.Message{{ID: "s", Role: history.RoleUser, Text: "transcript"}}}
		_, err = p.Complete(t.Context(), sum, onDelta)
		require.NoError(t, err)
		assert.Nil(t, srv.Requests()[2].Request.Thinking, "a summary does not think")
	})
}

// TestThinking_OffSendsNoThinking: without a budget the request asks for
// no thinking and a message's thoughts (signed or another provider's)
// are not sent back.
func TestThinking_OffSendsNoThinking(t *testing.T) {
	srv := at.NewServer(t, testKey, at.Reply("ok", at.Usage{Input: 1, Output: 1}))
	p, _ := newTestProvider(t, srv)
	req := userRequest("go")
	req.Messages = append(req.Messages,
		history.Message{ID: "a1", Role: history.RoleAssistant, Text: "hm", Thoughts: []history.Thought{{Text: "x", Signature: "s"}, {Text: "unsigned"}}},
		history.Message{ID: "u2", Role: history.RoleUser, Text: "and?"})
	_, err := p.Complete(t.Context(), req, nil)
	require.NoError(t, err)
	sent := srv.Requests()[0].Request
	assert.Nil(t, sent.Thinking)
	assert.Equal(t, at.Content{{Type: "text", Text: "hm"}}, sent.Messages[1].Content)
}

func TestThinking_BadBudgets(t *testing.T) {
	for budget, want := range map[int]string{
		-1:    "thinking budget -1 is below the API's minimum of 1024",
		100:   "thinking budget 100 is below the API's minimum of 1024",
		32000: "thinking budget 32000 is not below max tokens 8192 (WithMaxTokens)",
	} {
		_, err := New(WithAPIKey("k"), WithModel("m"), WithMaxTokens(8192), WithThinkingBudget(budget))
		assert.True(t, errors.Is(err, ErrConfig), budget)
		assert.ErrorContains(t, err, want)
	}
	_, err := New(WithAPIKey("k"), WithModel("m"), WithMaxTokens(8192), WithThinkingBudget(4096))
	assert.NoError(t, err)
}

// TestThinking_OffForTurnBegunWithout: a turn of tool use whose last
// assistant message carries no thinking the API can check (begun without
// a budget, by another provider, or in a session reopened with one) is
// continued without thinking, as the API requires (it refuses thinking
// then); the next turn thinks again.
func TestThinking_OffForTurnBegunWithout(t *testing.T) {
	srv := at.NewServer(t, testKey, at.Reply("Done.", at.Usage{Input: 20, Output: 2}), at.Reply("ok", at.Usage{Input: 5, Output: 1}))
	p, _ := newTestProvider(t, srv, WithThinkingBudget(2048))
	req := userRequest("read a.go")
	req.Messages = append(req.Messages,
		history.Message{ID: "a1", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}},
			Thoughts: []history.Thought{{Text: "another provider's"}}},
		history.Message{ID: "t1", Role: history.RoleTool, ToolCallID: "toolu_1", Text: "package a"})
	_, err := p.Complete(t.Context(), req, nil)
	require.NoError(t, err, "the server takes the turn continued without thinking")
	assert.Nil(t, srv.Requests()[0].Request.Thinking)

	req.Messages = append(req.Messages,
		history.Message{ID: "a2", Role: history.RoleAssistant, Text: "Done."},
		history.Message{ID: "u2", Role: history.RoleUser, Text: "thanks"})
	_, err = p.Complete(t.Context(), req, nil)
	require.NoError(t, err)
	require.NotNil(t, srv.Requests()[1].Request.Thinking, "a new turn thinks")
}

// TestThinking_MergedMessagesLeadWithThinking: consecutive assistant
// messages go as one request message whose thinking blocks, of both,
// lead it in order (the server refuses a request whose last assistant
// message does not begin with signed thinking, or has thinking after
// another block).
func TestThinking_MergedMessagesLeadWithThinking(t *testing.T) {
	for name, first := range map[string]history.Message{
		"first without thoughts": {ID: "a0", Role: history.RoleAssistant, Text: "Let me look."},
		"first with thoughts": {ID: "a0", Role: history.RoleAssistant, Text: "Let me look.",
			Thoughts: []history.Thought{{Text: "Where is it?", Signature: "sig-0"}}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, at.Reply("Done.", at.Usage{Input: 20, Output: 2}))
			p, _ := newTestProvider(t, srv, WithThinkingBudget(2048))
			req := userRequest("read a.go")
			req.Messages = append(req.Messages, first,
				history.Message{ID: "a1", Role: history.RoleAssistant, Text: "Reading.", Thoughts: []history.Thought{{Text: "Read it first.", Signature: "sig-A"}, {Redacted: "opaque-B"}},
					ToolCalls: []history.ToolCall{{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}}},
				history.Message{ID: "t1", Role: history.RoleTool, ToolCallID: "toolu_1", Text: "package a"})
			_, err := p.Complete(t.Context(), req, nil)
			require.NoError(t, err, "the server takes the merged message")
			sent := srv.Requests()[0].Request
			require.Len(t, sent.Messages, 3)
			var types []string
			for _, b := range sent.Messages[1].Content {
				types = append(types, b.Type)
			}
			want := []string{"thinking", "redacted_thinking", "text", "text", "tool_use"}
			if len(first.Thoughts) > 0 {
				want = append([]string{"thinking"}, want...)
				assert.Equal(t, "sig-0", sent.Messages[1].Content[0].Signature, "in order")
			}
			assert.Equal(t, want, types)
		})
	}
}
