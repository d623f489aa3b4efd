package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/session"
)

// Options bound what the tools return and run.
type Options struct {
	// MaxOutput bounds each tool's output in bytes; 0 = DefaultMaxOutput.
	MaxOutput int
	// MaxEntries bounds list_files entries and search matches; 0 =
	// DefaultMaxEntries.
	MaxEntries int
	// CommandTimeout is run_command's timeout when the call names none;
	// 0 = DefaultCommandTimeout. A call may ask for at most MaxCommandTimeout.
	CommandTimeout time.Duration
	// Editor, when set, is the ACP client of the session: files are read
	// and written through it when it offers fs, commands run in its
	// terminals when it offers them, and write_file, edit_file and
	// run_command ask the user's permission first (unless AllowAll). Nil:
	// everything runs locally and nothing asks.
	Editor Editor
	// AllowAll skips the permission requests.
	AllowAll bool
}

// Defaults of Options.
const (
	DefaultMaxOutput      = 64 << 10
	DefaultMaxEntries     = 500
	DefaultCommandTimeout = 60 * time.Second
	MaxCommandTimeout     = 10 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = DefaultCommandTimeout
	}
	return o
}

// Tools returns the workspace's tools: read_file, write_file, edit_file,
// list_files, search and run_command, each confined to the workspace.
func (w *Workspace) Tools(o Options) []session.Tool {
	o = o.withDefaults()
	t := tools{w: w, o: o, allowed: allowed{}}
	return []session.Tool{
		{Name: "read_file", Description: "Read a text file of the workspace, optionally lines start_line..end_line (1-based, inclusive).",
			Parameters: schema(`"path":{"type":"string"},"start_line":{"type":"integer","minimum":1},"end_line":{"type":"integer","minimum":1}`, "path"),
			Run:        t.readFile},
		{Name: "write_file", Description: "Create or replace a file of the workspace with the given content (parent directories are created).",
			Parameters: schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content"),
			Run:        t.writeFile},
		{Name: "edit_file", Description: "Replace the one occurrence of old_text in a file with new_text; fails when old_text is absent or occurs more than once.",
			Parameters: schema(`"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}`, "path", "old_text", "new_text"),
			Run:        t.editFile},
		{Name: "list_files", Description: "List a directory of the workspace (default: the working directory); directories end in /.",
			Parameters: schema(`"path":{"type":"string"}`),
			Run:        t.listFiles},
		{Name: "search", Description: "Search the workspace's text files for a fixed string, or a regular expression with regex: true; answers path:line: text.",
			Parameters: schema(`"pattern":{"type":"string"},"path":{"type":"string"},"regex":{"type":"boolean"}`, "pattern"),
			Run:        t.search},
		{Name: "run_command", Description: "Run a shell command line in the working directory; answers its exit status and output.",
			Parameters: schema(`"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1}`, "command"),
			Run:        t.runCommand},
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

// bound cuts s to max bytes at a rune boundary and says so.
func bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	kept := runePrefix(s, max)
	return kept + fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(kept), len(s))
}

// runePrefix returns the longest prefix of s of at most n bytes that does not
// end inside a rune.
func runePrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (t tools) readFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	}
	if err := args(raw, &in); err != nil {
		return "", err
	}
	p, err := t.w.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	text, err := t.read(ctx, p, in.Path)
	if err != nil {
		return "", err
	}
	if in.StartLine > 0 || in.EndLine > 0 {
		lines := strings.SplitAfter(text, "\n")
		start, end := max(in.StartLine, 1), in.EndLine
		if end == 0 || end > len(lines) {
			end = len(lines)
		}
		if start > end {
			return "", fmt.Errorf("%s has %d lines; lines %d..%d do not exist", in.Path, len(lines), start, end)
		}
		text = strings.Join(lines[start-1:end], "")
	}
	return bound(text, t.o.MaxOutput), nil
}

func (t tools) writeFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := args(raw, &in); err != nil {
		return "", err
	}
	p, err := t.w.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	old, existed := "", false
	switch st, err := os.Stat(p); {
	case err == nil && st.IsDir():
		return "", fmt.Errorf("%s is a directory", in.Path)
	case err == nil:
		if old, err = t.read(ctx, p, in.Path); err != nil {
			return "", err
		}
		existed = true
	case t.o.Editor != nil && t.o.Editor.CanReadFiles():
		// Not on the disk; maybe a buffer of the editor's not saved yet.
		if text, err := t.o.Editor.ReadTextFile(ctx, t.w.shown(p), 0, 0); err == nil {
			old, existed = text, true
		} else if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	if declined, err := t.permit(ctx, "write_file", "Write "+t.w.rel(p), acp.ToolKindEdit, p, old, in.Content); declined != "" || err != nil {
		return declined, err
	}
	if err := t.write(ctx, p, in.Content, 0o644); err != nil {
		return "", err
	}
	t.showDiff(ctx, p, old, in.Content)
	if existed {
		return fmt.Sprintf("wrote %s (%d bytes; replaced the previous %d bytes)", t.w.rel(p), len(in.Content), len(old)), nil
	}
	return fmt.Sprintf("wrote %s (%d bytes)", t.w.rel(p), len(in.Content)), nil
}

func (t tools) editFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Path    string `json:"path"`
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
	}
	if err := args(raw, &in); err != nil {
		return "", err
	}
	if in.OldText == "" {
		return "", errors.New("old_text is empty")
	}
	p, err := t.w.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	data, err := t.read(ctx, p, in.Path)
	if err != nil {
		return "", err
	}
	switch n := strings.Count(data, in.OldText); n {
	case 0:
		return "", fmt.Errorf("old_text does not occur in %s; nothing was changed", in.Path)
	case 1:
	default:
		return "", fmt.Errorf("old_text occurs %d times in %s; give more context so it occurs once; nothing was changed", n, in.Path)
	}
	out := strings.Replace(data, in.OldText, in.NewText, 1)
	line := 1 + strings.Count(data[:strings.Index(data, in.OldText)], "\n")
	if declined, err := t.permit(ctx, "edit_file", "Edit "+t.w.rel(p), acp.ToolKindEdit, p, data, out); declined != "" || err != nil {
		return declined, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if err := t.write(ctx, p, out, st.Mode().Perm()); err != nil {
		return "", err
	}
	t.showDiff(ctx, p, data, out)
	return fmt.Sprintf("edited %s at line %d", t.w.rel(p), line), nil
}

func (t tools) listFiles(_ context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Path string `json:"path"`
	}
	if len(raw) > 0 {
		if err := args(raw, &in); err != nil {
			return "", err
		}
	}
	if in.Path == "" {
		in.Path = "."
	}
	p, err := t.w.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, e := range entries {
		if i == t.o.MaxEntries {
			fmt.Fprintf(&b, "[listing cut: %d of %d entries shown]\n", i, len(entries))
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		b.WriteString(name + "\n")
	}
	return bound(b.String(), t.o.MaxOutput), nil
}

func (t tools) search(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
		Regex   bool   `json:"regex"`
	}
	if err := args(raw, &in); err != nil {
		return "", err
	}
	if in.Pattern == "" {
		return "", errors.New("pattern is empty")
	}
	match := func(line string) bool { return strings.Contains(line, in.Pattern) }
	if in.Regex {
		re, err := regexp.Compile(in.Pattern)
		if err != nil {
			return "", fmt.Errorf("pattern is not a valid regular expression: %v", err)
		}
		match = re.MatchString
	}
	if in.Path == "" {
		in.Path = "."
	}
	root, err := t.w.Resolve(in.Path)
	if err != nil {
		return "", err
	}
	var (
		b       strings.Builder
		matches int
		cut     = errors.New("enough")
	)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if p != root && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // links are not followed out of the workspace
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if !utf8.ValidString(line) {
				return nil // not a text file
			}
			if match(line) {
				if matches == t.o.MaxEntries {
					fmt.Fprintf(&b, "[search cut after %d matches]\n", matches)
					return cut
				}
				matches++
				fmt.Fprintf(&b, "%s:%d: %s\n", t.w.rel(p), n, line)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, cut) {
		return "", err
	}
	if matches == 0 {
		return "no matches", nil
	}
	return bound(b.String(), t.o.MaxOutput), nil
}

func (t tools) runCommand(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Command        string `json:"command"`
		TimeoutSeconds int    `json:"timeout_seconds"`
	}
	if err := args(raw, &in); err != nil {
		return "", err
	}
	if strings.TrimSpace(in.Command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := t.o.CommandTimeout
	if in.TimeoutSeconds > 0 {
		timeout = min(time.Duration(in.TimeoutSeconds)*time.Second, MaxCommandTimeout)
	}
	if declined, err := t.permit(ctx, "run_command", "Run "+in.Command, acp.ToolKindExecute, "", "", ""); declined != "" || err != nil {
		return declined, err
	}
	if t.o.Editor != nil && t.o.Editor.CanRunTerminals() {
		return t.runInTerminal(ctx, in.Command, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", in.Command)
	cmd.Dir = t.w.cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) } // the whole group
	cmd.WaitDelay = time.Second
	out := &limitedWriter{n: t.o.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	status := "exit status 0"
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		status = fmt.Sprintf("killed after the %v timeout", timeout)
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.As(err, &ee):
		status = fmt.Sprintf("exit status %d", ee.ExitCode())
	case err != nil:
		return "", err
	}
	text := out.buf.String()
	if out.total > len(text) {
		text = strings.ToValidUTF8(text, "") // the cut may end inside a rune
		text += fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(text), out.total)
	}
	return status + "\n" + text, nil
}

// limitedWriter keeps the first n bytes written to it, counts the rest and
// discards it (so a chatty command cannot fill memory). The command's
// stdout and stderr are this one writer, so os/exec calls Write from one
// goroutine at a time.
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
