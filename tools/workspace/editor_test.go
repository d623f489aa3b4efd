package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// fakeEditor is an ACP client with fs and terminals: files are its
// buffers (read from the disk when it has none), writes go to its buffers
// only, and its one terminal command behaves as exit says.
type fakeEditor struct {
	mu       sync.Mutex
	buffers  map[string]string
	calls    []string // method names, in order
	answer   string   // the option chosen for permission requests; "" = cancelled
	asked    []schema.ToolCallUpdate
	exit     *int   // the terminal's exit code; nil: it runs until killed
	output   string // the terminal's output
	killed   bool
	released bool
	block    chan struct{} // when set, permission requests wait for ctx
}

func newEditor() *fakeEditor {
	return &fakeEditor{buffers: map[string]string{}, answer: workspace.OptionAllow}
}

func (e *fakeEditor) record(m string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, m)
}

func (e *fakeEditor) methods() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

func (e *fakeEditor) CanReadFiles() bool    { return true }
func (e *fakeEditor) CanWriteFiles() bool   { return true }
func (e *fakeEditor) CanRunTerminals() bool { return true }

func (e *fakeEditor) ReadTextFile(_ context.Context, path string, _, _ int) (string, error) {
	e.record("fs/read_text_file")
	e.mu.Lock()
	b, ok := e.buffers[path]
	e.mu.Unlock()
	if ok {
		return b, nil
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

func (e *fakeEditor) WriteTextFile(_ context.Context, path, content string) error {
	e.record("fs/write_text_file")
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buffers[path] = content
	return nil
}

func (e *fakeEditor) CreateTerminal(_ context.Context, req schema.CreateTerminalRequest) (string, error) {
	e.record("terminal/create " + strings.Join(req.Args, " "))
	return "term-1", nil
}

func (e *fakeEditor) TerminalOutput(context.Context, string) (*schema.TerminalOutputResponse, error) {
	e.record("terminal/output")
	return &schema.TerminalOutputResponse{Output: e.output}, nil
}

func (e *fakeEditor) WaitForTerminalExit(ctx context.Context, _ string) (*schema.TerminalExitStatus, error) {
	e.record("terminal/wait_for_exit")
	if e.exit != nil {
		return &schema.TerminalExitStatus{ExitCode: e.exit}, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (e *fakeEditor) KillTerminal(context.Context, string) error {
	e.record("terminal/kill")
	e.killed = true
	return nil
}

func (e *fakeEditor) ReleaseTerminal(context.Context, string) error {
	e.record("terminal/release")
	e.released = true
	return nil
}

func (e *fakeEditor) RequestPermission(ctx context.Context, call schema.ToolCallUpdate, options []schema.PermissionOption) (schema.PermissionOutcome, error) {
	e.record("session/request_permission")
	e.mu.Lock()
	e.asked = append(e.asked, call)
	e.mu.Unlock()
	if e.block != nil {
		close(e.block)
		<-ctx.Done()
		return schema.PermissionOutcome{}, ctx.Err()
	}
	if e.answer == "" {
		return schema.PermissionOutcome{Outcome: "cancelled"}, nil
	}
	return schema.PermissionOutcome{Outcome: "selected", OptionID: e.answer}, nil
}

func (e *fakeEditor) UpdateToolCall(_ context.Context, u schema.ToolCallUpdate) error {
	e.record("tool_call_update")
	return nil
}

func editorFixture(t *testing.T, ed *fakeEditor, o workspace.Options) *fixture {
	o.Editor = ed
	return newFixture(t, o)
}

// In client mode every tool is confined the same way, and a refused path
// never reaches the editor: no read, no write, no permission request.
func TestEditorConfinement(t *testing.T) {
	ed := newEditor()
	f := editorFixture(t, ed, workspace.Options{})
	for _, p := range []string{"../outside/secret.txt", filepath.Join(f.outside, "secret.txt"), "secret-link", "out-dir/secret.txt", "out-dir/new.txt"} {
		for _, call := range append(fileCalls(p),
			toolCall{"list_files", map[string]any{"path": filepath.Dir(p)}},
			toolCall{"search", map[string]any{"pattern": "SECRET", "path": filepath.Dir(p)}}) {
			if (call.tool == "list_files" || call.tool == "search") && filepath.Dir(p) == "." {
				continue
			}
			out, err := f.run(t, call.tool, call.args)
			require.ErrorIs(t, err, workspace.ErrOutside, "%s %s: output %q", call.tool, p, out)
		}
	}
	assert.Empty(t, ed.methods(), "nothing outside the workspace reaches the editor")
	f.outsideUntouched(t)
}

// Files are read and written through the editor (its unsaved buffer is
// what read_file and edit_file see); write_file and edit_file ask first
// and show the diff; a rejection changes nothing and says so.
func TestEditorFilesAndPermission(t *testing.T) {
	ed := newEditor()
	f := editorFixture(t, ed, workspace.Options{})
	main := filepath.Join(f.root, "main.go")
	ed.buffers[main] = "package main // unsaved\n"
	out, err := f.run(t, "read_file", map[string]any{"path": "main.go"})
	require.NoError(t, err)
	assert.Equal(t, "package main // unsaved\n", out)

	ed.answer = workspace.OptionReject
	out, err = f.run(t, "edit_file", map[string]any{"path": "main.go", "old_text": "unsaved", "new_text": "edited"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, workspace.Declined), out)
	assert.Contains(t, out, "nothing was changed")
	assert.Equal(t, "package main // unsaved\n", ed.buffers[main], "a declined edit changes nothing")
	assert.NotContains(t, ed.methods(), "fs/write_text_file")
	require.Len(t, ed.asked, 1)
	content, _ := ed.asked[0].Content.Get()
	require.Len(t, content, 1)
	assert.Equal(t, &schema.ToolDiff{Path: main, OldText: "package main // unsaved\n", NewText: "package main // edited\n"}, content[0].Diff,
		"the permission request shows the whole change")

	ed.answer = workspace.OptionAllow
	out, err = f.run(t, "edit_file", map[string]any{"path": "main.go", "old_text": "unsaved", "new_text": "edited"})
	require.NoError(t, err)
	assert.Equal(t, "edited main.go at line 1", out)
	assert.Equal(t, "package main // edited\n", ed.buffers[main])
	disk, _ := os.ReadFile(main)
	assert.NotContains(t, string(disk), "edited", "the editor wrote it, not the agent")

	ed.answer = ""
	_, err = f.run(t, "write_file", map[string]any{"path": "new.txt", "content": "x"})
	assert.ErrorContains(t, err, "cancelled")
	assert.NotContains(t, ed.buffers, filepath.Join(f.root, "new.txt"), "a cancelled request changes nothing")

	ed.answer = workspace.OptionAllowAlways
	_, err = f.run(t, "write_file", map[string]any{"path": "new.txt", "content": "x"})
	require.NoError(t, err)
	asked := len(ed.asked)
	ed.answer = workspace.OptionReject
	out, err = f.run(t, "write_file", map[string]any{"path": "new.txt", "content": "y"})
	require.NoError(t, err)
	assert.Equal(t, "wrote new.txt (1 bytes; replaced the previous 1 bytes)", out)
	assert.Len(t, ed.asked, asked, "allowed always: write_file does not ask again in this session")
	assert.Equal(t, "y", ed.buffers[filepath.Join(f.root, "new.txt")])
	_, err = f.run(t, "edit_file", map[string]any{"path": "new.txt", "old_text": "y", "new_text": "z"})
	require.NoError(t, err)
	assert.Len(t, ed.asked, asked+1, "only the tool allowed always is not asked about")
}

// With AllowAll nothing asks.
func TestEditorAllowAll(t *testing.T) {
	ed := newEditor()
	ed.answer = workspace.OptionReject
	f := editorFixture(t, ed, workspace.Options{AllowAll: true})
	_, err := f.run(t, "write_file", map[string]any{"path": "a.txt", "content": "x"})
	require.NoError(t, err)
	code := 0
	ed.exit = &code
	_, err = f.run(t, "run_command", map[string]any{"command": "true"})
	require.NoError(t, err)
	assert.NotContains(t, ed.methods(), "session/request_permission")
}

// A cancelled turn ends a pending permission request at once: the tool
// returns the context's error and nothing is changed.
func TestEditorCancelDuringPermission(t *testing.T) {
	ed := newEditor()
	ed.block = make(chan struct{})
	f := editorFixture(t, ed, workspace.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := f.tools["write_file"].Run(ctx, json.RawMessage(`{"path":"a.txt","content":"x"}`))
		done <- err
	}()
	<-ed.block
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.NotContains(t, ed.methods(), "fs/write_text_file")
	_, err := os.Stat(filepath.Join(f.root, "a.txt"))
	assert.True(t, os.IsNotExist(err))
}

// run_command runs in the editor's terminal, embedded in the tool call;
// the output is bounded; a timeout or a cancelled turn kills the command;
// the terminal is always released.
func TestEditorTerminal(t *testing.T) {
	t.Run("exit", func(t *testing.T) {
		ed := newEditor()
		code := 3
		ed.exit, ed.output = &code, strings.Repeat("y", 500)+"tail"
		f := editorFixture(t, ed, workspace.Options{MaxOutput: 100})
		out, err := f.run(t, "run_command", map[string]any{"command": "make test"})
		require.NoError(t, err)
		assert.Equal(t, "exit status 3\n[output cut: only the last 100 bytes shown]\n"+strings.Repeat("y", 96)+"tail", out)
		methods := ed.methods()
		require.Len(t, methods, 6)
		assert.True(t, strings.HasSuffix(methods[1], " -- sh -c make test"), "the helper runs sh -c: %s", methods[1])
		methods[1] = "terminal/create"
		assert.Equal(t, []string{"session/request_permission", "terminal/create", "tool_call_update",
			"terminal/wait_for_exit", "terminal/output", "terminal/release"}, methods)
	})
	t.Run("timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ed := newEditor()
			ed.output = "partial"
			f := editorFixture(t, ed, workspace.Options{CommandTimeout: time.Minute})
			out, err := f.run(t, "run_command", map[string]any{"command": "sleep 1000"})
			require.Error(t, err, "a command killed at its timeout fails; output %q", out)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, "killed after the 1m0s timeout; its output until then:\npartial", err.Error())
			assert.True(t, ed.killed)
			assert.True(t, ed.released)
		})
	})
	t.Run("cancel", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ed := newEditor()
			f := editorFixture(t, ed, workspace.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() {
				_, err := f.tools["run_command"].Run(ctx, json.RawMessage(`{"command":"sleep 1000"}`))
				done <- err
			}()
			synctest.Wait() // waiting for the command to exit
			cancel()
			assert.ErrorIs(t, <-done, context.Canceled)
			assert.True(t, ed.killed)
			assert.True(t, ed.released)
			assert.Equal(t, "terminal/release", ed.methods()[len(ed.methods())-1])
		})
	})
}

// Describe derives how each call is shown from its arguments and result.
func TestDescribe(t *testing.T) {
	d := workspace.Describe("/w")
	call := func(name, args string) history.ToolCall {
		return history.ToolCall{ID: "c", Name: name, Arguments: json.RawMessage(args)}
	}
	line := func(n uint32) *uint32 { return &n }

	read := d(call("read_file", `{"path":"a.go","start_line":7}`), nil)
	assert.Equal(t, schema.ToolKindRead, read.Kind)
	assert.Equal(t, "Read a.go", read.Title)
	assert.Equal(t, []schema.ToolCallLocation{{Path: "/w/a.go", Line: line(7)}}, read.Locations)

	edit := call("edit_file", `{"path":"pkg/b.go","old_text":"x := 1","new_text":"x := 2"}`)
	shown := d(edit, nil)
	assert.Equal(t, schema.ToolKindEdit, shown.Kind)
	assert.Equal(t, []schema.ToolCallContent{{Diff: &schema.ToolDiff{Path: "/w/pkg/b.go", OldText: "x := 1", NewText: "x := 2", Partial: true}}}, shown.Content, "fragments: partial")
	done := d(edit, &history.Message{Text: "edited pkg/b.go at line 12"})
	assert.Equal(t, shown.Content, done.Content)
	assert.Equal(t, []schema.ToolCallLocation{{Path: "/w/pkg/b.go", Line: line(12)}}, done.Locations)
	assert.Empty(t, done.Status)
	failed := d(edit, &history.Message{Text: "error: tool edit_file failed: old_text does not occur"})
	assert.Empty(t, failed.Content, "a failed edit shows no diff")
	declined := d(edit, &history.Message{Text: workspace.Declined + "Edit pkg/b.go was not allowed; nothing was changed."})
	assert.Empty(t, declined.Content, "a declined edit shows no diff")
	assert.Equal(t, schema.ToolCallFailed, declined.Status)

	write := d(call("write_file", `{"path":"/w/new.txt","content":"hi\n"}`), nil)
	assert.Equal(t, []schema.ToolCallContent{{Diff: &schema.ToolDiff{Path: "/w/new.txt", NewText: "hi\n", Partial: true}}}, write.Content, "oldText null; partial: the file may have existed")
	// Finished: a new file is the whole file (an "add" on v2, as its
	// permission request was); a replaced one stays partial.
	wcall := call("write_file", `{"path":"/w/new.txt","content":"hi\n"}`)
	made := d(wcall, &history.Message{Text: "wrote new.txt (3 bytes)"})
	assert.Equal(t, []schema.ToolCallContent{{Diff: &schema.ToolDiff{Path: "/w/new.txt", NewText: "hi\n"}}}, made.Content, "a new file: not partial")
	replaced := d(wcall, &history.Message{Text: "wrote new.txt (3 bytes; replaced the previous 9 bytes)"})
	assert.True(t, replaced.Content[0].Diff.Partial, "a replaced file: partial")
	odd := d(wcall, &history.Message{Text: "wrote x; replaced the previous y (3 bytes)"})
	assert.False(t, odd.Content[0].Diff.Partial, "a new file whose name holds the replaced wording is still new")

	run := d(call("run_command", `{"command":"go test ./..."}`), nil)
	assert.Equal(t, schema.ToolKindExecute, run.Kind)
	assert.Equal(t, "Run go test ./...", run.Title)
	assert.Equal(t, schema.ToolKindSearch, d(call("search", `{"pattern":"TODO"}`), nil).Kind)
	assert.Equal(t, schema.ToolKindSearch, d(call("list_files", `{}`), nil).Kind)
	assert.Zero(t, d(call("echo", `{"text":"x"}`), nil), "other tools keep the defaults")
	assert.Equal(t, schema.ToolKindRead, d(call("read_file", `not json`), nil).Kind, "bad arguments are shown without them")
}

// TestUnconfinedCommandSaysSoWhenAsking: a command that will run without
// the sandbox says so first in its permission request's title, and the
// command line the model wrote is shown so that nothing in it (a newline,
// padding, a formatting character) hides the rest or the warning.
func TestUnconfinedCommandSaysSoWhenAsking(t *testing.T) {
	ed := newEditor()
	exit := 0
	ed.exit = &exit
	f := editorFixture(t, ed, workspace.Options{Sandbox: sandbox.Policy{Mode: sandbox.Off}})
	_, err := f.run(t, "run_command", map[string]any{"command": "true\n\u202erm -rf ~" + strings.Repeat(" ", 400)})
	require.NoError(t, err)
	require.Len(t, ed.asked, 1)
	title, _ := ed.asked[0].Title.Get()
	assert.True(t, strings.HasPrefix(title, "[the sandbox is off (--sandbox=off)"), title)
	assert.Contains(t, title, `Run "true\n\u202erm -rf ~`)
	assert.NotContains(t, title, "\n")
	assert.Contains(t, title, "(416 bytes)")
}
