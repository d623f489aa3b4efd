package workspace

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	acpschema "github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// Options bound what the tools return and run.
type Options struct {
	// MaxOutput bounds each tool's output in bytes; 0 = DefaultMaxOutput.
	MaxOutput int
	// MaxEntries bounds list_files entries and search matches; 0 =
	// DefaultMaxEntries.
	MaxEntries int
	// MaxFileSize bounds the files write_file replaces and edit_file
	// edits, in bytes: they hold such a file whole and show it in the
	// permission request; 0 = DefaultMaxFileSize.
	MaxFileSize int
	// SearchBytes bounds what one search reads, in bytes across all the
	// files it searches; 0 = DefaultSearchBytes. SearchTime bounds how
	// long it searches; 0 = DefaultSearchTime. A search that spends
	// either stops and says so, naming the files it did not finish or
	// did not search.
	SearchBytes int64
	SearchTime  time.Duration
	// CommandTimeout is run_command's timeout when the call names none;
	// 0 = DefaultCommandTimeout. A call may ask for at most MaxCommandTimeout.
	CommandTimeout time.Duration
	// Editor, when set, is the ACP client of the session: files are read
	// and written through it when it offers fs, commands run in its
	// terminals when it offers them, and write_file, edit_file and
	// run_command ask the user's permission first (unless AllowAll). Nil:
	// everything runs locally and nothing asks.
	Editor Editor
	// AllowAll skips the permission requests (a mode that refuses a
	// call still refuses it).
	AllowAll bool
	// NoFileGuard switches the guard against stale edits off: by default
	// edit_file refuses a file the session has not read, and write_file
	// and edit_file refuse a file that changed since the session last
	// read or changed it (ErrNotRead, ErrChangedSinceRead; see the
	// package doc, "The file ledger").
	NoFileGuard bool
	// Mode, when set, returns the session's current mode (ModeAsk,
	// ModeReadOnly, ModeAutoEdit, ModeFullAuto), read at every call: it
	// decides which calls ask, which run at once and which are refused,
	// and whether commands get the network. Nil (or "") means ModeAsk.
	Mode func() string
	// Sandbox is how run_command runs commands (package sandbox): its
	// mode, whether they may use the network (Network: in every mode;
	// otherwise only in ModeFullAuto), and the environment
	// variables added to the allow-list. The session's directories are
	// always writable (added to Sandbox.WritableDirs as the descriptors the
	// workspace holds; commands start in the working directory's). The zero value
	// confines commands where Landlock is available (the program must call
	// sandbox.Main first) and runs them unconfined, saying so in the
	// permission request, elsewhere.
	Sandbox sandbox.Policy
}

// Defaults of Options.
const (
	DefaultMaxOutput      = 64 << 10
	DefaultMaxEntries     = 500
	DefaultMaxFileSize    = 4 << 20
	DefaultCommandTimeout = 60 * time.Second
	DefaultSearchBytes    = 512 << 20
	DefaultSearchTime     = 10 * time.Second
	MaxCommandTimeout     = 10 * time.Minute
)

func (o Options) withDefaults() Options {
	o.MaxOutput = cmp.Or(max(o.MaxOutput, 0), DefaultMaxOutput)
	o.MaxEntries = cmp.Or(max(o.MaxEntries, 0), DefaultMaxEntries)
	o.MaxFileSize = cmp.Or(max(o.MaxFileSize, 0), DefaultMaxFileSize)
	o.SearchBytes = cmp.Or(max(o.SearchBytes, 0), DefaultSearchBytes)
	o.SearchTime = cmp.Or(max(o.SearchTime, 0), DefaultSearchTime)
	o.CommandTimeout = cmp.Or(max(o.CommandTimeout, 0), DefaultCommandTimeout)
	return o
}

// Tools returns the workspace's tools: read_file, write_file, edit_file,
// list_files, search and run_command, each confined to the workspace. In
// a mode that refuses changes or commands (ModeReadOnly) the model is not
// offered write_file, edit_file and run_command (session.Tool.Offered),
// and a call of one is refused all the same.
func (w *Workspace) Tools(o Options) []session.Tool {
	o = o.withDefaults()
	t := tools{w: w, o: o, allowed: allowed{}}
	return []session.Tool{
		{Name: "read_file", Description: "Read a text file of the workspace, optionally lines start_line..end_line (1-based, inclusive).",
			Parameters: schema(`"path":{"type":"string"},"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}`, "path"),
			Run:        typed(t.readFile)},
		{Name: "write_file", Description: "Create or replace a file of the workspace with the given content (parent directories are created).",
			Parameters: schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"),
			Offered:    t.offered(actEdit),
			Run:        t.gate(actEdit, "write_file", typed(t.writeFile))},
		{Name: "edit_file", Description: "Replace the one occurrence of old_text in a file with new_text; fails when old_text is absent or occurs more than once.",
			Parameters: schema(`"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}`, "path", "old_text", "new_text"),
			Offered:    t.offered(actEdit),
			Run:        t.gate(actEdit, "edit_file", typed(t.editFile))},
		{Name: "list_files", Description: "List a directory of the workspace (default: the working directory); directories end in /.",
			Parameters: schema(`"path":{"type":"string"}`),
			Run:        t.listFiles},
		{Name: "search", Description: "Search the workspace's text files for a fixed string, or a regular expression with regex: true; answers path:line: text.",
			Parameters: schema(`"pattern":{"type":"string"},"path":{"type":"string"},"regex":{"type":"boolean"}`, "pattern"),
			Run:        typed(t.search)},
		{Name: "run_command", Description: "Run a shell command line in the working directory; answers its exit status and output.",
			Parameters: schema(`"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1}`, "command"),
			Offered:    t.offered(actCommand),
			Run:        t.gate(actCommand, "run_command", typed(t.runCommand))},
	}
}

// ReadTools returns the tools that change nothing: read_file, list_files
// and search. An agent that cannot ask the user's permission yet offers
// only these.
func (w *Workspace) ReadTools(o Options) []session.Tool {
	var out []session.Tool
	for _, t := range w.Tools(o) {
		switch t.Name {
		case "read_file", "list_files", "search":
			out = append(out, t)
		}
	}
	return out
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `}`)
}

type tools struct {
	w       *Workspace
	o       Options
	allowed allowed // the tools the user always allows in this session (a map: shared by the copies of tools)
}

// args decodes a tool call's arguments, refusing unknown members.
func args(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %v", err)
	}
	return nil
}

// typed is the Run function of a tool whose arguments decode as In (see
// args).
func typed[In any](run func(context.Context, In) (string, error)) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, raw json.RawMessage) (string, error) {
		var in In
		if err := args(raw, &in); err != nil {
			return "", err
		}
		return run(ctx, in)
	}
}

// maxShown bounds a command line, a path or a pattern in a title.
const maxShown = 300

// shownName is a command line, a path or any string the model chose as a
// title shows it (textcut.Quote): as it is when it is one short line of
// printable text, otherwise quoted (a newline, a control or formatting
// character cannot hide what follows) and cut with its length said.
// Nothing the model writes may make a title lie.
func shownName(s string) string { return textcut.Quote(s, maxShown) }

// runCommandArgs are the arguments of runCommand.
type runCommandArgs struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func (t tools) runCommand(ctx context.Context, in runCommandArgs) (string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := t.o.CommandTimeout
	if in.TimeoutSeconds > 0 {
		timeout = min(time.Duration(in.TimeoutSeconds)*time.Second, MaxCommandTimeout)
	}
	policy := t.o.Sandbox
	policy.Network = t.o.network()
	policy.Timeout = timeout // the helper ends the command by itself too, should this agent freeze or die
	policy.WritableDirs = make([]*os.File, 0, len(t.w.dirs)+len(t.o.Sandbox.WritableDirs))
	for _, d := range t.w.dirs {
		// A moved directory is refused, not followed: also where the
		// command runs in a terminal of the editor, which names its cwd.
		if err := heldDir(d); err != nil {
			return "", err
		}
		policy.WritableDirs = append(policy.WritableDirs, d.file)
	}
	policy.WritableDirs = append(policy.WritableDirs, t.o.Sandbox.WritableDirs...)
	cmd, err := policy.PrepareAt(in.Command, t.w.dirs[0].file) // refused here under --sandbox=required, before anyone is asked
	if err != nil {
		return "", err
	}
	defer func() { _ = cmd.Close() }()
	title := "Run " + shownName(in.Command)
	if w := policy.Warning(); w != "" {
		title = "[" + w + "] " + title // first, where no command can push it out of view
	}
	if declined, err := t.permit(ctx, actCommand, "run_command", request{title: title, kind: acpschema.ToolKindExecute}); declined != "" || err != nil {
		return declined, err
	}
	if t.o.Editor != nil && t.o.Editor.CanRunTerminals() {
		return t.runInTerminal(ctx, cmd, timeout)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &limitedWriter{n: t.o.MaxOutput}
	code, err := cmd.Run(rctx, out)
	switch {
	case err == nil:
		return fmt.Sprintf("exit status %d\n", code) + out.text(), nil
	case ctx.Err() != nil:
		return "", &stoppedError{why: "the turn was cancelled, so the command was stopped", output: out.text(), cause: ctx.Err()}
	case errors.Is(err, context.DeadlineExceeded):
		return "", &stoppedError{why: fmt.Sprintf("killed after the %v timeout", timeout), output: out.text(), cause: err}
	}
	return "", err
}

// stoppedError is the result of a command stopped before it ended (a
// timeout, a cancelled turn): the tool call fails, and its text keeps what
// the command printed until then.
type stoppedError struct {
	why    string
	output string
	cause  error
}

func (e *stoppedError) Error() string {
	if e.output == "" {
		return e.why + "; it printed nothing"
	}
	return e.why + "; its output until then:\n" + e.output
}

func (e *stoppedError) Unwrap() error { return e.cause }

// limitedWriter keeps the first n bytes written to it, counts the rest and
// discards it (so a chatty command cannot fill memory). The command's
// stdout and stderr are one pipe, copied to this writer by one goroutine.
type limitedWriter struct {
	buf   bytes.Buffer
	n     int
	total int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.total += len(p)
	if keep := min(len(p), l.n-l.buf.Len()); keep > 0 {
		l.buf.Write(p[:keep])
	}
	return len(p), nil
}

// text is the output kept, saying when it was cut.
func (l *limitedWriter) text() string {
	text := l.buf.String()
	if l.total > len(text) {
		text = strings.ToValidUTF8(text, "") // the cut may end inside a rune
		text += fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(text), l.total)
	}
	return text
}
