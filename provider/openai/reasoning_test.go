package openai

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
)

// TestStreamingReasoningContent: a server that streams reasoning_content
// (vLLM, Ollama, DeepSeek) before its text and tool calls: each delta is
// reported as a thought as it comes (provider.WithThoughtDeltas), never as
// text; the message keeps the whole reasoning in Thoughts; the next
// request of the turn sends the assistant message without it.
func TestStreamingReasoningContent(t *testing.T) {
	f := newFake(t,
		sse(
			roleChunk(),
			openaitest.ReasoningChunk("The user wants "),
			openaitest.ReasoningChunk("the file."),
			textChunk("Reading."),
			toolChunk(0, "call_a", "read_file", `{"path":"a.go"}`),
			finishChunk("tool_calls"),
			usageChunk(50, 25),
		),
		sse(roleChunk(), textChunk("Done."), finishChunk("stop"), usageChunk(80, 5)),
	)
	p, _ := newProvider(t, f)
	var text, thoughts collector
	ctx := provider.WithThoughtDeltas(t.Context(), thoughts.add)
	resp, err := p.Complete(ctx, userRequest("read a.go"), text.add)
	require.NoError(t, err)
	assert.Equal(t, []string{"Reading."}, text.all())
	assert.Equal(t, []string{"The user wants ", "the file."}, thoughts.all())
	assert.Equal(t, history.Message{
		Role:      history.RoleAssistant,
		Text:      "Reading.",
		Thoughts:  []history.Thought{{Text: "The user wants the file."}},
		ToolCalls: []history.ToolCall{{ID: "call_a", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}},
	}, resp.Message)

	next := userRequest("read a.go")
	resp.Message.ID = "a1"
	next.Messages = append(next.Messages, resp.Message, history.Message{ID: "t1", Role: history.RoleTool, ToolCallID: "call_a", Text: "package a"})
	_, err = p.Complete(t.Context(), next, text.add)
	require.NoError(t, err)
	raw := string(f.requests()[1].Raw)
	assert.NotContains(t, raw, "reasoning_content", "never sent back")
	assert.NotContains(t, raw, "The user wants")
}

// TestCompletionReasoningContent: a non-streamed response's
// reasoning_content is the message's thought.
func TestCompletionReasoningContent(t *testing.T) {
	body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"greet back"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
	p, _ := newProvider(t, f)
	resp, err := p.Complete(t.Context(), userRequest("hi"), nil)
	require.NoError(t, err)
	assert.Equal(t, []history.Thought{{Text: "greet back"}}, resp.Message.Thoughts)
}
