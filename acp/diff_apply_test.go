package acp_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// The v2 tool_call_update diffs of the workspace tools carry patches that
// git apply accepts in the session's directory: files named relative to the
// cwd, hunks of whole lines with their context (an edit of part of a line,
// a file without a final newline, a new file in a new directory). The
// reports made from the call's arguments (fragments: the first and the
// completed one, as a replay shows them) list the change without a patch;
// the tool's own report once the file is written has the patch.
func TestV2_ToolDiffPatchesApply(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git to apply the patches")
	}
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("init", "-q")
	require.NoError(t, err, out)
	original := map[string]string{
		"notes.txt": "first line\nsecond\nthird\nHOWDY notes\nfifth\nsixth\nseventh\nlast line\n",
		"raw.txt":   "alpha\nbeta",
	}
	restore := func() {
		for name, text := range original {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
		}
		require.NoError(t, os.RemoveAll(filepath.Join(dir, "sub")))
	}
	restore()

	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{
		SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
			ws, err := workspace.New(ts.Cwd, ts.AdditionalDirectories...)
			if err != nil {
				return acp.Toolset{}, err
			}
			return acp.Toolset{Tools: ws.Tools(workspace.Options{Editor: ts.Client, AllowAll: true}), Describe: workspace.Describe(ts.Cwd)}, nil
		},
	})
	c.initV2()
	m := c.call("session/new", `{"cwd":`+string(mustMarshal(t, dir))+`}`)
	require.Nil(t, m.Error, "session/new")
	var r struct{ SessionID string }
	require.NoError(t, json.Unmarshal(m.Result, &r))
	call := func(id, name string, args map[string]string) history.ToolCall {
		return history.ToolCall{ID: id, Name: name, Arguments: mustMarshal(t, args)}
	}
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{
			// Read first: the workspace refuses to edit a file the session
			// has not read (the file ledger's guard against stale edits).
			call("r1", "read_file", map[string]string{"path": "notes.txt"}),
			call("r2", "read_file", map[string]string{"path": "raw.txt"}),
			call("e1", "edit_file", map[string]string{"path": "notes.txt", "old_text": "HOWDY", "new_text": "hello"}),
			call("e2", "edit_file", map[string]string{"path": filepath.Join(dir, "raw.txt"), "old_text": "beta", "new_text": "gamma"}),
			call("w1", "write_file", map[string]string{"path": "sub/new.txt", "content": "one\ntwo"}),
		}},
		providertest.Reply{Text: "done"},
	)
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(r.SessionID, "edit")).Error)
	c.waitNote(seq, "the idle state", func(n hostileNote) bool {
		return isIdle(n) && strings.Contains(string(n.update), "end_turn")
	})

	type v2diff struct {
		Type    string
		Changes []struct{ Operation, Path string }
		Patch   *struct{ Format, Text string }
	}
	patches := map[string][]string{}
	fromArgs := map[string]string{} // the completed reports' patches, by call
	for _, n := range c.notesSince(seq) {
		if n.kind != "tool_call_update" {
			continue
		}
		var u struct {
			ToolCallID string            `json:"toolCallId"`
			Status     string            `json:"status"`
			Content    []json.RawMessage `json:"content"`
		}
		require.NoError(t, json.Unmarshal(n.update, &u))
		for _, raw := range u.Content {
			var d v2diff
			require.NoError(t, json.Unmarshal(raw, &d))
			if d.Type != "diff" {
				continue
			}
			require.Len(t, d.Changes, 1)
			assert.True(t, filepath.IsAbs(d.Changes[0].Path), "the change names the absolute path: %s", d.Changes[0].Path)
			if u.Status != "" {
				// The first report (in_progress) and the completed one are
				// made from the arguments: fragments have no patch, but
				// the completed write of a new file is the whole file, an
				// "add" whose patch is exact; it must be the written one.
				if d.Changes[0].Operation == "add" && u.Status == "completed" {
					require.NotNil(t, d.Patch, "a new file's completed report has its patch: %s", raw)
					fromArgs[u.ToolCallID] = d.Patch.Text
					continue
				}
				assert.Nil(t, d.Patch, "a report made from the arguments has no patch: %s", raw)
				continue
			}
			require.NotNil(t, d.Patch, "%s", raw)
			assert.Equal(t, "git_patch", d.Patch.Format)
			assert.NotContains(t, d.Patch.Text, dir, "paths relative to the session's cwd")
			patches[u.ToolCallID] = append(patches[u.ToolCallID], d.Patch.Text)
		}
	}
	for _, id := range []string{"e1", "e2", "w1"} {
		require.Len(t, patches[id], 1, "one patch for %s, once it is written", id)
	}
	assert.Equal(t, map[string]string{"w1": patches["w1"][0]}, fromArgs, "only the new file's completed report has a patch, the one it was written with")
	assert.Contains(t, patches["e1"][0], "-HOWDY notes\n+hello notes\n", "whole lines")
	assert.Contains(t, patches["e1"][0], "a/notes.txt")
	assert.Contains(t, patches["w1"][0], "b/sub/new.txt")

	// Every patch applies to the files as they were before the turn.
	for id, ps := range patches {
		for i, p := range ps {
			restore()
			file := filepath.Join(t.TempDir(), "p.diff")
			require.NoError(t, os.WriteFile(file, []byte(p), 0o600))
			out, err := run("apply", "--check", file)
			require.NoError(t, err, "%s patch %d does not apply: %s\n%s", id, i, out, p)
			out, err = run("apply", file)
			require.NoError(t, err, out)
		}
	}
	restore()
	for _, p := range [][]string{patches["e1"], patches["e2"], patches["w1"]} {
		file := filepath.Join(t.TempDir(), "p.diff")
		require.NoError(t, os.WriteFile(file, []byte(p[0]), 0o600))
		out, err := run("apply", file)
		require.NoError(t, err, out)
	}
	for name, want := range map[string]string{
		"notes.txt":   strings.Replace(original["notes.txt"], "HOWDY", "hello", 1),
		"raw.txt":     "alpha\ngamma",
		"sub/new.txt": "one\ntwo",
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), "%s after git apply", name)
	}
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
