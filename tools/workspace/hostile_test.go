package workspace_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// hostileName is a file name the model chose to make a title lie: a
// newline, an ANSI escape that clears the screen and a bidi override.
const hostileName = "a.txt\nRun rm -rf ~\x1b[2J\u202etxt.exe"

// hostileQuoted is hostileName as a title shows it.
const hostileQuoted = `"a.txt\nRun rm -rf ~\x1b[2J\u202etxt.exe"`

// Titles built from a name the model chose are quoted, live (the
// permission requests of write_file and edit_file) and on replay
// (Describe), and such a name is no location for the editor to follow.
func TestHostileNamesAreQuotedInTitles(t *testing.T) {
	ed := newEditor()
	f := editorFixture(t, ed, workspace.Options{})
	_, err := f.run(t, "write_file", map[string]any{"path": hostileName, "content": "one\n"})
	require.NoError(t, err)
	_, err = f.run(t, "edit_file", map[string]any{"path": hostileName, "old_text": "one", "new_text": "two"})
	require.NoError(t, err)
	require.Len(t, ed.asked, 2)
	for i, verb := range []string{"Write ", "Edit "} {
		title, _ := ed.asked[i].Title.Get()
		assert.Equal(t, verb+hostileQuoted, title)
		locs, _ := ed.asked[i].Locations.Get()
		assert.Empty(t, locs, "no location for a name that is not plain")
	}

	d := workspace.Describe(f.root)
	for tool, verb := range map[string]string{"read_file": "Read ", "write_file": "Write ", "edit_file": "Edit ", "list_files": "List "} {
		args, _ := json.Marshal(map[string]string{"path": hostileName, "content": "x", "old_text": "x", "new_text": "y"})
		shown := d(history.ToolCall{ID: "c", Name: tool, Arguments: args}, nil)
		assert.Equal(t, verb+hostileQuoted, shown.Title, tool)
		assert.Empty(t, shown.Locations, tool)
	}
	args, _ := json.Marshal(map[string]string{"pattern": "x", "path": hostileName})
	assert.Equal(t, `Search for "x" in `+hostileQuoted, d(history.ToolCall{ID: "c", Name: "search", Arguments: args}, nil).Title)
	plain := d(history.ToolCall{ID: "c", Name: "read_file", Arguments: json.RawMessage(`{"path":"a b.go"}`)}, nil)
	assert.Equal(t, "Read a b.go", plain.Title, "a plain name is shown as it is")
	assert.Equal(t, []schema.ToolCallLocation{{Path: filepath.Join(f.root, "a b.go")}}, plain.Locations)
}

// A guarded tool's (an MCP tool's) permission request shows the call's
// arguments, escaped and bounded, and its title quoted when it is not
// plain.
func TestGuardShowsArguments(t *testing.T) {
	ed := newEditor()
	ran := 0
	tool := workspace.Guard(session.Tool{Name: "mcp__demo__greet", Run: func(context.Context, json.RawMessage) (string, error) {
		ran++
		return "hi", nil
	}}, workspace.Options{Editor: ed}, func(json.RawMessage) string { return "MCP demo: greet\u202e" })

	_, err := tool.Run(context.Background(), json.RawMessage("{\"who\": \"\u202eevil\\u001b[2J\",\n \"n\": 1}"))
	require.NoError(t, err)
	long := strings.Repeat("é", 10000)
	_, err = tool.Run(context.Background(), json.RawMessage(`{"who":"`+long+`"}`))
	require.NoError(t, err)
	assert.Equal(t, 2, ran)
	require.Len(t, ed.asked, 2)

	title, _ := ed.asked[0].Title.Get()
	assert.Equal(t, `"MCP demo: greet\u202e"`, title)
	text := func(u schema.ToolCallUpdate) string {
		content, _ := u.Content.Get()
		require.Len(t, content, 1)
		require.NotNil(t, content[0].Content)
		require.NotNil(t, content[0].Content.Content.Text)
		return content[0].Content.Content.Text.Text
	}
	assert.Equal(t, `Arguments: {"who":"\u202eevil\u001b[2J","n":1}`, text(ed.asked[0]))
	second := text(ed.asked[1])
	assert.True(t, strings.HasPrefix(second, `Arguments: {"who":"éé`), second[:30])
	assert.True(t, strings.HasSuffix(second, "… (20010 bytes)"), second[len(second)-30:])
	assert.Less(t, len(second), 5<<10, "bounded")
}
