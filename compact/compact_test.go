package compact_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"text/template"

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

// TestRequestMatchesTemplate: the summary input Request writes by hand is
// the one testdata/input.tmpl renders, for every combination of previous
// summary, instructions and prefix.
func TestRequestMatchesTemplate(t *testing.T) {
	raw, err := os.ReadFile("testdata/input.tmpl")
	require.NoError(t, err)
	tmpl := template.Must(template.New("input").Parse(string(raw)))
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
				var want strings.Builder
				require.NoError(t, tmpl.Execute(&want, map[string]string{
					"PreviousSummary": strings.TrimSpace(prev),
					"Transcript":      compact.Transcript(prefix, 50),
					"Instructions":    strings.Join(joined, "\n\n"),
				}))
				assert.Empty(t, req.Messages)
				assert.Equal(t, want.String(), req.Input.String(), "prev %q, instructions %q, prefix %d", prev, instr, i)
				for _, size := range []int{1, 7, 4096} {
					assert.Equal(t, want.String(), readAll(t, req.Input.NewReader(), size), "read %d bytes at a time", size)
				}
			}
		}
	}
}

// readAll reads r to its end size bytes at a time.
func readAll(t *testing.T, r io.Reader, size int) string {
	t.Helper()
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return string(out)
		}
		require.NoError(t, err)
	}
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
			buf := make([]byte, 16<<10)
			for b.Loop() {
				req, err := c.Request(compact.Input{PreviousSummary: "earlier", Prefix: prefix})
				if err != nil {
					b.Fatal(err)
				}
				// Read it as a streaming provider does.
				r := req.Input.NewReader()
				for {
					if _, err := r.Read(buf); err == io.EOF {
						break
					}
				}
			}
		})
	}
}
