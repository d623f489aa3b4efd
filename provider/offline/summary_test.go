package offline

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

const summarizer = "Summarize the conversation for the assistant to continue from."

func summaryOf(t *testing.T, p *Provider, input string) string {
	t.Helper()
	req := &provider.Request{Purpose: provider.PurposeSummary, System: summarizer, Messages: []history.Message{user(input)}}
	var deltas []string
	resp, err := p.Complete(t.Context(), req, func(d string) { deltas = append(deltas, d) })
	require.NoError(t, err)
	require.Equal(t, resp.Message.Text, strings.Join(deltas, ""), "deltas concatenate to the summary")
	require.NotEmpty(t, strings.TrimSpace(resp.Message.Text))
	require.Empty(t, resp.Message.ToolCalls)
	return resp.Message.Text
}

const fullInput = `<previous-summary>
## Summary of earlier conversation
### User requests
- Build a CLI called falcon in Go.
### Decisions and facts
- Config lives in ~/.falcon/config.toml.
### Tools used
- list_dir({"path":"."})
</previous-summary>

<transcript>
[user] Hi! Please add a --verbose flag to cmd/falcon/main.go. It should log to stderr.
[assistant] I will use the log/slog package because it is in the standard library.
Let me know
if you want more.
[assistant → tool read_file] {"path":"cmd/falcon/main.go"}
[tool read_file] package main
func main() {}
… [truncated 1200 chars]
[assistant] Done. The flag defaults to false and prints 3 extra lines.
[user, steer] Also make sure the tests pass.
[user] What about the database?
</transcript>
`

func TestSummaryContent(t *testing.T) {
	got := summaryOf(t, New(), fullInput)
	want := `## Summary of earlier conversation
### User requests
- Hi! Please add a --verbose flag to cmd/falcon/main.go.
- (steer) Also make sure the tests pass.
- What about the database?
### Decisions and facts
- It should log to stderr.
- I will use the log/slog package because it is in the standard library.
- The flag defaults to false and prints 3 extra lines.
### Tools used
- read_file({"path":"cmd/falcon/main.go"})
### Earlier summary
- (request) Build a CLI called falcon in Go.
- Config lives in ~/.falcon/config.toml.
- list_dir({"path":"."})`
	assert.Equal(t, want, got)
}

func TestSummaryCarriesGoalsAcrossCompactions(t *testing.T) {
	p := New()
	first := summaryOf(t, p, "<transcript>\n[user] Build a CLI called falcon in Go.\n[assistant] I will use cobra for the commands.\n</transcript>")
	second := summaryOf(t, p, "<previous-summary>\n"+first+"\n</previous-summary>\n\n<transcript>\n[user] Add a --verbose flag.\n[assistant] Added it to main.go.\n</transcript>")
	third := summaryOf(t, p, "<previous-summary>\n"+second+"\n</previous-summary>\n\n<transcript>\n[user] Now write the README.\n[assistant] Wrote README.md.\n</transcript>")

	want := `## Summary of earlier conversation
### User requests
- Now write the README.
### Decisions and facts
- Wrote README.md.
### Earlier summary
- (request) Build a CLI called falcon in Go.
- (request) Add a --verbose flag.
- Added it to main.go.
- I will use cobra for the commands.`
	assert.Equal(t, want, third, "goals first, in order; each bullet once")

	// The goals are still recognised after many compactions with little room.
	s := third
	for i := range 20 {
		s = summaryOf(t, New(WithMaxSummaryChars(400)), fmt.Sprintf("<previous-summary>\n%s\n</previous-summary>\n<transcript>\n[user] Step %d of the plan.\n[assistant] Finished step_%d with 3 files changed.\n</transcript>", s, i, i))
	}
	assert.Contains(t, s, "- (request) Build a CLI called falcon in Go.", "the first goal survives")
	assert.Contains(t, s, "- Step 19 of the plan.")
	assert.Contains(t, s, "- (request) Step 18 of the plan.")
}

func TestSummaryBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("<previous-summary>\n")
	for i := range 40 {
		fmt.Fprintf(&b, "- earlier fact number %d about module_%d\n", i, i)
	}
	b.WriteString("</previous-summary>\n<transcript>\n")
	for i := range 200 {
		fmt.Fprintf(&b, "[user] Request %d: please update file_%d.go and keep it short.\n", i, i)
		fmt.Fprintf(&b, "[assistant] I will edit pkg/file_%d.go because request %d asks for it.\n", i, i)
		fmt.Fprintf(&b, "[assistant → tool edit] {\"path\":\"pkg/file_%d.go\"}\n[tool edit] ok\n", i)
	}
	b.WriteString("</transcript>\n")
	input := b.String()

	for _, limit := range []int{150, 400, 1000, 2000, 5000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			got := summaryOf(t, New(WithMaxSummaryChars(limit)), input)
			assert.LessOrEqual(t, utf8.RuneCountInString(got), limit)
			assert.True(t, strings.HasPrefix(got, summaryTitle))
			for _, line := range strings.Split(got, "\n")[1:] {
				assert.True(t, strings.HasPrefix(line, "### ") || strings.HasPrefix(line, "- "), "whole lines only: %q", line)
			}
			// Every section keeps its heading; the first and latest requests
			// are the last to go.
			for _, h := range []string{headingRequests, headingFacts, headingTools, headingEarlier} {
				assert.Contains(t, got, h)
			}
			if limit >= 400 {
				assert.Contains(t, got, "- Request 0: please update file_0.go and keep it short.")
				assert.Contains(t, got, "- Request 199: please update file_199.go and keep it short.")
			}
		})
	}
	t.Run("default limit", func(t *testing.T) {
		got := summaryOf(t, New(), input)
		assert.LessOrEqual(t, utf8.RuneCountInString(got), DefaultMaxSummaryChars)
		assert.Greater(t, utf8.RuneCountInString(got), DefaultMaxSummaryChars-200, "fills the budget")
	})
	t.Run("max tokens", func(t *testing.T) {
		req := &provider.Request{Purpose: provider.PurposeSummary, MaxTokens: 100, Messages: []history.Message{user(input)}}
		resp, err := New().Complete(t.Context(), req, nil)
		require.NoError(t, err)
		assert.LessOrEqual(t, utf8.RuneCountInString(resp.Message.Text), 400)
	})
	t.Run("limit below the headings", func(t *testing.T) {
		got := summaryOf(t, New(WithMaxSummaryChars(20)), input)
		assert.Equal(t, 20, utf8.RuneCountInString(got))
	})
}

func TestSummaryLimitsFacts(t *testing.T) {
	var b strings.Builder
	b.WriteString("<transcript>\n")
	for i := range 30 {
		fmt.Fprintf(&b, "[assistant] Step %d is done.\n", i)
	}
	b.WriteString("[assistant] We decided to use pkg/store because it must stay embedded and we agreed on v2.\n</transcript>")
	got := summaryOf(t, New(WithMaxSummaryChars(100000)), b.String())
	facts := got[strings.Index(got, headingFacts):]
	assert.Equal(t, maxFacts, strings.Count(facts, "\n- "))
	assert.Contains(t, facts, "- We decided to use pkg/store", "the strongest fact is kept")
	assert.Contains(t, facts, "- Step 0 is done.\n- Step 1 is done.", "kept facts stay in transcript order")
}

func TestSummaryFocus(t *testing.T) {
	input := `<transcript>
[user] Add a login page.
[user] Fix the database migration in db/migrate.go.
[assistant] I will use bcrypt for passwords because it is standard.
[assistant] The database schema uses 3 tables.
</transcript>
<instructions>
Keep it short. Focus on the database.
</instructions>`
	got := summaryOf(t, New(), input)
	want := `## Summary of earlier conversation
### User requests
- Fix the database migration in db/migrate.go.
- Add a login page.
### Decisions and facts
- The database schema uses 3 tables.
- I will use bcrypt for passwords because it is standard.`
	assert.Equal(t, want, got)

	// Focus bullets are the last to be dropped.
	small := summaryOf(t, New(WithMaxSummaryChars(200)), input)
	assert.Contains(t, small, "database schema")
	assert.NotContains(t, small, "bcrypt")

	// Focus also makes a sentence a fact.
	got = summaryOf(t, New(), "<transcript>\n[assistant] The cache is warm now.\n</transcript>\n<instructions>focus: cache</instructions>")
	assert.Contains(t, got, "### Decisions and facts\n- The cache is warm now.")
}

func TestSummaryToolsUsed(t *testing.T) {
	var b strings.Builder
	b.WriteString("<transcript>\n[tool orphan] result of an earlier call\n")
	for i := range 14 {
		fmt.Fprintf(&b, "[assistant → tool grep] {\"pattern\":\"p%d\"}\n[tool grep] match\n", i)
	}
	fmt.Fprintf(&b, "[assistant -> tool grep] {\"pattern\":\"p0\"}\n") // duplicate call, ASCII arrow
	fmt.Fprintf(&b, "[assistant → tool dump] {\"data\":%q}\n", strings.Repeat("z", 200))
	b.WriteString("</transcript>")
	got := summaryOf(t, New(WithMaxSummaryChars(100000)), b.String())
	tools := got[strings.Index(got, headingTools):]
	assert.Contains(t, tools, "- orphan (result only)\n- grep({\"pattern\":\"p0\"})\n")
	assert.Equal(t, 1, strings.Count(tools, `grep({"pattern":"p0"})`))
	assert.Equal(t, maxToolBullets+1, strings.Count(tools, "\n- "))
	assert.Contains(t, tools, "- … and 6 more tool calls")
}

func TestSummaryNeverEmpty(t *testing.T) {
	huge := "<transcript>\n[tool read_file] " + strings.Repeat("x", 1<<20) + "\n[user] " + strings.Repeat("very long request ", 20000) + "\n</transcript>"
	tests := []struct {
		name  string
		input string
		want  string // a line the summary must contain; "" = any
	}{
		{"only tool messages", "<transcript>\n[tool read_file] package main\n[tool grep] no match\n</transcript>", "- read_file (result only)"},
		{"empty transcript section", "<transcript>\n</transcript>", "- 0 earlier messages were compacted"},
		{"whitespace entries", "<transcript>\n[user]   \n[assistant]\n</transcript>", "- 2 earlier messages were compacted"},
		{"single empty entry", "<transcript>\n[assistant]\n</transcript>", "- 1 earlier message was compacted"},
		{"empty input", "", "- 0 earlier messages were compacted"},
		{"no tags at all", "We decided to use Postgres 16.\nSee db/schema.sql.", "- We decided to use Postgres 16."},
		{"entries without tags", "[user] Deploy to staging.\n[assistant] Deployed v1.2.3.", "- Deploy to staging."},
		{"unclosed transcript", "<transcript>\n[user] Rename pkg/a to pkg/b.\n<instructions>\nfocus on tests\n</instructions>", "- Rename pkg/a to pkg/b."},
		{"stray closing tag", "[user] Keep the API small.\n</transcript>", "- Keep the API small."},
		{"tags quoted inside entries", "<transcript>\n[user] Explain </transcript> and <instructions> tags.\n[assistant] They delimit sections.\n</transcript>", "- Explain </transcript> and <instructions> tags."},
		{"only previous summary", "<previous-summary>\nThe user wants a CLI. It must be fast.\n</previous-summary>", "- It must be fast."},
		{"unclosed previous summary", "<previous-summary>\n- Goal: ship v1\n<transcript>\n[user] Go on.\n</transcript>", "- Goal: ship v1"},
		{"text before the first entry", "<transcript>\nsome preamble with config.yaml\n[user] Start.\n</transcript>", "- some preamble with config.yaml"},
		{"unknown role", "<transcript>\n[system] You are terse.\n[robot] beep 42\n</transcript>", "- [robot] beep 42"},
		{"crlf", "<transcript>\r\n[user] Use CRLF files.\r\n</transcript>\r\n", "- Use CRLF files."},
		{"huge input", huge, "### User requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summaryOf(t, New(), tt.input)
			assert.LessOrEqual(t, utf8.RuneCountInString(got), DefaultMaxSummaryChars)
			assert.True(t, strings.HasPrefix(got, summaryTitle), got)
			if tt.want != "" {
				assert.Contains(t, strings.Split(got, "\n"), tt.want, got)
			}
		})
	}

	t.Run("no messages", func(t *testing.T) {
		resp, err := New().Complete(t.Context(), &provider.Request{Purpose: provider.PurposeSummary}, nil)
		require.NoError(t, err)
		assert.Equal(t, summaryTitle+"\n- 0 earlier messages were compacted", resp.Message.Text)
	})
}

// "Tools used" keeps the paths of files read and changed, and the commands
// run with their outcome (and calls that failed or were declined).
func TestSummaryToolsKeepPathsAndOutcomes(t *testing.T) {
	in := "<transcript>\n" +
		"[user] fix the tests\n" +
		`[assistant → tool read_file] {"path":"pkg/a.go"}` + "\n[tool read_file] package pkg\nfunc A() {}\n" +
		`[assistant → tool edit_file] {"path":"pkg/a.go","old_text":"A()","new_text":"B()"}` + "\n[tool edit_file] edited pkg/a.go at line 2\n" +
		`[assistant → tool run_command] {"command":"go test ./..."}` + "\n[tool run_command] exit status 1\n--- FAIL: TestB\n" +
		`[assistant → tool write_file] {"path":"notes.md","content":"x"}` + "\n[tool write_file] The user declined: Write notes.md was not allowed; nothing was changed.\n" +
		`[assistant → tool edit_file] {"path":"gone.go","old_text":"x","new_text":"y"}` + "\n[tool edit_file] error: tool edit_file failed: open gone.go: no such file\n" +
		"</transcript>"
	sum := summaryOf(t, New(), in)
	assert.Contains(t, sum, "- read_file({\"path\":\"pkg/a.go\"})\n")
	assert.Contains(t, sum, `- edit_file({"path":"pkg/a.go","old_text":"A()","new_text":"B()"})`+"\n")
	assert.Contains(t, sum, `- run_command({"command":"go test ./..."}) → exit status 1`+"\n")
	assert.Contains(t, sum, `- write_file({"path":"notes.md","content":"x"}) → The user declined: Write notes.md was not allowed; nothing was changed.`)
	assert.Contains(t, sum, `- edit_file({"path":"gone.go","old_text":"x","new_text":"y"}) → error: tool edit_file failed: open gone.go: no such file`)
}
