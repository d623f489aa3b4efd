package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	acpschema "github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/session"
)

// The modes of a session: what its tools may do without asking. An ACP
// client shows them as the session's modes (v1) and its "mode" config
// option (v1 and v2); [Options.Mode] reads the current one at every call.
const (
	// ModeReadOnly: the reading tools (read_file, list_files, search) and
	// recall only: the model is offered no other tool of Tools and Guard
	// (session.Tool.Offered), and a call of one is refused.
	ModeReadOnly = "read-only"
	// ModeAsk, the default: the user's permission before every change,
	// command and MCP call.
	ModeAsk = "ask"
	// ModeAutoEdit: edits inside the session's directories without
	// asking; commands and MCP calls ask.
	ModeAutoEdit = "auto-edit"
	// ModeFullAuto: nothing asks; commands still run in the sandbox, and
	// only in this mode with network.
	ModeFullAuto = "full-auto"
)

// Modes are the four modes, as an ACP agent lists them
// (acp.ServerOptions.Modes), ModeAsk first.
func Modes() []acpschema.SessionMode {
	return []acpschema.SessionMode{
		{ID: ModeAsk, Name: "Ask", Description: "Ask before every change, command and MCP tool call"},
		{ID: ModeReadOnly, Name: "Read only", Description: "Read, search and recall only: no changes, commands or MCP tool calls"},
		{ID: ModeAutoEdit, Name: "Auto edit", Description: "Edit files in the session's directories without asking; commands and MCP tool calls ask"},
		{ID: ModeFullAuto, Name: "Full auto", Description: "Nothing asks; commands run in the sandbox, with network"},
	}
}

// action is what a tool call does, as the modes see it.
type action int

const (
	actRead    action = iota // reads only
	actEdit                  // changes a file of the session
	actCommand               // runs a command
	actExtern                // calls a tool of another program (an MCP server)
)

func (a action) String() string {
	switch a {
	case actEdit:
		return "changing files"
	case actCommand:
		return "running commands"
	case actExtern:
		return "calling MCP tools"
	}
	return "reading"
}

// verdict is what a mode says of an action.
type verdict int

const (
	allow  verdict = iota // run it
	ask                   // ask the user first
	refuse                // do not run it
)

// decide is the policy of the modes: reading is always allowed; read-only
// refuses everything else; ask asks for everything else; auto-edit allows
// edits (of the session's directories: the only files the tools change)
// and asks for commands and MCP calls; full-auto allows everything. An
// unknown mode asks.
func decide(mode string, a action) verdict {
	switch {
	case a == actRead:
		return allow
	case mode == ModeReadOnly:
		return refuse
	case mode == ModeFullAuto:
		return allow
	case mode == ModeAutoEdit && a == actEdit:
		return allow
	}
	return ask
}

// mode is the session's current mode: Options.Mode's answer, ModeAsk
// without one.
func (o Options) mode() string {
	if o.Mode == nil {
		return ModeAsk
	}
	if m := o.Mode(); m != "" {
		return m
	}
	return ModeAsk
}

// verdict is what the current mode says of a, in these Options: without
// an editor to ask or with AllowAll, what would ask is allowed.
func (o Options) verdict(a action) (verdict, string) {
	m := o.mode()
	v := decide(m, a)
	if v == ask && (o.Editor == nil || o.AllowAll) {
		v = allow
	}
	return v, m
}

// refused is the error of a call the mode refuses.
func refused(tool, mode string, a action) error {
	return fmt.Errorf("%s is not allowed in %s mode (no %s); nothing was done. The user can switch the session's mode to %s", tool, mode, a, strings.Join([]string{ModeAsk, ModeAutoEdit, ModeFullAuto}, ", "))
}

// gate refuses a call of tool, which does a, before it reads or prepares
// anything when the mode refuses a; permit decides again when the call
// is about to change something (the mode may have changed meanwhile).
func (t tools) gate(a action, tool string, run func(context.Context, json.RawMessage) (string, error)) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, raw json.RawMessage) (string, error) {
		if v, mode := t.o.verdict(a); v == refuse {
			return "", refused(tool, mode, a)
		}
		return run(ctx, raw)
	}
}

// offered is the session.Tool.Offered of a tool that does a: offered
// unless the current mode refuses a.
func (t tools) offered(a action) func() bool {
	return func() bool { return decide(t.o.mode(), a) != refuse }
}

// network reports whether commands get the network: in full-auto mode, or
// when the operator's policy gives it always (Sandbox.Network).
func (o Options) network() bool {
	return o.Sandbox.Network || o.mode() == ModeFullAuto
}

// Guard returns t with the permission and mode rules of a command: not
// offered to the model and refused in read-only mode, run after the user's permission in ask and auto-edit
// mode (the request titled title(arguments), quoted unless it is one line
// of printable text, showing the arguments escaped and cut to 4 KiB, and
// offering to allow the tool always in this session), run at once in
// full-auto mode, without an
// editor or with AllowAll. It is how a coding agent gives the tools of
// other programs (MCP servers) the rules of its own; o's Editor, Mode and
// AllowAll are used, the rest is not.
func Guard(t session.Tool, o Options, title func(args json.RawMessage) string) session.Tool {
	g := tools{o: o, allowed: allowed{}}
	run := t.Run
	name := t.Name
	own, offered := t.Offered, g.offered(actExtern)
	t.Offered = func() bool { return offered() && (own == nil || own()) }
	t.Run = func(ctx context.Context, args json.RawMessage) (string, error) {
		if run == nil {
			return "", errors.New("the tool cannot run")
		}
		r := request{title: shownName(title(args)), kind: acpschema.ToolKindOther, text: "Arguments: " + shownArgs(args)}
		if declined, err := g.permit(ctx, actExtern, name, r); declined != "" || err != nil {
			return declined, err
		}
		return run(ctx, args)
	}
	return t
}

// maxShownArgs bounds the arguments a permission request shows.
const maxShownArgs = 4 << 10

// shownArgs is a call's arguments as a permission request shows them:
// the JSON made compact, every character that could hide or rewrite text
// escaped (textcut.Escape), cut to maxShownArgs bytes with the length
// said.
func shownArgs(args json.RawMessage) string {
	var b bytes.Buffer
	text := string(args)
	if json.Compact(&b, args) == nil {
		text = b.String()
	}
	if text == "" {
		text = "{}"
	}
	text = textcut.Escape(text)
	if len(text) > maxShownArgs {
		return textcut.Prefix(text, maxShownArgs) + fmt.Sprintf("… (%d bytes)", len(text))
	}
	return text
}
