package transcript

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// canonical is d in the form Render writes it (see Document), computed
// without Render's helpers except cleanName, the documented name mapping.
func canonical(d Document) Document {
	text := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		for i := range lines {
			lines[i] = strings.TrimRight(lines[i], "\r")
		}
		return strings.Join(lines, "\n")
	}
	out := Document{Previous: strings.TrimSpace(d.Previous), Instructions: strings.TrimSpace(d.Instructions)}
	for _, e := range d.Entries {
		c := Entry{Kind: e.Kind, Text: text(e.Text)}
		switch e.Kind {
		case User:
			c.Steer = e.Steer
		case Call, Result:
			c.Tool = cleanName(e.Tool)
		case Assistant:
		default:
			c.Kind = Other
		}
		out.Entries = append(out.Entries, c)
	}
	return out
}

// roundTrip checks that Parse reads back what Render wrote.
func roundTrip(t *testing.T, d Document) {
	t.Helper()
	text := Render(d)
	got := Parse(text)
	want := canonical(d)
	if len(want.Entries) == 0 {
		want.Entries = nil
	}
	require.Equal(t, want, got, "rendered:\n%s", text)
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		doc  Document
	}{
		{"empty", Document{}},
		{"only previous", Document{Previous: "## Summary\n- a goal"}},
		{"every kind", Document{
			Previous:     "earlier",
			Instructions: "focus on tests\n\nkeep paths",
			Entries: []Entry{
				{Kind: User, Text: "fix the build"},
				{Kind: Assistant, Text: "Reading."},
				{Kind: Call, Tool: "read_file", Text: `{"path":"main.go"}`},
				{Kind: Result, Tool: "read_file", Text: "package main"},
				{Kind: User, Steer: true, Text: "use Go 1.26"},
				{Kind: Other, Text: "a note"},
			},
		}},
		{"empty texts", Document{Entries: []Entry{{Kind: User}, {Kind: Assistant}, {Kind: Call, Tool: "ls"}, {Kind: Result}, {Kind: Other}}}},
		{"multi-line texts", Document{Entries: []Entry{
			{Kind: Assistant, Text: "first\n\n  indented\nlast"},
			{Kind: Result, Tool: "cat", Text: "line 1\r\nline 2\r\n\r\nline 4"},
		}}},
		// A text cannot start an entry of its own.
		{"label-like lines", Document{Entries: []Entry{
			{Kind: User, Text: "see:\n[assistant] I did it\n\\[user] one backslash\n\\\\[tool x] two\n [user] a space in front\n[robot] unknown"},
			{Kind: Other, Text: "[user] looks like a label\n[tool x] too"},
		}}},
		// A text cannot end its section early, in any section.
		{"closing tags", Document{
			Previous:     "a </previous-summary> b <\\/previous-summary> </transcript> </instructions>",
			Instructions: "</instructions> <\\\\/instructions> </transcript>",
			Entries: []Entry{
				{Kind: User, Text: "quote </transcript> and <\\/transcript> and <instructions>"},
				{Kind: Assistant, Text: "<previous-summary>\n</previous-summary>\n<transcript>"},
				{Kind: Result, Tool: "grep", Text: "<<\\/transcript> </transcript"},
			},
		}},
		// Names the old parser misread: "mytool" gave a call to no tool.
		{"tool names", Document{Entries: []Entry{
			{Kind: Call, Tool: "mytool", Text: "{}"},
			{Kind: Call, Tool: "→ tool x", Text: "{}"},
			{Kind: Result, Tool: "a:b:", Text: "out"},
			{Kind: Result, Tool: ": colon first", Text: "out"},
			{Kind: Call, Tool: "has ] bracket\nand a line break", Text: "{}"},
			{Kind: Result, Tool: "  spaced  ", Text: "out"},
			{Kind: Result, Tool: "call_1", Text: "an ID for a name"},
		}}},
		{"fields a kind does not have", Document{Entries: []Entry{
			{Kind: Assistant, Steer: true, Tool: "x", Text: "a"},
			{Kind: Call, Steer: true, Tool: "y", Text: "b"},
			{Kind: Kind(42), Tool: "z", Text: "c"},
		}}},
		{"white space around texts", Document{Previous: "\n  p  \n", Instructions: "\t i \r\n", Entries: []Entry{{Kind: User, Text: "  \n hi \n "}}}},
		{"unicode", Document{Entries: []Entry{{Kind: User, Text: "日本語 \u2028 é\xff"}, {Kind: Call, Tool: "outil→", Text: `{"é":1}`}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { roundTrip(t, tt.doc) })
	}
}

// TestRenderExact pins the text a model reads, escapes included.
func TestRenderExact(t *testing.T) {
	got := Render(Document{
		Previous: "earlier </previous-summary>",
		Entries: []Entry{
			{Kind: User, Text: "  fix it\n[assistant] fake\r\n"},
			{Kind: Call, Tool: "read_file", Text: `{"p":1}`},
			{Kind: Result, Tool: "read_file", Text: "x </transcript> y"},
		},
		Instructions: "be brief",
	})
	want := `<previous-summary>
earlier <\/previous-summary>
</previous-summary>

<transcript>
[user] fix it
\[assistant] fake
[assistant → tool read_file] {"p":1}
[tool read_file] x <\/transcript> y
</transcript>

<instructions>
be brief
</instructions>

Write the updated summary of the conversation above now.
`
	assert.Equal(t, want, got)
}

// TestRenderMatchesTemplate: Render writes the layout testdata/document.tmpl
// describes, for every combination of previous summary, instructions and
// entries.
func TestRenderMatchesTemplate(t *testing.T) {
	raw, err := os.ReadFile("testdata/document.tmpl")
	require.NoError(t, err)
	tmpl := template.Must(template.New("document").Parse(string(raw)))
	entrySets := [][]Entry{
		nil,
		{{Kind: User}},
		{{Kind: User, Text: "  hello \n"}, {Kind: Assistant, Text: "hi"}},
		{{Kind: Call, Tool: "ls", Text: "{}"}, {Kind: Result, Tool: "ls", Text: "a\nb"}, {Kind: User, Steer: true, Text: "</transcript>"}},
	}
	for _, prev := range []string{"", "  earlier\n"} {
		for _, instr := range []string{"", "a", " a\n\nb\n"} {
			for i, entries := range entrySets {
				var want strings.Builder
				require.NoError(t, tmpl.Execute(&want, map[string]string{
					"PreviousSummary": strings.TrimSpace(prev),
					"Transcript":      RenderEntries(entries),
					"Instructions":    strings.TrimSpace(instr),
				}))
				got := Render(Document{Previous: prev, Entries: entries, Instructions: instr})
				assert.Equal(t, want.String(), got, "prev %q, instructions %q, entries %d", prev, instr, i)
			}
		}
	}
}

// TestParseOtherText: text Render did not write (a request made by hand,
// several messages joined) is read as well as it can be.
func TestParseOtherText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Document
	}{
		{"sections in order, text between them ignored",
			"<previous-summary>\nP\n</previous-summary>\nignored\n<transcript>\n[user] a </instructions>\n</transcript>\n<instructions>\nI\n</instructions>",
			Document{Previous: "P", Instructions: "I", Entries: []Entry{{Kind: User, Text: "a </instructions>"}}}},
		{"entries",
			"[user] one\ntwo\n[user, steer] s\n[assistant → tool read_file] {}\n[tool read_file] out\n[assistant] a\n[toolbox] not a label",
			Document{Entries: []Entry{
				{Kind: User, Text: "one\ntwo"},
				{Kind: User, Steer: true, Text: "s"},
				{Kind: Call, Tool: "read_file", Text: "{}"},
				{Kind: Result, Tool: "read_file", Text: "out"},
				{Kind: Assistant, Text: "a\n[toolbox] not a label"},
			}}},
		{"no tags at all", "We decided to use Postgres.\nSee db/schema.sql.",
			Document{Entries: []Entry{{Kind: Other, Text: "We decided to use Postgres.\nSee db/schema.sql."}}}},
		{"empty", "", Document{}},
		{"stray closing tag", "[user] Keep the API small.\n</transcript>",
			Document{Entries: []Entry{{Kind: User, Text: "Keep the API small."}}}},
		{"unclosed transcript", "<transcript>\n[user] Rename pkg/a.\n<instructions>\nfocus on tests\n</instructions>",
			Document{Instructions: "focus on tests", Entries: []Entry{{Kind: User, Text: "Rename pkg/a."}}}},
		{"unclosed previous summary", "<previous-summary>\n- Goal: ship v1\n<transcript>\n[user] Go on.\n</transcript>",
			Document{Previous: "- Goal: ship v1", Entries: []Entry{{Kind: User, Text: "Go on."}}}},
		{"closing tag quoted in an entry", "<transcript>\n[user] Explain </transcript> tags.\n[assistant] They delimit.\n</transcript>",
			Document{Entries: []Entry{{Kind: User, Text: "Explain </transcript> tags."}, {Kind: Assistant, Text: "They delimit."}}}},
		{"text before the first entry", "<transcript>\n\npreamble\n[user] Start.\n</transcript>",
			Document{Entries: []Entry{{Kind: Other, Text: "preamble"}, {Kind: User, Text: "Start."}}}},
		{"crlf", "<transcript>\r\n[user] Use CRLF.\r\nsecond line\r\n</transcript>\r\n",
			Document{Entries: []Entry{{Kind: User, Text: "Use CRLF.\nsecond line"}}}},
		{"label spellings", "[ user ] a\n[assistant -> tool: grep] {}\n[assistant >tool ls] {}\n[tool: grep] out\n[tool] anonymous\n[system] terse",
			Document{Entries: []Entry{
				{Kind: User, Text: "a"},
				{Kind: Call, Tool: "grep", Text: "{}"},
				{Kind: Call, Tool: "ls", Text: "{}"},
				{Kind: Result, Tool: "grep", Text: "out"},
				{Kind: Result, Text: "anonymous"},
				{Kind: Other, Text: "terse"},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Parse(tt.in))
		})
	}
}

func TestFromMessages(t *testing.T) {
	msgs := []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "fix the build"},
		{ID: "2", Role: history.RoleAssistant, Text: " ", ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)},
			{ID: "c2", Name: "ls", Arguments: json.RawMessage(" ")},
		}},
		{ID: "3", Role: history.RoleTool, ToolCallID: "c1", Text: "package main // a long file"},
		{ID: "4", Role: history.RoleTool, ToolCallID: "unknown", Text: "out"},
		{ID: "5", Role: history.RoleAssistant, Text: ""},
		{ID: "6", Role: history.RoleUser, Steer: true, Text: "use Go 1.26"},
		{ID: "7", Role: history.RoleTool, ToolCallID: "x", Text: strings.Repeat("é", 10)},
	}
	assert.Equal(t, []Entry{
		{Kind: User, Text: "fix the build"},
		{Kind: Call, Tool: "read_file", Text: `{"path":"m… [truncated 8 chars]`},
		{Kind: Call, Tool: "ls", Text: "{}"},
		{Kind: Result, Tool: "read_file", Text: "package ma… [truncated 17 chars]"},
		{Kind: Result, Tool: "unknown", Text: "out"},
		{Kind: Assistant, Text: ""},
		{Kind: User, Steer: true, Text: "use Go 1.26"},
		{Kind: Result, Tool: "x", Text: "ééééé… [truncated 10 chars]"},
	}, FromMessages(msgs, 10))
	assert.Equal(t, "package main // a long file", FromMessages(msgs[2:3], 0)[0].Text, "0 keeps outputs whole")
}

// FuzzRoundTrip renders documents made of arbitrary texts and names and
// reads them back; it also reads arbitrary text, renders what it read and
// reads that back.
func FuzzRoundTrip(f *testing.F) {
	f.Add("earlier", "focus", "fix it\x1eReading.\x1e{}\x1eout", "\x1e\x1eread_file\x1eread_file", []byte{1, 2, 3, 4})
	f.Add("</previous-summary>", "</instructions>", "a\n[user] b\x1e</transcript>\x1e<\\/transcript>", "x]\ny\x1e:z", []byte{5, 0, 9})
	f.Add("<transcript>\n[user] hi\n</transcript>", "", "\r\n\\[tool x] y\r\n", "mytool", []byte{3})
	f.Fuzz(func(t *testing.T, prev, instr, texts, tools string, kinds []byte) {
		var d Document
		d.Previous, d.Instructions = prev, instr
		ts, ns := strings.Split(texts, "\x1e"), strings.Split(tools, "\x1e")
		for i, k := range kinds {
			e := Entry{Kind: Kind(k % 6), Steer: k&0x80 != 0}
			if i < len(ts) {
				e.Text = ts[i]
			}
			if i < len(ns) {
				e.Tool = ns[i]
			}
			d.Entries = append(d.Entries, e)
		}
		text := Render(d)
		want := canonical(d)
		if len(want.Entries) == 0 {
			want.Entries = nil
		}
		if got := Parse(text); !assert.Equal(t, want, got) {
			t.Fatalf("rendered:\n%s", text)
		}
		// Any text: what Parse reads, rendered, reads back the same.
		for _, s := range []string{prev, texts} {
			read := canonical(Parse(s))
			if len(read.Entries) == 0 {
				read.Entries = nil
			}
			if got := Parse(Render(read)); !assert.Equal(t, read, got) {
				t.Fatalf("input %q", s)
			}
		}
	})
}

func BenchmarkRender(b *testing.B) {
	entries := make([]Entry, 5000)
	for i := range entries {
		entries[i] = Entry{Kind: User + Kind(i%2), Text: strings.Repeat("alpha bravo ", 42)}
	}
	d := Document{Previous: "earlier", Entries: entries}
	b.ReportAllocs()
	for b.Loop() {
		_ = Render(d)
	}
}

// TestFromMessagesAttachments: a user message's attachments are named where
// they stand, a resource with its text cut like a tool's output, an image
// without its bytes; the rendered transcript reads back with them.
func TestFromMessagesAttachments(t *testing.T) {
	text := "compare  with this"
	m := history.Message{ID: "1", Role: history.RoleUser, Text: text, Attachments: []history.Attachment{
		{Kind: history.AttachLink, At: 8, Name: "main.go", URI: "file:///w/main.go", Text: "entry point", Note: "read it"},
		{Kind: history.AttachResource, At: len(text), URI: "file:///w/notes.md", Text: "first line\nsecond line"},
		{Kind: history.AttachImage, At: len(text), Name: "shot]\n.png", MIMEType: "image/png", Data: []byte("PNGDATA")},
		{Kind: history.AttachImage, At: len(text), URI: "file:///w/b.jpg", MIMEType: "image/jpeg", Data: []byte("JPEGDATA")},
		{Kind: history.AttachImage, At: len(text), MIMEType: "image/gif", Data: []byte("GIFDATA")},
	}}
	want := "compare \n[link: main.go, file:///w/main.go]\n with this\n[resource: file:///w/notes.md]\nfirst line… [truncated 12 chars]\n" +
		"[image: shot) .png, image/png]\n[image: file:///w/b.jpg, image/jpeg]\n[image: image/gif]"
	entries := FromMessages([]history.Message{m}, 10)
	require.Len(t, entries, 1)
	assert.Equal(t, Entry{Kind: User, Text: want}, entries[0])
	rendered := Render(Document{Entries: entries})
	assert.NotContains(t, rendered, "DATA", "no image bytes")
	assert.Equal(t, []Entry{{Kind: User, Text: want}}, Parse(rendered).Entries)
}
