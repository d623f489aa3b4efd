package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	acpschema "github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/tools/sandbox"
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
	CreateTerminal(ctx context.Context, req acpschema.CreateTerminalRequest) (string, error)
	TerminalOutput(ctx context.Context, terminalID string) (*acpschema.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, terminalID string) (*acpschema.TerminalExitStatus, error)
	KillTerminal(ctx context.Context, terminalID string) error
	ReleaseTerminal(ctx context.Context, terminalID string) error
	RequestPermission(ctx context.Context, toolCall acpschema.ToolCallUpdate, options []acpschema.PermissionOption) (acpschema.PermissionOutcome, error)
	UpdateToolCall(ctx context.Context, u acpschema.ToolCallUpdate) error
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

// request is what a permission request shows: its title (already
// quoted where it holds a name, see textcut.Quote) and kind; for an edit,
// path (as the client knows it), oldText and newText make the diff the
// user sees; text, when set, is shown as the request's content (an MCP
// call's arguments).
type request struct {
	title                  string
	kind                   acpschema.ToolKind
	path, oldText, newText string
	text                   string
}

// permit decides a call of tool that ctx runs, which does a, by the
// session's mode (see decide): refused with an error saying so, run, or
// run after the user's permission (asked with r) unless the user allowed
// the tool always. It returns the result of a declined call (""
// when allowed), or why the call is not made: the mode refuses it, the
// turn was cancelled, or the client cancelled the request.
func (t tools) permit(ctx context.Context, a action, tool string, r request) (string, error) {
	if free, err := t.unasked(a, tool); free || err != nil {
		return "", err
	}
	return t.ask(ctx, tool, r)
}

// unasked reports whether a call of tool, which does a, runs without a
// permission request (true), is refused by the session's mode (an error
// saying so), or runs only after one (false).
func (t tools) unasked(a action, tool string) (bool, error) {
	switch v, mode := t.o.verdict(a); {
	case v == refuse:
		return false, refused(tool, mode, a)
	case v == allow || t.allowed[tool]:
		return true, nil
	}
	return false, nil
}

// ask is permit's request, made whatever was allowed before.
func (t tools) ask(ctx context.Context, tool string, r request) (string, error) {
	call := acpschema.ToolCallUpdate{Title: acpschema.Value(r.title), Kind: acpschema.Value(r.kind)}
	if r.path != "" {
		call.Locations = acpschema.Value(locations(r.path, 0))
		call.Content = acpschema.Value([]acpschema.ToolCallContent{{Diff: &acpschema.ToolDiff{Path: r.path, OldText: r.oldText, NewText: r.newText}}})
	}
	if r.text != "" {
		call.Content = acpschema.Value([]acpschema.ToolCallContent{{Content: &acpschema.ToolContent{Content: acpschema.TextBlock(r.text)}}})
	}
	outcome, err := t.o.Editor.RequestPermission(ctx, call, []acpschema.PermissionOption{
		{OptionID: OptionAllow, Name: "Allow", Kind: acpschema.PermissionAllowOnce},
		{OptionID: OptionAllowAlways, Name: "Always allow " + tool + " in this session", Kind: acpschema.PermissionAllowAlways},
		{OptionID: OptionReject, Name: "Reject", Kind: acpschema.PermissionRejectOnce},
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
	return Declined + r.title + " was not allowed; nothing was changed.", nil
}

// showDiff shows the editor what a write did to the file at l: a
// tool_call_update of the running call whose diff has the whole texts
// before and after, so that it (and, on ACP v2, its patch) is of the file
// and not of the edit's fragments. Like the permission request's diff it
// is in-progress detail: the call's final report is made from history.
// Without an editor nothing is sent; a failure to send changes nothing.
func (t tools) showDiff(ctx context.Context, l loc, oldText, newText string) {
	if t.o.Editor == nil {
		return
	}
	shown := l.shown()
	_ = t.o.Editor.UpdateToolCall(ctx, acpschema.ToolCallUpdate{
		Locations: acpschema.Value(locations(shown, 0)),
		Content:   acpschema.Value([]acpschema.ToolCallContent{{Diff: &acpschema.ToolDiff{Path: shown, OldText: oldText, NewText: newText}}}),
	})
}

// runInTerminal runs the prepared command in a terminal of the editor,
// shown live in the tool call: the sandbox helper of this executable with
// the clean environment (see package sandbox; where there is no helper, the
// shell itself). On a timeout or a cancelled turn the command is killed and
// the call fails with the output it printed until then; the terminal is
// always released.
func (t tools) runInTerminal(ctx context.Context, cmd *sandbox.Command, timeout time.Duration) (string, error) {
	ed := t.o.Editor
	env := make([]acpschema.EnvVariable, 0, len(cmd.Env))
	for _, kv := range cmd.Env {
		name, value, _ := strings.Cut(kv, "=")
		env = append(env, acpschema.EnvVariable{Name: name, Value: value})
	}
	id, err := ed.CreateTerminal(ctx, acpschema.CreateTerminalRequest{
		Command: cmd.Path, Args: cmd.Args, Env: env, Cwd: t.w.given, OutputByteLimit: t.o.MaxOutput,
	})
	if err != nil {
		return "", err
	}
	// Sent even when ctx has ended: the editor frees the terminal.
	defer func() { _ = ed.ReleaseTerminal(ctx, id) }()
	_ = ed.UpdateToolCall(ctx, acpschema.ToolCallUpdate{
		Status:  acpschema.Value(acpschema.ToolCallInProgress),
		Content: acpschema.Value([]acpschema.ToolCallContent{{Terminal: &acpschema.ToolTerminal{TerminalID: id}}}),
	})
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exit, err := ed.WaitForTerminalExit(wctx, id)
	var stopped *stoppedError
	switch {
	case err == nil:
	case ctx.Err() != nil: // the turn was cancelled
		_ = ed.KillTerminal(ctx, id)
		stopped = &stoppedError{why: "the turn was cancelled, so the command was killed", cause: ctx.Err()}
	case wctx.Err() != nil:
		if err := ed.KillTerminal(ctx, id); err != nil {
			return "", fmt.Errorf("the command timed out and cannot be killed: %w", err)
		}
		stopped = &stoppedError{why: fmt.Sprintf("killed after the %v timeout", timeout), cause: wctx.Err()}
	default:
		return "", err
	}
	// The output is asked for even after a cancel (what it printed is
	// part of the failed call), for a short while.
	octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), terminalOutputWait)
	defer ocancel()
	out, err := ed.TerminalOutput(octx, id)
	if err != nil {
		if stopped != nil {
			return "", stopped
		}
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
	if stopped != nil {
		stopped.output = text
		return "", stopped
	}
	return exitText(exit) + "\n" + text, nil
}

// terminalOutputWait bounds the wait for a stopped command's output.
const terminalOutputWait = 5 * time.Second

// exitText says how a terminal's command ended.
func exitText(s *acpschema.TerminalExitStatus) string {
	switch {
	case s.ExitCode != nil:
		return fmt.Sprintf("exit status %d", *s.ExitCode)
	case s.Signal != "":
		return "killed by signal " + s.Signal
	}
	return "exit status unknown"
}

// locations is the location of the file at path (and line, when > 0) for
// the editor to follow: none when the path is not [textcut.Plain] (a
// newline, a control or a format character in it), since a location
// cannot be quoted without naming another file; the title shows it
// quoted instead.
func locations(path string, line int) []acpschema.ToolCallLocation {
	if !textcut.Plain(path) {
		return []acpschema.ToolCallLocation{}
	}
	l := acpschema.ToolCallLocation{Path: path}
	if line > 0 {
		u := uint32(line)
		l.Line = &u
	}
	return []acpschema.ToolCallLocation{l}
}
