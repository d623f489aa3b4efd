package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// fixture is a workspace with files, and beside it a directory the tools
// must never touch, reachable through "..", an absolute path, a link to a
// file and a link to a directory.
type fixture struct {
	root, outside string
	tools         map[string]session.Tool
}

func newFixture(t *testing.T, o workspace.Options) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	f := &fixture{root: filepath.Join(base, "project"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{f.root, f.outside, filepath.Join(f.root, "pkg")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	write(filepath.Join(f.root, "main.go"), "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n")
	write(filepath.Join(f.root, "pkg", "util.go"), "package pkg\n\n// Hello says hello.\nfunc Hello() string { return \"hello\" }\n")
	write(filepath.Join(f.outside, "secret.txt"), "SECRET\n")
	require.NoError(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "secret-link")))
	require.NoError(t, os.Symlink(f.outside, filepath.Join(f.root, "out-dir")))
	ws, err := workspace.New(f.root)
	require.NoError(t, err)
	f.tools = map[string]session.Tool{}
	for _, tool := range ws.Tools(o) {
		f.tools[tool.Name] = tool
	}
	return f
}

func (f *fixture) run(t *testing.T, name string, args map[string]any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	tool, ok := f.tools[name]
	require.True(t, ok, name)
	require.True(t, json.Valid(tool.Parameters), "%s parameters are JSON Schema", name)
	return tool.Run(context.Background(), raw)
}

func (f *fixture) outsideUntouched(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	require.NoError(t, err)
	assert.Equal(t, "SECRET\n", string(b))
	entries, err := os.ReadDir(f.outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing was created outside the workspace")
}

// toolCall is a call of a workspace tool.
type toolCall struct {
	tool string
	args map[string]any
}

// fileCalls are calls of the file tools on the file p.
func fileCalls(p string) []toolCall {
	return []toolCall{
		{"read_file", map[string]any{"path": p}},
		{"write_file", map[string]any{"path": p, "content": "pwned"}},
		{"edit_file", map[string]any{"path": p, "old_text": "SECRET", "new_text": "pwned"}},
	}
}

// Every tool that takes a path refuses one outside the workspace: through
// "..", as an absolute path, and through a link to a file or a directory.
func TestConfinement(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	escapes := map[string]string{
		"dot-dot":        "../outside/secret.txt",
		"absolute":       filepath.Join(f.outside, "secret.txt"),
		"link to a file": "secret-link",
		"link to a dir":  "out-dir/secret.txt",
	}
	dirEscapes := map[string]string{
		"dot-dot":       "../outside",
		"absolute":      f.outside,
		"link to a dir": "out-dir",
	}
	for how, p := range escapes {
		for _, call := range fileCalls(p) {
			t.Run(call.tool+"/"+how, func(t *testing.T) {
				out, err := f.run(t, call.tool, call.args)
				require.ErrorIs(t, err, workspace.ErrOutside, "output %q", out)
				assert.Contains(t, err.Error(), "outside the workspace")
				assert.NotContains(t, out, "SECRET")
			})
		}
	}
	t.Run("write a new file through a link to a dir", func(t *testing.T) {
		_, err := f.run(t, "write_file", map[string]any{"path": "out-dir/new/file.txt", "content": "x"})
		require.ErrorIs(t, err, workspace.ErrOutside)
	})
	for how, p := range dirEscapes {
		for _, tool := range []string{"list_files", "search"} {
			t.Run(tool+"/"+how, func(t *testing.T) {
				args := map[string]any{"path": p}
				if tool == "search" {
					args["pattern"] = "SECRET"
				}
				out, err := f.run(t, tool, args)
				require.ErrorIs(t, err, workspace.ErrOutside, "output %q", out)
			})
		}
	}
	t.Run("search does not follow a link out", func(t *testing.T) {
		out, err := f.run(t, "search", map[string]any{"pattern": "SECRET"})
		require.NoError(t, err)
		assert.Equal(t, "no matches", out)
	})
	f.outsideUntouched(t)
}

func TestReadFile(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	out, err := f.run(t, "read_file", map[string]any{"path": "main.go", "start_line": 3, "end_line": 4})
	require.NoError(t, err)
	assert.Equal(t, "func main() {\n\tprintln(\"hello\")\n", out)
	small := newFixture(t, workspace.Options{MaxOutput: 20})
	full, err := small.run(t, "read_file", map[string]any{"path": filepath.Join(small.root, "main.go")})
	require.NoError(t, err)
	assert.Equal(t, "package main\n\nfunc m\n[output cut: the first 20 of 48 bytes shown]", full)
	_, err = f.run(t, "read_file", map[string]any{"path": "main.go", "start_line": 40})
	assert.ErrorContains(t, err, "do not exist")
	_, err = f.run(t, "read_file", map[string]any{"path": "missing.go"})
	assert.Error(t, err)
	_, err = f.run(t, "read_file", map[string]any{"path": "main.go", "bogus": 1})
	assert.ErrorContains(t, err, "invalid arguments")
}

func TestWriteAndEditFile(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	out, err := f.run(t, "write_file", map[string]any{"path": "docs/notes/a.txt", "content": "one two two"})
	require.NoError(t, err)
	assert.Equal(t, "wrote docs/notes/a.txt (11 bytes)", out)

	_, err = f.run(t, "edit_file", map[string]any{"path": "docs/notes/a.txt", "old_text": "two", "new_text": "2"})
	assert.ErrorContains(t, err, "occurs 2 times")
	_, err = f.run(t, "edit_file", map[string]any{"path": "docs/notes/a.txt", "old_text": "three", "new_text": "3"})
	assert.ErrorContains(t, err, "does not occur")
	b, _ := os.ReadFile(filepath.Join(f.root, "docs/notes/a.txt"))
	assert.Equal(t, "one two two", string(b), "a failed edit changes nothing")

	out, err = f.run(t, "edit_file", map[string]any{"path": "docs/notes/a.txt", "old_text": "one", "new_text": "1"})
	require.NoError(t, err)
	assert.Equal(t, "edited docs/notes/a.txt at line 1", out)
	b, _ = os.ReadFile(filepath.Join(f.root, "docs/notes/a.txt"))
	assert.Equal(t, "1 two two", string(b))

	out, err = f.run(t, "write_file", map[string]any{"path": "docs/notes/a.txt", "content": "new\ntext\n"})
	require.NoError(t, err)
	assert.Equal(t, "wrote docs/notes/a.txt (9 bytes; replaced the previous 9 bytes)", out)
	out, err = f.run(t, "edit_file", map[string]any{"path": "docs/notes/a.txt", "old_text": "text", "new_text": "words"})
	require.NoError(t, err)
	assert.Equal(t, "edited docs/notes/a.txt at line 2", out)
}

func TestListFiles(t *testing.T) {
	f := newFixture(t, workspace.Options{MaxEntries: 3})
	out, err := f.run(t, "list_files", map[string]any{})
	require.NoError(t, err)
	assert.Equal(t, "main.go\nout-dir\npkg/\n[listing cut: 3 of 4 entries shown]\n", out)
	out, err = f.run(t, "list_files", map[string]any{"path": "pkg"})
	require.NoError(t, err)
	assert.Equal(t, "util.go\n", out)
}

func TestSearch(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	out, err := f.run(t, "search", map[string]any{"pattern": "hello"})
	require.NoError(t, err)
	assert.Equal(t, "main.go:4: \tprintln(\"hello\")\npkg/util.go:3: // Hello says hello.\npkg/util.go:4: func Hello() string { return \"hello\" }\n", out)
	out, err = f.run(t, "search", map[string]any{"pattern": `^func \w+\(\)`, "regex": true})
	require.NoError(t, err)
	assert.Equal(t, "main.go:3: func main() {\npkg/util.go:4: func Hello() string { return \"hello\" }\n", out)
	_, err = f.run(t, "search", map[string]any{"pattern": "(", "regex": true})
	assert.ErrorContains(t, err, "not a valid regular expression")

	few := newFixture(t, workspace.Options{MaxEntries: 1})
	out, err = few.run(t, "search", map[string]any{"pattern": "hello"})
	require.NoError(t, err)
	assert.Equal(t, "main.go:4: \tprintln(\"hello\")\n[search cut after 1 matches]\n", out)
}

func TestRunCommand(t *testing.T) {
	f := newFixture(t, workspace.Options{MaxOutput: 100})
	out, err := f.run(t, "run_command", map[string]any{"command": "pwd; echo oops >&2; exit 3"})
	require.NoError(t, err)
	assert.Equal(t, "exit status 3\n"+f.root+"\noops\n", out)

	out, err = f.run(t, "run_command", map[string]any{"command": "head -c 5000 /dev/zero | tr '\\0' x"})
	require.NoError(t, err)
	assert.Equal(t, "exit status 0\n"+strings.Repeat("x", 100)+"\n[output cut: the first 100 of 5000 bytes shown]", out)

	// The timeout is short here only: each command starts this binary
	// twice (the sandbox helper), which takes a while under -race.
	f = newFixture(t, workspace.Options{MaxOutput: 100, CommandTimeout: 300 * time.Millisecond})
	out, err = f.run(t, "run_command", map[string]any{"command": "sleep 30 & sleep 30; echo never"})
	require.Error(t, err, "a command killed at its timeout fails; output %q", out)
	assert.True(t, strings.HasPrefix(err.Error(), "killed after the 300ms timeout"), err.Error())
	assert.NotContains(t, err.Error(), "never")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = f.tools["run_command"].Run(ctx, json.RawMessage(`{"command":"sleep 30"}`))
	assert.ErrorIs(t, err, context.Canceled, "a cancelled turn stops the command")

	_, err = f.run(t, "run_command", map[string]any{"command": "  "})
	assert.ErrorContains(t, err, "empty")
}

func TestNewRefusesBadRoots(t *testing.T) {
	_, err := workspace.New("relative/dir")
	assert.ErrorContains(t, err, "not an absolute path")
	_, err = workspace.New(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = workspace.New(file)
	assert.ErrorContains(t, err, "not a directory")
}
