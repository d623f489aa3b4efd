package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// Each mode decides each kind of call: reading always runs; read-only
// refuses changes, commands and MCP calls (nothing asked, nothing done);
// ask asks for every one of them; auto-edit runs edits at once and asks
// for commands and MCP calls; full-auto asks for nothing. The mode is read
// at every call, so a switch takes effect at the next one.
func TestModes(t *testing.T) {
	const (
		runs   = "runs"
		asks   = "asks"
		refuse = "refused"
	)
	kinds := []struct {
		kind  string
		calls []toolCall
	}{
		{"read", []toolCall{
			{"read_file", map[string]any{"path": "main.go"}},
			{"list_files", map[string]any{}},
			{"search", map[string]any{"pattern": "hello"}},
		}},
		{"edit", []toolCall{
			{"write_file", map[string]any{"path": "new.txt", "content": "x"}},
			{"edit_file", map[string]any{"path": "main.go", "old_text": "hello", "new_text": "bye"}},
		}},
		{"command", []toolCall{{"run_command", map[string]any{"command": "true"}}}},
		{"mcp", []toolCall{{"mcp__demo__greet", map[string]any{"name": "x"}}}},
	}
	want := map[string]map[string]string{
		workspace.ModeReadOnly: {"read": runs, "edit": refuse, "command": refuse, "mcp": refuse},
		workspace.ModeAsk:      {"read": runs, "edit": asks, "command": asks, "mcp": asks},
		workspace.ModeAutoEdit: {"read": runs, "edit": runs, "command": asks, "mcp": asks},
		workspace.ModeFullAuto: {"read": runs, "edit": runs, "command": runs, "mcp": runs},
	}
	for _, m := range workspace.Modes() {
		for _, k := range kinds {
			for _, call := range k.calls {
				t.Run(m.ID+"/"+call.tool, func(t *testing.T) {
					ed := newEditor()
					zero := 0
					ed.exit = &zero
					mode := m.ID
					o := workspace.Options{Mode: func() string { return mode }, Sandbox: sandbox.Policy{Mode: sandbox.Off}}
					f := editorFixture(t, ed, o)
					ran := 0
					o.Editor = ed
					f.tools["mcp__demo__greet"] = workspace.Guard(session.Tool{Name: "mcp__demo__greet", Parameters: json.RawMessage(`{"type":"object"}`), Run: func(context.Context, json.RawMessage) (string, error) {
						ran++
						return "hi", nil
					}}, o, func(json.RawMessage) string { return "MCP demo: greet" })

					out, err := f.run(t, call.tool, call.args)
					switch want[m.ID][k.kind] {
					case refuse:
						require.Error(t, err, out)
						assert.Contains(t, err.Error(), "not allowed in read-only mode")
						assert.Empty(t, ed.asked, "a refused call asks nothing")
						assert.Empty(t, ed.methods(), "a refused call reaches nothing of the editor")
						assert.Zero(t, ran)
						_, statErr := os.Stat(filepath.Join(f.root, "new.txt"))
						assert.ErrorIs(t, statErr, os.ErrNotExist, "nothing was written")
						return
					case asks:
						require.NoError(t, err)
						require.Len(t, ed.asked, 1, "one permission request")
					case runs:
						require.NoError(t, err)
						assert.Empty(t, ed.asked, "no permission request")
					}
					// It ran: its effect is there.
					switch k.kind {
					case "edit":
						assert.Contains(t, ed.methods(), "fs/write_text_file")
					case "command":
						assert.Contains(t, strings.Join(ed.methods(), "\n"), "terminal/create ", "the command ran in the editor's terminal")
					case "mcp":
						assert.Equal(t, 1, ran)
						if want[m.ID][k.kind] == asks {
							title, _ := ed.asked[0].Title.Get()
							assert.Equal(t, "MCP demo: greet", title)
						}
					}
				})
			}
		}
	}
}

// A switch of mode takes effect at the next call: the same tools ask in
// ask mode, run at once in auto-edit mode, and refuse in read-only mode.
func TestModeSwitchTakesEffectAtTheNextCall(t *testing.T) {
	ed := newEditor()
	mode := workspace.ModeAsk
	f := editorFixture(t, ed, workspace.Options{Mode: func() string { return mode }})
	edit := map[string]any{"path": "new.txt", "content": "x"}
	_, err := f.run(t, "write_file", edit)
	require.NoError(t, err)
	require.Len(t, ed.asked, 1)
	mode = workspace.ModeAutoEdit
	_, err = f.run(t, "write_file", edit)
	require.NoError(t, err)
	assert.Len(t, ed.asked, 1, "auto-edit does not ask")
	mode = workspace.ModeReadOnly
	_, err = f.run(t, "write_file", edit)
	assert.ErrorContains(t, err, "not allowed in read-only mode")
	assert.Len(t, ed.asked, 1)
}

// A file with more than one hard link is changed only after a request that
// says so: auto-edit asks for it, and full-auto, where nothing asks,
// refuses it.
func TestModesAndHardLinks(t *testing.T) {
	for _, tt := range []struct {
		mode  string
		asked int
		err   string
	}{
		{workspace.ModeAutoEdit, 1, ""},
		{workspace.ModeFullAuto, 0, "hard links"},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			ed := newEditor()
			f := editorFixture(t, ed, workspace.Options{Mode: func() string { return tt.mode }})
			require.NoError(t, os.Link(filepath.Join(f.root, "main.go"), filepath.Join(f.root, "other.go")))
			_, err := f.run(t, "edit_file", map[string]any{"path": "main.go", "old_text": "hello", "new_text": "bye"})
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
			} else {
				require.NoError(t, err)
			}
			assert.Len(t, ed.asked, tt.asked)
		})
	}
}

// Commands get the network in full-auto mode only (unless the policy
// gives it always): auto-edit runs the same command without it.
func TestModesNetwork(t *testing.T) {
	requireLandlock(t)
	ln := tcpSink(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	dial := map[string]any{"command": fmt.Sprintf("%s %s tcp4 %s", exe, dialArg, ln.Addr())}
	mode := workspace.ModeAutoEdit
	f := newFixture(t, workspace.Options{Mode: func() string { return mode }})
	out, err := f.run(t, "run_command", dial)
	require.NoError(t, err)
	assert.Contains(t, out, "permission denied", "no network outside full-auto")
	mode = workspace.ModeFullAuto
	out, err = f.run(t, "run_command", dial)
	require.NoError(t, err)
	assert.Equal(t, "exit status 0\nconnected\n", out, "full-auto has the network")
}
