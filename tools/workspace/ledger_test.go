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

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// ledgered is a fixture whose calls run with a session's file ledger, as
// a session runs them.
type ledgered struct {
	*fixture
	led *session.FileLedger
}

func newLedgered(t *testing.T, o workspace.Options) *ledgered {
	return &ledgered{fixture: newFixture(t, o), led: session.NewFileLedger(0)}
}

func (f *ledgered) call(t *testing.T, name string, args map[string]any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	ctx := session.WithFileLedger(session.WithToolCallID(context.Background(), "call-1"), f.led)
	return f.tools[name].Run(ctx, raw)
}

func (f *ledgered) edit(t *testing.T, path, old, new string) error {
	t.Helper()
	_, err := f.call(t, "edit_file", map[string]any{"path": path, "old_text": old, "new_text": new})
	return err
}

func (f *ledgered) read(t *testing.T, path string) {
	t.Helper()
	_, err := f.call(t, "read_file", map[string]any{"path": path})
	require.NoError(t, err)
}

func (f *ledgered) outsideWrite(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(f.root, path), []byte(content), 0o644))
}

// The guard: edit_file of a file never read is refused, a read allows it,
// a change on disk since refuses it again, saying when it was read and
// what to do; the agent's own change counts as seen.
func TestGuardUnreadAndStale(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	err := f.edit(t, "main.go", "hello", "bye")
	require.ErrorIs(t, err, workspace.ErrNotRead)
	assert.Contains(t, err.Error(), "main.go has not been read in this session: read it with read_file, then edit it; nothing was changed")
	assert.Contains(t, f.fileText(t, "main.go"), "hello", "nothing was changed")

	f.read(t, "main.go")
	st, ok := f.led.Seen("main.go")
	require.True(t, ok)
	assert.True(t, st.Read)
	assert.Equal(t, history.FileRead, st.Op)
	assert.True(t, st.Whole())
	require.NoError(t, f.edit(t, "main.go", "hello", "bye"))
	require.NoError(t, f.edit(t, "main.go", "bye", "ciao"), "its own change is what the agent saw")
	st, _ = f.led.Seen("main.go")
	assert.True(t, st.Read && st.Changed)

	f.outsideWrite(t, "main.go", "package main // formatted\n\nfunc main() {\n\tprintln(\"ciao\")\n}\n")
	err = f.edit(t, "main.go", "ciao", "hi")
	require.ErrorIs(t, err, workspace.ErrChangedSinceRead)
	assert.Regexp(t, `main\.go changed on disk since you changed it at \d\d:\d\d:\d\d \(it has \d+ bytes now, \d+ then\): read it again before editing it; nothing was changed`, err.Error())
	_, err = f.call(t, "write_file", map[string]any{"path": "main.go", "content": "x"})
	require.ErrorIs(t, err, workspace.ErrChangedSinceRead, "write_file is refused too")
	assert.Contains(t, err.Error(), "before replacing it")
	assert.Contains(t, f.fileText(t, "main.go"), "formatted", "nothing was changed")

	f.read(t, "main.go")
	require.NoError(t, f.edit(t, "main.go", "ciao", "hi"))

	// A new file needs no read, and write_file may replace a file never
	// read; edit_file of what it wrote needs none either.
	_, err = f.call(t, "write_file", map[string]any{"path": "new/n.txt", "content": "one\n"})
	require.NoError(t, err)
	require.NoError(t, f.edit(t, "new/n.txt", "one", "two"))
	_, err = f.call(t, "write_file", map[string]any{"path": "pkg/util.go", "content": "package pkg\n"})
	require.NoError(t, err)
}

func (f *fixture) fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, path))
	require.NoError(t, err)
	return string(b)
}

// Options.NoFileGuard switches the guard off; without a session's ledger
// (a tool run outside a session) there is nothing to go on.
func TestGuardOff(t *testing.T) {
	f := newLedgered(t, workspace.Options{NoFileGuard: true})
	require.NoError(t, f.edit(t, "main.go", "hello", "bye"))
	_, ok := f.led.Seen("main.go")
	assert.True(t, ok, "the ledger is kept all the same")
	g := newFixture(t, workspace.Options{})
	_, err := g.run(t, "edit_file", map[string]any{"path": "main.go", "old_text": "hello", "new_text": "bye"})
	require.NoError(t, err)
}

// One file has one ledger path however it is named: "./a", "a",
// "dir/../a", an absolute path, a link inside the workspace.
func TestGuardPathAliases(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	require.NoError(t, os.Symlink("pkg/util.go", filepath.Join(f.root, "util-link")))
	require.NoError(t, os.Symlink("pkg", filepath.Join(f.root, "pkg-link")))
	f.read(t, "./pkg/util.go")
	require.NoError(t, f.edit(t, "pkg/../pkg/util.go", "says hello", "says hi"))
	require.NoError(t, f.edit(t, "util-link", "says hi", "says hey"))
	require.NoError(t, f.edit(t, "pkg-link/util.go", "says hey", "says yo"))
	require.NoError(t, f.edit(t, filepath.Join(f.root, "pkg", "util.go"), "says yo", "says hello"))
	assert.Equal(t, 1, f.led.Len(), "one path in the ledger")
	_, ok := f.led.Seen("pkg/util.go")
	assert.True(t, ok)

	f.outsideWrite(t, "pkg/util.go", "package pkg // changed\n")
	err := f.edit(t, "util-link", "changed", "x")
	require.ErrorIs(t, err, workspace.ErrChangedSinceRead, "a change seen through any name")
	assert.Contains(t, err.Error(), "util-link changed on disk since you changed it")
}

// A read cut at the output bound, or of a range of lines, saw part of the
// file: the ledger keeps the hash of the bytes seen from the start of
// their line, and an edit is refused when those changed, not when the
// rest did.
func TestGuardPartialRead(t *testing.T) {
	f := newLedgered(t, workspace.Options{MaxOutput: 1024})
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "line %d\n", i+1)
	}
	f.outsideWrite(t, "big.txt", b.String())
	out, err := f.call(t, "read_file", map[string]any{"path": "big.txt"})
	require.NoError(t, err)
	require.Contains(t, out, "[output cut")
	st, _ := f.led.Seen("big.txt")
	assert.Equal(t, 1, st.Line)
	assert.EqualValues(t, 1024, st.Length)
	assert.EqualValues(t, b.Len(), st.Size)

	f.outsideWrite(t, "big.txt", b.String()+"line 1001\n")
	require.NoError(t, f.edit(t, "big.txt", "line 5\n", "line five\n"), "the part seen is unchanged")

	_, err = f.call(t, "read_file", map[string]any{"path": "big.txt", "start_line": 500, "end_line": 510})
	require.NoError(t, err)
	st, _ = f.led.Seen("big.txt")
	assert.Equal(t, 500, st.Line)
	f.outsideWrite(t, "big.txt", strings.Replace(b.String(), "line 505\n", "line 505 changed\n", 1))
	err = f.edit(t, "big.txt", "line 600\n", "x\n")
	require.ErrorIs(t, err, workspace.ErrChangedSinceRead, "lines 500..510 changed")
	f.outsideWrite(t, "big.txt", "short\n")
	require.ErrorIs(t, f.edit(t, "big.txt", "short", "x"), workspace.ErrChangedSinceRead, "line 500 is gone")
}

// A file deleted and made again: the same content is what the agent saw,
// another is not; once gone, write_file makes it anew without a read.
func TestGuardDeleteRecreate(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	f.read(t, "main.go")
	before := f.fileText(t, "main.go")
	require.NoError(t, os.Remove(filepath.Join(f.root, "main.go")))
	f.outsideWrite(t, "main.go", before)
	require.NoError(t, f.edit(t, "main.go", "hello", "bye"))
	require.NoError(t, os.Remove(filepath.Join(f.root, "main.go")))
	f.outsideWrite(t, "main.go", "package other\n")
	require.ErrorIs(t, f.edit(t, "main.go", "other", "x"), workspace.ErrChangedSinceRead)
	require.NoError(t, os.Remove(filepath.Join(f.root, "main.go")))
	_, err := f.call(t, "write_file", map[string]any{"path": "main.go", "content": "package main\n"})
	require.NoError(t, err, "a new file needs no read")
}

// A binary file is neither read nor recorded, and its edit is refused as
// not text, before the guard.
func TestGuardBinary(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	f.outsideWrite(t, "bin.dat", "ab\x00cd")
	_, err := f.call(t, "read_file", map[string]any{"path": "bin.dat"})
	require.Error(t, err)
	assert.Equal(t, 0, f.led.Len())
	err = f.edit(t, "bin.dat", "ab", "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a text file")
}

// Thousands of files: the ledger keeps the newest history.MaxFiles paths,
// and the refusal of one it dropped says why.
func TestGuardThousandsOfFiles(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	n := history.MaxFiles + 200
	for i := range n {
		f.outsideWrite(t, fmt.Sprintf("f%04d.txt", i), "x\n")
	}
	for i := range n {
		f.read(t, fmt.Sprintf("f%04d.txt", i))
	}
	assert.Equal(t, history.MaxFiles, f.led.Len())
	assert.Equal(t, 200, f.led.Evicted())
	err := f.edit(t, "f0000.txt", "x", "y")
	require.ErrorIs(t, err, workspace.ErrNotRead)
	assert.Contains(t, err.Error(), fmt.Sprintf("more files than the %d the file tools remember", history.MaxFiles))
	require.NoError(t, f.edit(t, fmt.Sprintf("f%04d.txt", n-1), "x", "y"))
}

// Through the editor's fs the ledger holds what the editor showed (its
// buffer, unsaved changes included), whatever the disk holds; a buffer
// changed since is refused as changed in the editor.
func TestGuardEditorBuffer(t *testing.T) {
	ed := newEditor()
	f := &ledgered{fixture: editorFixture(t, ed, workspace.Options{AllowAll: true}), led: session.NewFileLedger(0)}
	path := filepath.Join(f.root, "main.go")
	ed.buffers[path] = "package main // unsaved\n"
	f.read(t, "main.go")
	require.NoError(t, f.edit(t, "main.go", "unsaved", "edited"), "the buffer differs from the disk, and the buffer is what was seen")
	assert.Equal(t, "package main // edited\n", ed.buffers[path])
	ed.mu.Lock()
	ed.buffers[path] = "package main // typed by the user\n"
	ed.mu.Unlock()
	err := f.edit(t, "main.go", "user", "x")
	require.ErrorIs(t, err, workspace.ErrChangedSinceRead)
	assert.Contains(t, err.Error(), "main.go changed in the editor since you changed it")
}

// A read from line 1 with no end_line saw the whole file, as a read
// without lines does: a line added since refuses an edit.
func TestGuardReadFromLineOneIsWhole(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	f.outsideWrite(t, "a.txt", "alpha\n")
	_, err := f.call(t, "read_file", map[string]any{"path": "a.txt", "start_line": 1})
	require.NoError(t, err)
	st, ok := f.led.Seen("a.txt")
	require.True(t, ok)
	assert.True(t, st.Whole())

	f.outsideWrite(t, "a.txt", "alpha\nbeta\n")
	require.ErrorIs(t, f.edit(t, "a.txt", "alpha", "gamma"), workspace.ErrChangedSinceRead)
}

// meddler is a fakeEditor whose permission request runs meanwhile before
// it answers (the user edits the file while the request waits), and
// that reads files only when fs is set.
type meddler struct {
	*fakeEditor
	fs        bool
	meanwhile func()
}

func (e *meddler) CanReadFiles() bool  { return e.fs }
func (e *meddler) CanWriteFiles() bool { return e.fs }

func (e *meddler) RequestPermission(ctx context.Context, call schema.ToolCallUpdate, options []schema.PermissionOption) (schema.PermissionOutcome, error) {
	if e.meanwhile != nil {
		e.meanwhile()
	}
	return e.fakeEditor.RequestPermission(ctx, call, options)
}

// The guard looks again once the permission request is answered: a file
// edited while the request waited, on the disk or in the editor, is not
// changed (the change was made from the text before), and the refusal
// says so; a file left as it was is changed.
func TestGuardAfterPermission(t *testing.T) {
	for _, fs := range []bool{false, true} {
		t.Run(fmt.Sprintf("editor reads files: %v", fs), func(t *testing.T) {
			ed := &meddler{fakeEditor: newEditor(), fs: fs}
			f := &ledgered{fixture: newFixture(t, workspace.Options{Editor: ed}), led: session.NewFileLedger(0)}
			path := filepath.Join(f.root, "main.go")
			f.read(t, "main.go")
			var edited string
			ed.meanwhile = func() {
				edited += "// the user's edit\n"
				if fs {
					ed.mu.Lock()
					ed.buffers[path] = edited
					ed.mu.Unlock()
				} else {
					f.outsideWrite(t, "main.go", edited)
				}
			}
			text := func() string {
				ed.mu.Lock()
				b, ok := ed.buffers[path]
				ed.mu.Unlock()
				if ok {
					return b
				}
				return f.fileText(t, "main.go")
			}
			for tool, args := range map[string]map[string]any{
				"edit_file":  {"path": "main.go", "old_text": "hello", "new_text": "bye"},
				"write_file": {"path": "main.go", "content": "x"},
			} {
				edited = text()
				_, err := f.call(t, tool, args)
				require.ErrorIs(t, err, workspace.ErrChangedSinceRead, tool)
				assert.Regexp(t, `^main\.go changed (on disk|in the editor) while the permission request waited: read it again before (editing|replacing) it; nothing was changed$`, err.Error())
				assert.NotContains(t, ed.methods(), "fs/write_text_file", "nothing written through the editor")
				assert.Equal(t, edited, text(), "the user's edit stays")
				f.read(t, "main.go")
			}
			ed.meanwhile = nil
			ed.calls = nil
			require.NoError(t, f.edit(t, "main.go", "hello", "bye"), "a file left as it was")
			assert.Contains(t, text(), "bye")
			if fs {
				assert.Equal(t, []string{"fs/read_text_file", "session/request_permission", "fs/read_text_file", "fs/write_text_file", "tool_call_update"}, ed.methods(),
					"read before the request, and again after it")
			}
		})
	}
}

// A ranged read that shows no bytes (lines of an empty file) records
// nothing: the model saw nothing of the file, so an edit after the file
// got content is refused as of a file never read; a whole read of an
// empty file is a read of all of it.
func TestGuardEmptyRangedRead(t *testing.T) {
	f := newLedgered(t, workspace.Options{})
	f.outsideWrite(t, "empty.txt", "")
	out, err := f.call(t, "read_file", map[string]any{"path": "empty.txt", "start_line": 1, "end_line": 5})
	require.NoError(t, err)
	assert.Empty(t, out)
	_, ok := f.led.Seen("empty.txt")
	assert.False(t, ok, "nothing recorded")
	f.outsideWrite(t, "empty.txt", "secret = 1\n")
	require.ErrorIs(t, f.edit(t, "empty.txt", "1", "2"), workspace.ErrNotRead)

	f.outsideWrite(t, "empty.txt", "")
	f.read(t, "empty.txt")
	st, ok := f.led.Seen("empty.txt")
	require.True(t, ok)
	assert.True(t, st.Whole())
	f.outsideWrite(t, "empty.txt", "secret = 1\n")
	require.ErrorIs(t, f.edit(t, "empty.txt", "1", "2"), workspace.ErrChangedSinceRead)
}
