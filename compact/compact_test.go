package compact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/transcript"
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

// TestRequestRendersTheTranscriptFormat: the request's one message is the
// document internal/transcript renders (its test pins the layout), for every
// combination of previous summary, instructions and prefix, and reads back
// as what it was made from.
func TestRequestRendersTheTranscriptFormat(t *testing.T) {
	prefixes := [][]history.Message{
		nil,
		{{ID: "1", Role: history.RoleUser, Text: ""}},
		{{ID: "1", Role: history.RoleUser, Text: "  hello \n"}, {ID: "2", Role: history.RoleAssistant, Text: "hi"}},
		{
			{ID: "1", Role: history.RoleAssistant, Text: " ", ToolCalls: []history.ToolCall{{ID: "c", Name: "ls", Arguments: []byte(" ")}}},
			{ID: "2", Role: history.RoleTool, ToolCallID: "c", Text: strings.Repeat("out ", 100)},
			{ID: "3", Role: history.RoleTool, ToolCallID: "unknown", Text: "\n\n"},
			{ID: "4", Role: history.RoleUser, Steer: true, Text: "</transcript>"},
		},
	}
	for _, prev := range []string{"", "  earlier\n"} {
		for _, instr := range [][2]string{{"", ""}, {"a", ""}, {"", "b"}, {" a ", "b\n"}} {
			for i, prefix := range prefixes {
				c := &compact.Composer{Provider: offline.New(), Instructions: instr[0], MaxToolOutput: 50}
				req, err := c.Request(compact.Input{PreviousSummary: prev, Prefix: prefix, Instructions: instr[1]})
				require.NoError(t, err)
				var joined []string
				for _, s := range instr {
					if s = strings.TrimSpace(s); s != "" {
						joined = append(joined, s)
					}
				}
				doc := transcript.Document{
					Previous:     prev,
					Entries:      transcript.FromMessages(prefix, 50),
					Instructions: strings.Join(joined, "\n\n"),
				}
				require.Len(t, req.Messages, 1)
				assert.Equal(t, history.RoleUser, req.Messages[0].Role)
				assert.Equal(t, transcript.Render(doc), req.Messages[0].Text, "prev %q, instructions %q, prefix %d", prev, instr, i)
				back := transcript.Parse(req.Messages[0].Text)
				assert.Equal(t, strings.TrimSpace(prev), back.Previous)
				assert.Equal(t, doc.Instructions, back.Instructions)
				assert.Len(t, back.Entries, len(doc.Entries))
			}
		}
	}
}

// messagesOnly is a provider written to the documented contract and nothing
// more: it reads System and Messages, as any third-party adapter does, and
// answers with the transcript lines of the last user message, so that a
// request without the transcript in Messages gives a summary without it.
type messagesOnly struct{ got []*provider.Request }

func (p *messagesOnly) Complete(_ context.Context, req *provider.Request, _ func(string)) (*provider.Response, error) {
	p.got = append(p.got, req)
	var lines []string
	for _, m := range req.Messages {
		if m.Role != history.RoleUser {
			continue
		}
		for l := range strings.SplitSeq(m.Text, "\n") {
			if strings.HasPrefix(l, "[") {
				lines = append(lines, "- "+l)
			}
		}
	}
	return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: strings.Join(lines, "\n")}}, nil
}

// TestSummarize_ProviderReadingOnlyMessages: a provider that knows nothing
// about compaction gets an ordinary request, with the summarizer prompt in
// System and the whole transcript in Messages, and summarizes every message
// of the prefix.
func TestSummarize_ProviderReadingOnlyMessages(t *testing.T) {
	p := &messagesOnly{}
	prefix := []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "Build a CLI called falcon."},
		{ID: "2", Role: history.RoleAssistant, Text: "Reading.", ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: []byte(`{"path":"go.mod"}`)}}},
		{ID: "3", Role: history.RoleTool, ToolCallID: "c1", Text: "module falcon"},
		{ID: "4", Role: history.RoleAssistant, Text: "We use the flag package."},
	}
	sum, err := (&compact.Composer{Provider: p}).Summarize(context.Background(), compact.Input{PreviousSummary: "- earlier goal", Prefix: prefix}, nil)
	require.NoError(t, err)
	assert.Equal(t, `- [user] Build a CLI called falcon.
- [assistant] Reading.
- [assistant → tool read_file] {"path":"go.mod"}
- [tool read_file] module falcon
- [assistant] We use the flag package.`, sum.Text)

	require.Len(t, p.got, 1, "exactly one call")
	req := p.got[0]
	assert.Equal(t, provider.PurposeSummary, req.Purpose)
	assert.Equal(t, compact.SystemPrompt(), req.System)
	assert.Empty(t, req.Summary, "the previous summary is in the message, not in a turn's field")
	assert.Empty(t, req.Tools)
	require.Len(t, req.Messages, 1)
	assert.Equal(t, history.RoleUser, req.Messages[0].Role)
	assert.Contains(t, req.Messages[0].Text, "<previous-summary>\n- earlier goal\n</previous-summary>")
}

func BenchmarkRequest(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		prefix := make([]history.Message, n/2)
		for i := range prefix {
			role := history.RoleUser
			if i%2 == 1 {
				role = history.RoleAssistant
			}
			prefix[i] = history.Message{ID: "m", Role: role, Text: strings.Repeat("alpha bravo ", 42)}
		}
		b.Run(fmt.Sprintf("active=%d", n), func(b *testing.B) {
			c := &compact.Composer{Provider: offline.New()}
			b.ReportAllocs()
			for b.Loop() {
				req, err := c.Request(compact.Input{PreviousSummary: "earlier", Prefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				if len(req.Messages[0].Text) == 0 {
					b.Fatal("no input")
				}
			}
		})
	}
}

// The summary instructions ask the model to keep the paths of the files
// read and changed and the commands run with their outcome.
func TestSystemPromptKeepsFilesAndCommands(t *testing.T) {
	p := compact.SystemPrompt()
	assert.Contains(t, p, "the paths of the files that were read, and of the files that were created or changed")
	assert.Contains(t, p, "the commands that were run, each with its outcome")
}
