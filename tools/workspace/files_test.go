package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// localEditor is a client that asks the user's permission but has no fs
// (a v2 client, or one without fs capabilities): the tools read and write
// the disk themselves. during, when set, runs inside every permission
// request, before it is answered: what a process racing the agent does
// while the user looks at the request.
type localEditor struct {
	*fakeEditor
	during func()
}

func (e *localEditor) CanReadFiles() bool  { return false }
func (e *localEditor) CanWriteFiles() bool { return false }

func (e *localEditor) RequestPermission(ctx context.Context, call schema.ToolCallUpdate, options []schema.PermissionOption) (schema.PermissionOutcome, error) {
	if e.during != nil {
		e.during()
	}
	return e.fakeEditor.RequestPermission(ctx, call, options)
}

func localFixture(t *testing.T, o workspace.Options) (*fixture, *localEditor) {
	ed := &localEditor{fakeEditor: newEditor()}
	o.Editor = ed
	return newFixture(t, o), ed
}

func (f *fixture) exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// A dangling link that points out of the workspace is refused by every
// file tool, and no permission request is even made: the file it names
// is never created outside.
func TestDanglingLinkOut(t *testing.T) {
	f, ed := localFixture(t, workspace.Options{})
	created := filepath.Join(f.outside, "created.txt")
	require.NoError(t, os.Symlink(created, filepath.Join(f.root, "dangling")))
	rel, err := filepath.Rel(f.root, created)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(rel, filepath.Join(f.root, "dangling-rel")))
	for _, p := range []string{"dangling", "dangling-rel"} {
		for _, call := range fileCalls(p) {
			out, err := f.run(t, call.tool, call.args)
			require.ErrorIs(t, err, workspace.ErrOutside, "%s %s: output %q", call.tool, p, out)
		}
	}
	assert.Empty(t, ed.asked, "nothing outside the workspace is asked about")
	assert.False(t, f.exists(t, created), "the dangling link's target was not created")
	f.outsideUntouched(t)
}

// A name swapped for a link out of the workspace while the permission
// request waits does not redirect the write: the tool writes the file the
// request showed, or nothing.
func TestLinkSwappedDuringPermission(t *testing.T) {
	t.Run("new file", func(t *testing.T) {
		f, ed := localFixture(t, workspace.Options{})
		target := filepath.Join(f.outside, "pwned.txt")
		ed.during = func() { require.NoError(t, os.Symlink(target, filepath.Join(f.root, "new.txt"))) }
		out, err := f.run(t, "write_file", map[string]any{"path": "new.txt", "content": "pwned"})
		require.Error(t, err, "output %q", out)
		assert.Contains(t, err.Error(), "nothing was changed")
		require.Len(t, ed.asked, 1)
		assert.False(t, f.exists(t, target), "the write did not follow the link out")
		f.outsideUntouched(t)
	})
	t.Run("existing file", func(t *testing.T) {
		f, ed := localFixture(t, workspace.Options{})
		main := filepath.Join(f.root, "main.go")
		ed.during = func() {
			require.NoError(t, os.Rename(main, filepath.Join(f.root, "main.go.orig")))
			require.NoError(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), main))
		}
		for _, call := range fileCalls("main.go")[1:] {
			if call.tool == "edit_file" {
				call.args["old_text"] = "hello"
				require.NoError(t, os.Remove(main))
				require.NoError(t, os.Rename(filepath.Join(f.root, "main.go.orig"), main))
			}
			out, err := f.run(t, call.tool, call.args)
			require.Error(t, err, "%s: output %q", call.tool, out)
			assert.Contains(t, err.Error(), "changed while the permission request waited")
		}
		require.Len(t, ed.asked, 2)
		f.outsideUntouched(t)
		orig, err := os.ReadFile(filepath.Join(f.root, "main.go.orig"))
		require.NoError(t, err)
		assert.NotContains(t, string(orig), "pwned", "the file shown was not written either: the user approved a name that no longer is it")
	})
	t.Run("a link inside is followed, and stays inside", func(t *testing.T) {
		f, ed := localFixture(t, workspace.Options{})
		require.NoError(t, os.Symlink("pkg/util.go", filepath.Join(f.root, "util-link")))
		out, err := f.run(t, "write_file", map[string]any{"path": "util-link", "content": "package pkg\n"})
		require.NoError(t, err)
		assert.Equal(t, "wrote util-link (12 bytes; replaced the previous 73 bytes)", out)
		b, err := os.ReadFile(filepath.Join(f.root, "pkg", "util.go"))
		require.NoError(t, err)
		assert.Equal(t, "package pkg\n", string(b))
		require.Len(t, ed.asked, 1)
	})
}

// readWithin runs read_file on p and fails the test when it does not
// answer within a few seconds; unblock ends a blocked read.
func readWithin(t *testing.T, f *fixture, p string, unblock func()) (string, error) {
	t.Helper()
	type answer struct {
		out string
		err error
	}
	done := make(chan answer, 1)
	go func() {
		out, err := f.tools["read_file"].Run(context.Background(), json.RawMessage(fmt.Sprintf(`{"path":%q}`, p)))
		done <- answer{out, err}
	}()
	select {
	case a := <-done:
		return a.out, a.err
	case <-time.After(5 * time.Second):
		unblock()
		<-done
		t.Fatalf("read_file %s blocked", p)
		return "", nil
	}
}

// FIFOs, sockets and devices are refused by every file tool with an error
// that names the kind of file, and a FIFO never blocks a tool.
func TestNonRegularFiles(t *testing.T) {
	f, _ := localFixture(t, workspace.Options{AllowAll: true})
	fifo := filepath.Join(f.root, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	// Opening the FIFO to write (it has a reader: a blocked read_file)
	// and closing it ends the read.
	unblock := func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	}
	out, err := readWithin(t, f, "fifo", unblock)
	require.Error(t, err, "output %q", out)
	assert.Contains(t, err.Error(), "fifo is a named pipe (FIFO), not a regular file")

	sock := filepath.Join(f.root, "sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	names := map[string]string{"fifo": "named pipe (FIFO)", "sock": "socket"}
	// A device: a copy of /dev/null (root may make one; others skip it).
	if syscall.Mknod(filepath.Join(f.root, "null"), syscall.S_IFCHR|0o666, 1<<8|3) == nil {
		names["null"] = "device"
	} else {
		t.Log("no device file: mknod is not allowed here")
	}
	for name, kind := range names {
		for _, call := range fileCalls(name) {
			out, err := f.run(t, call.tool, call.args)
			require.Error(t, err, "%s %s: output %q", call.tool, name, out)
			assert.Contains(t, err.Error(), name+" is a "+kind+", not a regular file", call.tool)
		}
	}
	out, err = f.run(t, "search", map[string]any{"pattern": "x"})
	require.NoError(t, err, "search skips them")
	assert.NotContains(t, out, "fifo")
}

// A file with more than one hard link may be the same file as one outside
// the workspace: it is written only after a permission request that says
// so, also when the tool was allowed always; with nobody to ask it is
// refused.
func TestHardLinks(t *testing.T) {
	f, ed := localFixture(t, workspace.Options{})
	outside := filepath.Join(f.outside, "secret.txt")
	linked := filepath.Join(f.root, "linked.txt")
	require.NoError(t, os.Link(outside, linked))

	ed.answer = workspace.OptionAllowAlways
	_, err := f.run(t, "write_file", map[string]any{"path": "new.txt", "content": "x"})
	require.NoError(t, err)
	require.Len(t, ed.asked, 1)

	ed.answer = workspace.OptionReject
	out, err := f.run(t, "write_file", map[string]any{"path": "linked.txt", "content": "pwned"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, workspace.Declined), out)
	require.Len(t, ed.asked, 2, "asked although write_file is allowed always")
	title, _ := ed.asked[1].Title.Get()
	assert.Contains(t, title, "linked.txt has 2 hard links")
	f.outsideUntouched(t)

	ed.answer = workspace.OptionAllow
	_, err = f.run(t, "edit_file", map[string]any{"path": "linked.txt", "old_text": "SECRET", "new_text": "CHANGED"})
	require.NoError(t, err)
	require.Len(t, ed.asked, 3)
	title, _ = ed.asked[2].Title.Get()
	assert.Contains(t, title, "linked.txt has 2 hard links")
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "CHANGED\n", string(b), "allowed: the file (under both names) is written")

	for _, o := range []workspace.Options{{}, {Editor: ed, AllowAll: true}} {
		nobody := newFixture(t, o)
		require.NoError(t, os.Link(filepath.Join(nobody.outside, "secret.txt"), filepath.Join(nobody.root, "linked.txt")))
		for _, call := range fileCalls("linked.txt")[1:] {
			_, err := nobody.run(t, call.tool, call.args)
			require.Error(t, err, call.tool)
			assert.Contains(t, err.Error(), "linked.txt has 2 hard links")
		}
		nobody.outsideUntouched(t)
	}
}

// Neither / nor the user's home directory is a session root; additional
// directories are absolute, existing directories.
func TestNewRefusesRootAndHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, dirs := range [][]string{{"/"}, {home}, {home + "/"}, {t.TempDir(), "/"}, {t.TempDir(), home}} {
		_, err := workspace.New(dirs[0], dirs[1:]...)
		require.ErrorIs(t, err, workspace.ErrBadRoot, "%v", dirs)
		bad := filepath.Clean(dirs[len(dirs)-1])
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", bad), "the error names the directory")
	}
	link := filepath.Join(t.TempDir(), "home-link")
	require.NoError(t, os.Symlink(home, link))
	_, err := workspace.New(link)
	require.ErrorIs(t, err, workspace.ErrBadRoot, "home through a link")
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", link))

	dir := t.TempDir()
	for _, extra := range []string{"relative", filepath.Join(dir, "missing")} {
		_, err := workspace.New(dir, extra)
		require.ErrorIs(t, err, workspace.ErrBadRoot, extra)
		assert.Contains(t, err.Error(), extra)
	}
	sub := filepath.Join(home, "project")
	require.NoError(t, os.Mkdir(sub, 0o755))
	ws, err := workspace.New(sub)
	require.NoError(t, err, "a directory below home is fine")
	require.NoError(t, ws.Close())
}

// A name that begins with ".." (like "..foo") is an ordinary name inside
// the workspace.
func TestDotDotNames(t *testing.T) {
	f, ed := localFixture(t, workspace.Options{AllowAll: true})
	out, err := f.run(t, "write_file", map[string]any{"path": "..foo/..bar", "content": "x"})
	require.NoError(t, err)
	assert.Equal(t, "wrote ..foo/..bar (1 bytes)", out)
	out, err = f.run(t, "read_file", map[string]any{"path": filepath.Join(f.root, "..foo", "..bar")})
	require.NoError(t, err)
	assert.Equal(t, "x", out)
	out, err = f.run(t, "search", map[string]any{"pattern": "x", "path": "..foo"})
	require.NoError(t, err)
	assert.Equal(t, "..foo/..bar:1: x\n", out)
	assert.Empty(t, ed.asked)
	_, err = f.run(t, "read_file", map[string]any{"path": "../outside/secret.txt"})
	require.ErrorIs(t, err, workspace.ErrOutside, "while .. itself still leaves")
}

// A write that fails after making parent directories removes the ones it
// made, and only those.
func TestFailedWriteRemovesItsDirectories(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	long := strings.Repeat("x", 300) // longer than a file name may be
	_, err := f.run(t, "write_file", map[string]any{"path": "pkg/a/b/c/" + long, "content": "x"})
	require.Error(t, err)
	assert.False(t, f.exists(t, filepath.Join(f.root, "pkg", "a")), "the directories it made are gone")
	assert.True(t, f.exists(t, filepath.Join(f.root, "pkg", "util.go")), "what was there stays")

	// Through an editor whose write fails.
	ed := &failingEditor{fakeEditor: newEditor()}
	g := newFixture(t, workspace.Options{Editor: ed})
	_, err = g.run(t, "write_file", map[string]any{"path": "pkg/x/y/z.txt", "content": "x"})
	require.ErrorContains(t, err, "the editor cannot save")
	assert.False(t, g.exists(t, filepath.Join(g.root, "pkg", "x")), "the directories it made are gone")
	assert.True(t, g.exists(t, filepath.Join(g.root, "pkg", "util.go")))
}

// failingEditor is a client with fs whose writes fail.
type failingEditor struct{ *fakeEditor }

func (e *failingEditor) WriteTextFile(context.Context, string, string) error {
	return errors.New("the editor cannot save")
}

// allocated is the number of bytes run allocates.
func allocated(run func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// read_file streams: a line of a 300 MB file costs a few times the output
// bound, not the file.
func TestReadFileStreams(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	p := filepath.Join(f.root, "big.txt")
	file, err := os.Create(p)
	require.NoError(t, err)
	for i := 1; i <= 20_000; i++ {
		_, err := fmt.Fprintf(file, "line %d\n", i)
		require.NoError(t, err)
	}
	require.NoError(t, file.Truncate(300<<20)) // the rest is a hole
	require.NoError(t, file.Close())

	bound := uint64(8*workspace.DefaultMaxOutput + 256<<10)
	var out string
	n := allocated(func() {
		out, err = f.run(t, "read_file", map[string]any{"path": "big.txt", "start_line": 1, "end_line": 1})
	})
	require.NoError(t, err)
	assert.Equal(t, "line 1\n", out)
	assert.Less(t, n, bound, "bytes allocated for lines 1..1")
	t.Logf("read_file lines 1..1 of 300 MB: %d bytes allocated", n)

	n = allocated(func() {
		out, err = f.run(t, "read_file", map[string]any{"path": "big.txt", "start_line": 10_000, "end_line": 10_002})
	})
	require.NoError(t, err)
	assert.Equal(t, "line 10000\nline 10001\nline 10002\n", out)
	assert.Less(t, n, bound, "bytes allocated for lines 10000..10002")

	n = allocated(func() { out, err = f.run(t, "read_file", map[string]any{"path": "big.txt"}) })
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "line 1\nline 2\n"))
	assert.True(t, strings.HasSuffix(out, fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", workspace.DefaultMaxOutput, 300<<20)), out[len(out)-100:])
	assert.Less(t, n, bound, "bytes allocated for the whole file")
	t.Logf("read_file of 300 MB: %d bytes allocated", n)
}

// search keeps a bounded part of every line, so 20 matching lines of
// 900 KB cost a few times the output bound, not 18 MB.
func TestSearchBoundedMemory(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	p := filepath.Join(f.root, "wide.txt")
	file, err := os.Create(p)
	require.NoError(t, err)
	line := strings.Repeat("a", 900_000) + " needle\n"
	for range 20 {
		_, err := file.WriteString(line)
		require.NoError(t, err)
	}
	require.NoError(t, file.Close())

	var out string
	n := allocated(func() { out, err = f.run(t, "search", map[string]any{"pattern": "needle"}) })
	require.NoError(t, err)
	assert.Less(t, n, uint64(8*workspace.DefaultMaxOutput+256<<10), "bytes allocated")
	assert.LessOrEqual(t, len(out), workspace.DefaultMaxOutput)
	for i := 1; i <= 20; i++ {
		assert.Contains(t, out, fmt.Sprintf("wide.txt:%d: ", i))
	}
	assert.Contains(t, out, "[line of 900007 bytes: bytes ")
	assert.Contains(t, out, " needle", "the part shown is around the match")

	t.Logf("search of 20 lines of 900 KB: %d bytes allocated", n)

	// A regular expression streams over a long line (fewer lines: slower).
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "pkg", "wide.txt"), []byte(line+line), 0o644))
	n = allocated(func() {
		out, err = f.run(t, "search", map[string]any{"pattern": `needle$`, "regex": true, "path": "pkg"})
	})
	require.NoError(t, err)
	assert.Less(t, n, uint64(8*workspace.DefaultMaxOutput+256<<10), "bytes allocated (regex)")
	t.Logf("regex search of 2 lines of 900 KB: %d bytes allocated", n)
	assert.True(t, strings.HasPrefix(out, "pkg/wide.txt:1: "), out[:min(len(out), 200)])
	assert.Contains(t, out, "pkg/wide.txt:2: ")
	assert.Contains(t, out, " needle [line of 900007 bytes: bytes ")
}

// A line longer than 1 MiB is searched whole and the search of its file
// goes on after it; a binary file (a NUL in its first 8 KiB) is skipped
// and the answer says so.
func TestSearchLongLinesAndBinaryFiles(t *testing.T) {
	f := newFixture(t, workspace.Options{})
	long := strings.Repeat("b", 2<<20) + "needle\nneedle again\n"
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "long.txt"), []byte(long), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.root, "blob.bin"), []byte("\x00\x01needle\n"), 0o644))
	for _, regex := range []bool{false, true} {
		out, err := f.run(t, "search", map[string]any{"pattern": "needle", "regex": regex})
		require.NoError(t, err)
		assert.Contains(t, out, "long.txt:1: ", "regex %v", regex)
		assert.Contains(t, out, "long.txt:2: needle again\n", "regex %v", regex)
		assert.NotContains(t, out, "blob.bin:")
		assert.Contains(t, out, "[skipped 1 binary file: blob.bin]")
	}
	out, err := f.run(t, "search", map[string]any{"pattern": "nowhere"})
	require.NoError(t, err)
	assert.Equal(t, "no matches\n[skipped 1 binary file: blob.bin]\n", out)
}

// rangeEditor is a client with fs that answers fs/read_text_file with the
// lines asked for, and records what was asked.
type rangeEditor struct {
	*fakeEditor
	ranges [][2]int // line, limit
}

func (e *rangeEditor) ReadTextFile(_ context.Context, path string, line, limit int) (string, error) {
	e.ranges = append(e.ranges, [2]int{line, limit})
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(string(data), "\n")
	start := min(max(line, 1)-1, len(lines))
	end := len(lines)
	if limit > 0 {
		end = min(start+limit, end)
	}
	return strings.Join(lines[start:end], ""), nil
}

// The editor is asked for the lines read_file wants, not the whole file.
func TestEditorReadsARange(t *testing.T) {
	ed := &rangeEditor{fakeEditor: newEditor()}
	f := newFixture(t, workspace.Options{Editor: ed})
	out, err := f.run(t, "read_file", map[string]any{"path": "main.go", "start_line": 3, "end_line": 4})
	require.NoError(t, err)
	assert.Equal(t, "func main() {\n\tprintln(\"hello\")\n", out)
	assert.Equal(t, [][2]int{{3, 2}}, ed.ranges)
}

// An additional directory is a directory of the session like the working
// directory, reached by an absolute path or through ".." by name; each
// directory is its own Root, so a link from one into another is refused
// like any link out.
func TestAdditionalDirectories(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root, other := filepath.Join(base, "project"), filepath.Join(base, "extra")
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "a.txt"), []byte("shared text\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(other, "a.txt"), filepath.Join(root, "to-shared")))
	ws, err := workspace.New(root, other)
	require.NoError(t, err)
	defer ws.Close()
	f := &fixture{root: root, tools: map[string]session.Tool{}}
	for _, tool := range ws.Tools(workspace.Options{}) {
		f.tools[tool.Name] = tool
	}
	for _, p := range []string{"../extra/a.txt", filepath.Join(other, "a.txt")} {
		out, err := f.run(t, "read_file", map[string]any{"path": p})
		require.NoError(t, err, p)
		assert.Equal(t, "shared text\n", out)
	}
	out, err := f.run(t, "write_file", map[string]any{"path": "../extra/new/b.txt", "content": "b"})
	require.NoError(t, err)
	assert.Equal(t, "wrote "+filepath.Join(other, "new", "b.txt")+" (1 bytes)", out)
	out, err = f.run(t, "search", map[string]any{"pattern": "shared", "path": other})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(other, "a.txt")+":1: shared text\n", out)
	_, err = f.run(t, "read_file", map[string]any{"path": "to-shared"})
	require.ErrorIs(t, err, workspace.ErrOutside)
}
