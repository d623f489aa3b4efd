package offline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

var demoTools = []provider.ToolSpec{
	{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "read", Parameters: json.RawMessage(`{"type":"object","properties":{"what":{"type":"string"}}}`)},
	{Name: "get-weather", Parameters: json.RawMessage(`{"type":"object","properties":{
		"city":{"type":"string"},
		"unit":{"type":"string","enum":["celsius","fahrenheit"]},
		"days":{"type":"integer"},
		"detailed":{"type":"boolean"}},"required":["city","days"]}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":["string","null"]},"limit":{"type":"number"},"tags":{"type":"array"}}}`)},
	{Name: "now"},
	{Name: "ls", Parameters: json.RawMessage(`not json`)},
	{Name: "rename", Parameters: json.RawMessage(`{"properties":{"from":{"type":"string"},"to":{"type":"string"}},"required":["from","to"]}`)},
}

func TestTurnToolCall(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantTool string // "" = no tool call
		wantArgs string
	}{
		{"exact name", "Please read_file main.go", "read_file", `{"path":"main.go"}`},
		{"underscores as spaces", "Can you READ FILE cmd/app/main.go for me?", "read_file", `{"path":"cmd/app/main.go"}`},
		{"longest name on a tie", "read file docs/README.md", "read_file", `{"path":"docs/README.md"}`},
		{"shorter name alone", "read the docs", "read", `{"what":"the docs"}`},
		{"explicit value", "read_file path: internal/x.go please", "read_file", `{"path":"internal/x.go"}`},
		{"quoted value", `read_file "my notes.txt"`, "read_file", `{"path":"my notes.txt"}`},
		{"hyphens as spaces, enum, required integer", "What's the get weather for Paris in fahrenheit for 3 days?", "get-weather", `{"city":"Paris","unit":"fahrenheit","days":3}`},
		{"explicit boolean and integer", "get-weather city=Oslo days=2 detailed: yes", "get-weather", `{"city":"Oslo","days":2,"detailed":true}`},
		{"required integer without a number", "get-weather for Rome", "get-weather", `{"city":"Rome","days":0}`},
		{"text after for", "search for golang generics please.", "search", `{"query":"golang generics"}`},
		{"text after colon", "search: rust traits", "search", `{"query":"rust traits"}`},
		{"optional number", `search "sqlite wal" limit: 5`, "search", `{"query":"sqlite wal","limit":5}`},
		{"no properties", "what time is it now", "now", `{}`},
		{"invalid schema", "ls", "ls", `{}`},
		{"two strings from quotes", `rename "a.go" to "b.go"`, "rename", `{"from":"a.go","to":"b.go"}`},
		{"word boundaries", "I read_files daily and also like lsd", "", ""},
		{"no tool named", "tell me a story", "", ""},
		{"earliest mention wins", "search, then read_file x.go", "search", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkToolCall(t, demoTools, tt.text, tt.wantTool, tt.wantArgs) })
	}
}

// checkToolCall checks the reply to text with tools: one call of wantTool
// with wantArgs (any when ""), or no call when wantTool is "".
func checkToolCall(t *testing.T, tools []provider.ToolSpec, text, wantTool, wantArgs string) {
	t.Helper()
	req := &provider.Request{Purpose: provider.PurposeTurn, Tools: tools, Messages: []history.Message{user(text)}}
	resp, err := New().Complete(t.Context(), req, nil)
	require.NoError(t, err)
	if wantTool == "" {
		assert.Empty(t, resp.Message.ToolCalls)
		return
	}
	require.Len(t, resp.Message.ToolCalls, 1)
	call := resp.Message.ToolCalls[0]
	assert.Equal(t, wantTool, call.Name)
	assert.Equal(t, "Calling "+wantTool+".", resp.Message.Text)
	assert.Regexp(t, `^call_[0-9a-f]{12}$`, call.ID)
	require.True(t, json.Valid(call.Arguments), "%s", call.Arguments)
	if wantArgs != "" {
		assert.Equal(t, wantArgs, string(call.Arguments))
	}
	msg := resp.Message
	msg.ID = "m1"
	assert.NoError(t, msg.Validate())
}

func TestTurnToolCallOnlyForLastUserMessage(t *testing.T) {
	tools := demoTools[:1]
	// Without declared tools, naming one is just text.
	resp, err := New().Complete(t.Context(), &provider.Request{Messages: []history.Message{user("read_file main.go")}}, nil)
	require.NoError(t, err)
	assert.Empty(t, resp.Message.ToolCalls)

	// A request ending with an assistant message does not call tools.
	resp, err = New().Complete(t.Context(), &provider.Request{Tools: tools, Messages: []history.Message{user("read_file main.go"), assistant("done")}}, nil)
	require.NoError(t, err)
	assert.Empty(t, resp.Message.ToolCalls)
}

func TestTurnToolCallIDs(t *testing.T) {
	req := func(texts ...string) *provider.Request {
		r := &provider.Request{Tools: demoTools}
		for _, s := range texts {
			r.Messages = append(r.Messages, user(s))
		}
		return r
	}
	id := func(r *provider.Request) string {
		resp, err := New().Complete(t.Context(), r, nil)
		require.NoError(t, err)
		require.Len(t, resp.Message.ToolCalls, 1)
		return resp.Message.ToolCalls[0].ID
	}
	a := id(req("read_file a.go"))
	assert.Equal(t, a, id(req("read_file a.go")), "same request, same ID")
	assert.NotEqual(t, a, id(req("read_file b.go")))
	assert.NotEqual(t, a, id(req("hello", "read_file a.go")))
}

func TestTurnToolResults(t *testing.T) {
	long := strings.Repeat("x", 300)
	msgs := []history.Message{
		user("read both"),
		{Role: history.RoleAssistant, Text: "Calling read_file.", ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
			{ID: "c2", Name: "search", Arguments: json.RawMessage(`{}`)},
		}},
		{Role: history.RoleTool, ToolCallID: "c1", Text: "package a\n\nfunc A() {}"},
		{Role: history.RoleTool, ToolCallID: "c2", Text: long},
		{Role: history.RoleTool, ToolCallID: "c3", Text: ""},
	}
	resp, err := New().Complete(t.Context(), &provider.Request{Tools: demoTools, Messages: msgs}, nil)
	require.NoError(t, err)
	assert.Empty(t, resp.Message.ToolCalls)
	lines := strings.Split(resp.Message.Text, "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "read_file returned: package a func A() {}", lines[0])
	assert.Equal(t, "search returned: "+strings.Repeat("x", 199)+"…", lines[1])
	assert.Equal(t, "Tool call c3 returned nothing.", lines[2])
}

func TestTurnAnswerFromConversation(t *testing.T) {
	conv := []history.Message{
		user("My name is Ada. I live in Paris."),
		assistant("Noted: My name is Ada. I live in Paris.\n(1 message in context; no summary of earlier conversation)"),
		user("We decided to use SQLite for storage because it is embedded."),
		{Role: history.RoleAssistant, Text: "Calling read_file.", ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"main.go"}`)}}},
		{Role: history.RoleTool, ToolCallID: "c1", Text: "package main\n\nconst Port = 8080"},
		assistant("read_file returned: package main const Port = 8080"),
		user("Actually I moved: I live in Berlin now."),
		user("What is my name?"), // an earlier question is never the answer
	}
	summary := "## Summary of earlier conversation\n### User requests\n- The project is called Falcon.\n### Decisions and facts\n- Deploy on Fridays is forbidden.\n### Earlier summary\n- (request) Use the MIT license."
	tests := []struct {
		name, question, want string
	}{
		{"user statement", "What is my name?", `Earlier you said: "My name is Ada."`},
		{"most recent of equal matches", "Where do I live?", `Earlier you said: "Actually I moved: I live in Berlin now."`},
		{"remember without question mark", "remember the storage decision", `Earlier you said: "We decided to use SQLite for storage because it is embedded."`},
		{"from the retained summary", "What is the project called?", `From the summary of earlier conversation: "The project is called Falcon."`},
		{"carried-over goal without its marker", "Which license?", `From the summary of earlier conversation: "Use the MIT license."`},
		{"from a tool result", "which port", `Earlier read_file returned: "const Port = 8080"`},
		{"nothing matches", "what is the colour of the sky?", "I found nothing earlier in the conversation about: what is the colour of the sky?\n(9 messages in context; a summary of earlier conversation is present)"},
		{"only stopwords", "what is it?", "I found nothing earlier in the conversation about: what is it?\n(9 messages in context; a summary of earlier conversation is present)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := append(append([]history.Message{}, conv...), user(tt.question))
			resp, err := New().Complete(t.Context(), &provider.Request{Summary: summary, Messages: msgs}, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Message.Text)
		})
	}
}

func TestTurnAcknowledge(t *testing.T) {
	tests := []struct {
		name    string
		summary string
		msgs    []history.Message
		want    string
	}{
		{"first sentence", "", []history.Message{user("Refactor   the\nparser. Then add tests for it, including the edge cases with empty input.")},
			"Noted: Refactor the parser. Then add tests for it, including the edge cases with empty input.\n(1 message in context; no summary of earlier conversation)"},
		{"with summary", "- earlier", []history.Message{user("a"), assistant("b"), user("Use tabs.")},
			"Noted: Use tabs.\n(3 messages in context; a summary of earlier conversation is present)"},
		{"steer", "", []history.Message{{Role: history.RoleUser, Steer: true, Text: "Also update the docs."}},
			"Noted: Also update the docs.\n(1 message in context; no summary of earlier conversation)"},
		{"empty user text", "", []history.Message{user("  ")},
			"Noted: (an empty message)\n(1 message in context; no summary of earlier conversation)"},
		{"no messages", "", nil,
			"There is no user request to answer yet.\n(0 messages in context; no summary of earlier conversation)"},
		{"ends with assistant", "", []history.Message{user("Ship it."), assistant("Shipped.")},
			"Noted: Ship it.\n(2 messages in context; no summary of earlier conversation)"},
		{"long request", "", []history.Message{user(strings.Repeat("word ", 100))},
			"Noted: " + strings.TrimSpace(strings.Repeat("word ", 32)) + "…\n(1 message in context; no summary of earlier conversation)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := New().Complete(t.Context(), &provider.Request{Summary: tt.summary, Messages: tt.msgs}, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Message.Text)
		})
	}
}

// Rule 2: an edit, a command or a file asked for without naming the tool.
func TestTurnIntents(t *testing.T) {
	workspaceTools := []provider.ToolSpec{
		{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"start_line":{"type":"integer"}},"required":["path"]}`)},
		{Name: "edit_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}}}`)},
		{Name: "run_command", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout_seconds":{"type":"integer"}}}`)},
	}
	tests := []struct {
		name, text, wantTool, wantArgs string
	}{
		{"a file named", "What does notes.txt say about the release?", "read_file", `{"path":"notes.txt"}`},
		{"a path named", "Look at (cmd/app/main.go) first", "read_file", `{"path":"cmd/app/main.go"}`},
		{"replace, quoted", `Please replace "March" with "April" in notes.txt.`, "edit_file", `{"path":"notes.txt","old_text":"March","new_text":"April"}`},
		{"replace, backquoted with spaces", "replace `x := 1` with `x := 2` in pkg/a.go", "edit_file", `{"path":"pkg/a.go","old_text":"x := 1","new_text":"x := 2"}`},
		{"replace, bare words", "replace foo with bar in main.go", "edit_file", `{"path":"main.go","old_text":"foo","new_text":"bar"}`},
		{"run", "now run `go test ./...` please", "run_command", `{"command":"go test ./..."}`},
		{"run before the file it names", "run `cat notes.txt`", "run_command", `{"command":"cat notes.txt"}`},
		{"a version is no file", "we ship v1.2 on Friday", "", ""},
		{"no file", "tell me a story", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkToolCall(t, workspaceTools, tt.text, tt.wantTool, tt.wantArgs) })
	}
	// Without the tools, the same text is answered as before.
	resp, err := New().Complete(t.Context(), &provider.Request{Purpose: provider.PurposeTurn, Messages: []history.Message{user("replace foo with bar in main.go")}}, nil)
	require.NoError(t, err)
	assert.Empty(t, resp.Message.ToolCalls)
}

// TestAttachmentsAreText: the offline model takes no images; it reads a
// user message's attachments as text where they stand, without changing
// the request it was given.
func TestAttachmentsAreText(t *testing.T) {
	p := New()
	assert.False(t, provider.TakesImages(p))
	msgs := []history.Message{{ID: "u1", Role: history.RoleUser, Text: "see", Attachments: []history.Attachment{
		{Kind: history.AttachLink, At: 3, Name: "a.go", URI: "file:///w/a.go"},
		{Kind: history.AttachImage, At: 3, Name: "x.png", MIMEType: "image/png", Data: []byte{1}},
	}}}
	req := &provider.Request{Purpose: provider.PurposeTurn, Messages: msgs}
	resp, err := p.Complete(t.Context(), req, nil)
	require.NoError(t, err)
	assert.Contains(t, resp.Message.Text, "see [a.go](file:///w/a.go) [image: x.png, image/png]")
	assert.Len(t, req.Messages[0].Attachments, 2, "the request is not changed")
	assert.Equal(t, "see", req.Messages[0].Text)
}

// TestTurnListFiles: a request to list files calls the listing tool with
// the directory it names or none; the words of the request, and the tool's
// own name, are never taken for its path.
func TestTurnListFiles(t *testing.T) {
	tools := []provider.ToolSpec{
		{Name: "read_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "list_files", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}
	for text, want := range map[string]string{
		"Use list_files":                   `{}`,
		"Call list_files.":                 `{}`,
		"Use `list_files` please":          `{}`,
		"list_files in src":                `{"path":"src"}`,
		"Please list the files":            `{}`,
		"What files are there?":            `{}`,
		"Please list the files in src/app": `{"path":"src/app"}`,
	} {
		r := turnReply(&provider.Request{Purpose: provider.PurposeTurn, Messages: []history.Message{{Role: history.RoleUser, Text: text}}, Tools: tools})
		if assert.Len(t, r.ToolCalls, 1, text) {
			assert.Equal(t, "list_files", r.ToolCalls[0].Name, text)
			assert.JSONEq(t, want, string(r.ToolCalls[0].Arguments), text)
		}
	}
}

// TestTurn_PlanIntent: "plan: a; done b; c" calls the plan tool with the
// steps, the first open one in progress; "plan: clear" clears it.
func TestTurn_PlanIntent(t *testing.T) {
	tools := []provider.ToolSpec{{Name: "plan", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for text, want := range map[string]string{
		"plan: read the code; done write tests; fix the bug": `{"entries":[{"content":"read the code","status":"in_progress"},{"content":"write tests","status":"completed"},{"content":"fix the bug","status":"pending"}]}`,
		"Plan: clear": `{"entries":[]}`,
	} {
		reply := turnReply(&provider.Request{Purpose: provider.PurposeTurn, Tools: tools, Messages: []history.Message{{ID: "u", Role: history.RoleUser, Text: text}}})
		require.Len(t, reply.ToolCalls, 1, text)
		assert.Equal(t, "plan", reply.ToolCalls[0].Name)
		assert.JSONEq(t, want, string(reply.ToolCalls[0].Arguments), text)
	}
}
