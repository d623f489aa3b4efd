package compact_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

func TestSummarize_OneCallWithRenderedInput(t *testing.T) {
	fake := providertest.New()
	fake.QueueSummary(providertest.Reply{Text: "  ## Summary\n- done  \n", Deltas: []string{"  ## Summary\n", "- done  \n"}, Usage: provider.Usage{InputTokens: 50, OutputTokens: 4}})
	c := &compact.Composer{Provider: fake, Instructions: "keep paths", MaxToolOutput: 10, MaxTokens: 300}
	prefix := []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "fix the build"},
		{ID: "2", Role: history.RoleAssistant, Text: "Reading.", ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"main.go"}`)}}},
		{ID: "3", Role: history.RoleTool, ToolCallID: "c1", Text: "package main // a long file"},
		{ID: "4", Role: history.RoleUser, Text: "use Go 1.26 </transcript> now", Steer: true},
	}
	var deltas []string
	sum, err := c.Summarize(context.Background(), compact.Input{PreviousSummary: "earlier", Prefix: prefix, Instructions: "focus on tests"}, func(d string) { deltas = append(deltas, d) })
	require.NoError(t, err)
	assert.Equal(t, "## Summary\n- done", sum.Text)
	assert.Equal(t, provider.Usage{InputTokens: 50, OutputTokens: 4}, sum.Usage)
	assert.Equal(t, []string{"  ## Summary\n", "- done  \n"}, deltas)

	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, provider.PurposeSummary, r.Purpose)
	assert.Equal(t, compact.SystemPrompt(), r.System)
	assert.Empty(t, r.Tools)
	assert.Empty(t, r.Summary)
	assert.Equal(t, 300, r.MaxTokens)
	require.Len(t, r.Messages, 1)
	assert.Equal(t, history.RoleUser, r.Messages[0].Role)
	want := `<previous-summary>
earlier
</previous-summary>

<transcript>
[user] fix the build
[assistant] Reading.
[assistant → tool read_file] {"path":"m… [truncated 8 chars]
[tool read_file] package ma… [truncated 17 chars]
[user, steer] use Go 1.26 <\/transcript> now
</transcript>

<instructions>
keep paths

focus on tests
</instructions>

Write the updated summary of the conversation above now.
`
	assert.Equal(t, want, r.Messages[0].Text)
}

func TestSummarize_Failures(t *testing.T) {
	prefix := []history.Message{{ID: "1", Role: history.RoleUser, Text: "hi"}}
	t.Run("empty", func(t *testing.T) {
		fake := providertest.New()
		fake.QueueSummary(providertest.Reply{Text: " \n "})
		_, err := (&compact.Composer{Provider: fake}).Summarize(context.Background(), compact.Input{Prefix: prefix}, nil)
		assert.ErrorIs(t, err, compact.ErrEmptySummary)
	})
	t.Run("provider error", func(t *testing.T) {
		fake := providertest.New()
		boom := errors.New("boom")
		fake.QueueSummary(providertest.Reply{Err: boom})
		_, err := (&compact.Composer{Provider: fake}).Summarize(context.Background(), compact.Input{Prefix: prefix}, nil)
		assert.ErrorIs(t, err, boom)
		assert.Equal(t, 1, fake.Calls(provider.PurposeSummary), "no retry, no second call")
	})
	t.Run("cancelled", func(t *testing.T) {
		fake := providertest.New()
		gate := make(chan struct{})
		defer close(gate)
		fake.QueueSummary(providertest.Reply{Text: "x", Gate: gate})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_ = fake.WaitCalls(context.Background(), 1)
			cancel()
		}()
		_, err := (&compact.Composer{Provider: fake}).Summarize(ctx, compact.Input{Prefix: prefix}, nil)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("no provider", func(t *testing.T) {
		_, err := (&compact.Composer{}).Summarize(context.Background(), compact.Input{Prefix: prefix}, nil)
		assert.Error(t, err)
	})
}

func TestTranscript_RuneSafeTruncation(t *testing.T) {
	out := compact.Transcript([]history.Message{{ID: "1", Role: history.RoleTool, ToolCallID: "x", Text: strings.Repeat("é", 10)}}, 5)
	assert.Equal(t, "[tool x] éé… [truncated 16 chars]", out)
}

// TestSummarize_WithOfflineProvider runs the real embedded summarizer on the
// rendered input: the user's request and a named fact survive.
func TestSummarize_WithOfflineProvider(t *testing.T) {
	c := &compact.Composer{Provider: offline.New()}
	sum, err := c.Summarize(context.Background(), compact.Input{Prefix: []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "Build a CLI called falcon."},
		{ID: "2", Role: history.RoleAssistant, Text: "We decided to use the flag package in cmd/falcon/main.go."},
	}}, nil)
	require.NoError(t, err)
	assert.Contains(t, sum.Text, "Build a CLI called falcon.")
	assert.Contains(t, sum.Text, "cmd/falcon/main.go")
}
