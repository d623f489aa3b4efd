package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/acp"
)

// Editor is the ACP client of a session as the tools use it;
// *acp.ToolClient is one. Each method blocks until the client answers or
// ctx ends.
type Editor interface {
	CanReadFiles() bool
	CanWriteFiles() bool
	CanRunTerminals() bool
	ReadTextFile(ctx context.Context, path string, line, limit int) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
	CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (string, error)
	TerminalOutput(ctx context.Context, terminalID string) (*acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, terminalID string) (*acp.TerminalExitStatus, error)
	KillTerminal(ctx context.Context, terminalID string) error
	ReleaseTerminal(ctx context.Context, terminalID string) error
	RequestPermission(ctx context.Context, toolCall acp.ToolCallUpdate, options []acp.PermissionOption) (acp.PermissionOutcome, error)
	UpdateToolCall(ctx context.Context, u acp.ToolCallUpdate) error
}

var _ Editor = (*acp.ToolClient)(nil)

// The options of a permission request.
const (
	OptionAllow       = "allow"
	OptionAllowAlways = "allow_always"
	OptionReject      = "reject"
)

// Declined begins the result of a call the user declined.
const Declined = "The user declined: "

// allowed is the set of tools the user allowed always, in one session (it
// is not stored: a session opened anew asks again). A session runs its
// tools one at a time on one goroutine (session.Tool), so the set has that
// one owner and needs no lock.
type allowed map[string]bool

// permit asks the user to allow the call of tool that ctx runs, unless
// nothing asks (no editor, AllowAll) or the user allowed the tool always.
// For an edit, path, oldText and newText make the diff the user sees. It
// returns the result of a declined call ("" when allowed), or why it could
// not ask: the turn was cancelled, or the client cancelled the request.
func (t tools) permit(ctx context.Context, tool, title string, kind acp.ToolKind, path, oldText, newText string) (string, error) {
	if t.o.Editor == nil || t.o.AllowAll || t.allowed[tool] {
		return "", nil
	}
	call := acp.ToolCallUpdate{Title: acp.Value(title), Kind: acp.Value(kind)}
	if path != "" {
		shown := t.w.shown(path)
		call.Locations = acp.Value([]acp.ToolCallLocation{{Path: shown}})
		call.Content = acp.Value([]acp.ToolCallContent{{Diff: &acp.ToolDiff{Path: shown, OldText: oldText, NewText: newText}}})
	}
	outcome, err := t.o.Editor.RequestPermission(ctx, call, []acp.PermissionOption{
		{OptionID: OptionAllow, Name: "Allow", Kind: acp.PermissionAllowOnce},
		{OptionID: OptionAllowAlways, Name: "Always allow " + tool + " in this session", Kind: acp.PermissionAllowAlways},
		{OptionID: OptionReject, Name: "Reject", Kind: acp.PermissionRejectOnce},
	})
	if err != nil {
		return "", err
	}
	switch id, _ := outcome.Selected(); {
	case outcome.Outcome == "cancelled" && ctx.Err() != nil:
		return "", errors.New("the permission request was cancelled with the turn; nothing was changed")
	case outcome.Outcome == "cancelled":
		// The client cancelled the request but not the turn, which goes on.
		return "", errors.New("the permission request was cancelled by the client without an answer, so this call was not made; nothing was changed (the turn goes on)")
	case id == OptionAllow:
		return "", nil
	case id == OptionAllowAlways:
		t.allowed[tool] = true
		return "", nil
	}
	return Declined + title + " was not allowed; nothing was changed.", nil
}

// showDiff shows the editor what a write did to the file at p (resolved):
// a tool_call_update of the running call whose diff has the whole texts
// before and after, so that it (and, on ACP v2, its patch) is of the file
// and not of the edit's fragments. Like the permission request's diff it
// is in-progress detail: the call's final report is made from history.
// Without an editor nothing is sent; a failure to send changes nothing.
func (t tools) showDiff(ctx context.Context, p, oldText, newText string) {
	if t.o.Editor == nil {
		return
	}
	shown := t.w.shown(p)
	_ = t.o.Editor.UpdateToolCall(ctx, acp.ToolCallUpdate{
		Locations: acp.Value([]acp.ToolCallLocation{{Path: shown}}),
		Content:   acp.Value([]acp.ToolCallContent{{Diff: &acp.ToolDiff{Path: shown, OldText: oldText, NewText: newText}}}),
	})
}

// read returns the text of the file at p (resolved; asked for as name):
// through the editor when it reads files (it sees unsaved changes),
// otherwise from the disk.
func (t tools) read(ctx context.Context, p, name string) (string, error) {
	if ed := t.o.Editor; ed != nil && ed.CanReadFiles() {
		return ed.ReadTextFile(ctx, t.w.shown(p), 0, 0)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%s is not a text file", name)
	}
	return string(data), nil
}

// write writes content to the file at p (resolved): through the editor
// when it writes files, otherwise to the disk with perm. Missing parent
// directories are made first.
func (t tools) write(ctx context.Context, p, content string, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if ed := t.o.Editor; ed != nil && ed.CanWriteFiles() {
		return ed.WriteTextFile(ctx, t.w.shown(p), content)
	}
	return os.WriteFile(p, []byte(content), perm)
}

// runInTerminal runs command in a terminal of the editor, shown live in
// the tool call. On a timeout the command is killed; on a cancelled turn
// too; the terminal is always released.
func (t tools) runInTerminal(ctx context.Context, command string, timeout time.Duration) (string, error) {
	ed := t.o.Editor
	id, err := ed.CreateTerminal(ctx, acp.CreateTerminalRequest{
		Command: "sh", Args: []string{"-c", command}, Cwd: t.w.given, OutputByteLimit: t.o.MaxOutput,
	})
	if err != nil {
		return "", err
	}
	// Sent even when ctx has ended: the editor frees the terminal.
	defer func() { _ = ed.ReleaseTerminal(ctx, id) }()
	_ = ed.UpdateToolCall(ctx, acp.ToolCallUpdate{
		Status:  acp.Value(acp.ToolCallInProgress),
		Content: acp.Value([]acp.ToolCallContent{{Terminal: &acp.ToolTerminal{TerminalID: id}}}),
	})
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exit, err := ed.WaitForTerminalExit(wctx, id)
	status := ""
	switch {
	case err == nil:
		status = exitText(exit)
	case ctx.Err() != nil: // the turn was cancelled
		_ = ed.KillTerminal(ctx, id)
		return "", ctx.Err()
	case wctx.Err() != nil:
		if err := ed.KillTerminal(ctx, id); err != nil {
			return "", fmt.Errorf("the command timed out and cannot be killed: %w", err)
		}
		status = fmt.Sprintf("killed after the %v timeout", timeout)
	default:
		return "", err
	}
	out, err := ed.TerminalOutput(ctx, id)
	if err != nil {
		return "", err
	}
	text := out.Output
	if len(text) > t.o.MaxOutput { // a client that ignores the limit
		text = text[len(text)-t.o.MaxOutput:]
		out.Truncated = true
	}
	text = strings.ToValidUTF8(text, "")
	if out.Truncated {
		text = fmt.Sprintf("[output cut: only the last %d bytes shown]\n", len(text)) + text
	}
	return status + "\n" + text, nil
}

// exitText says how a terminal's command ended.
func exitText(s *acp.TerminalExitStatus) string {
	switch {
	case s.ExitCode != nil:
		return fmt.Sprintf("exit status %d", *s.ExitCode)
	case s.Signal != "":
		return "killed by signal " + s.Signal
	}
	return "exit status unknown"
}
