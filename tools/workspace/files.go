package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	acpschema "github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/textcut"
)

// openFlags go with every open: a FIFO's open does not wait for a writer,
// and a terminal does not become the agent's controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// binaryProbe is how much of a file's beginning is looked at for a NUL
// byte, the mark of a binary file.
const binaryProbe = 8 << 10

// readBuffer is the size of the buffer a tool reads a file through.
const readBuffer = 64 << 10

// errPathEscapes' text: os.Root refuses a name that leads out of it with a
// *fs.PathError carrying an unexported error of that text.
const escapesText = "path escapes from parent"

// rootErr turns an error of one of l's Root's methods into one the model
// can read: a name that leads out of the directory (through a link) wraps
// ErrOutside, other errors name the path as the tool was given it.
func (w *Workspace) rootErr(l loc, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	if pe.Err.Error() == escapesText {
		return fmt.Errorf("%w: %s (a link in it leads out of %s)", ErrOutside, l.asked, l.dir.given)
	}
	return fmt.Errorf("%s: %w", l.asked, pe.Err)
}

// kind names a file type for the model.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func notRegular(l loc, m fs.FileMode) error {
	return fmt.Errorf("%s is a %s, not a regular file; the file tools read and write regular files only", l.asked, kind(m))
}

// open opens the regular file at l with flag (plus openFlags) and returns
// it with its fstat. The descriptor decides: a name swapped after the
// open changes nothing, and what is not a regular file is refused. A look
// at the name comes first, so a device is not even opened (opening one
// can act), but only the descriptor is trusted.
func (w *Workspace) open(l loc, flag int) (*os.File, fs.FileInfo, error) {
	if st, err := l.dir.root.Stat(l.name); err != nil {
		return nil, nil, w.rootErr(l, err)
	} else if !st.Mode().IsRegular() {
		return nil, nil, notRegular(l, st.Mode())
	}
	f, err := l.dir.root.OpenFile(l.name, flag|openFlags, 0)
	if err != nil {
		return nil, nil, w.rootErr(l, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = notRegular(l, st.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// links is the number of hard links of the file st describes (1 where the
// system does not say).
func links(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

// readFileArgs are the arguments of readFile.
type readFileArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
}

// readFile reads the file and records what it saw in the session's file
// ledger (see readSeen).
func (t tools) readFile(ctx context.Context, in readFileArgs) (string, error) {
	l, err := t.w.resolve(in.Path)
	if err != nil {
		return "", err
	}
	out, seen, err := t.readSeen(ctx, l, in)
	// A part of no bytes (a range of an empty file) showed nothing of the
	// file: it is no read, and would let any content pass the guard.
	if err == nil && (seen.Whole() || seen.Length > 0) {
		t.record(ctx, l, seen)
	}
	return out, err
}

// readSeen is read_file of l: its output, and what of the file the model
// saw (the whole file, or the bytes from the start of a line, cut at the
// output bound).
func (t tools) readSeen(ctx context.Context, l loc, in readFileArgs) (string, history.FileAccess, error) {
	var none history.FileAccess
	if in.EndLine > 0 && in.StartLine > in.EndLine {
		return "", none, fmt.Errorf("start_line %d is after end_line %d", in.StartLine, in.EndLine)
	}
	ranged := in.StartLine > 0 || in.EndLine > 0
	start := max(in.StartLine, 1)
	whole := start == 1 && in.EndLine <= 0 // all of it, unless cut at MaxOutput
	f, st, err := t.w.open(l, os.O_RDONLY)
	if ed := t.o.Editor; ed != nil && ed.CanReadFiles() {
		// The editor sees unsaved changes, also of a file not on the disk
		// yet; whatever is on the disk must be a regular file inside.
		if err == nil {
			_ = f.Close()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", none, err
		}
		limit := 0
		if in.EndLine > 0 {
			limit = in.EndLine - start + 1
		}
		line := 0
		if ranged {
			line = start
		}
		if err := t.w.held(l); err != nil { // just before the editor opens the name
			return "", none, err
		}
		text, err := ed.ReadTextFile(ctx, l.shown(), line, limit)
		if err != nil {
			return "", none, err
		}
		if ranged && text == "" && start > 1 {
			return "", none, fmt.Errorf("%s has fewer than %d lines; lines from %d on do not exist", in.Path, start, start)
		}
		if len(text) <= t.o.MaxOutput {
			if whole {
				return text, seenWhole(history.FileRead, text), nil
			}
			return text, seenPart(text, start, 0), nil
		}
		kept := textcut.Prefix(text, t.o.MaxOutput)
		seen := seenPart(kept, start, int64(len(text)))
		if !ranged {
			return kept + fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(kept), len(text)), seen, nil
		}
		return kept + readOn(len(kept), start+strings.Count(kept, "\n")), seen, nil
	}
	if err != nil {
		return "", none, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, readBuffer)
	if head, _ := r.Peek(binaryProbe); bytes.IndexByte(head, 0) >= 0 {
		return "", none, fmt.Errorf("%s is not a text file (it has a NUL byte)", in.Path)
	}
	text, cutIn, n, err := readLines(ctx, r, start, in.EndLine, t.o.MaxOutput)
	if err != nil {
		return "", none, fmt.Errorf("%s: %w", in.Path, err)
	}
	if cutIn == 0 && start > max(n, 1) {
		return "", none, fmt.Errorf("%s has %d lines; lines from %d on do not exist", in.Path, n, start)
	}
	if cutIn > 0 { // the cut may end inside a rune
		for i := len(text); i > 0 && i > len(text)-utf8.UTFMax; i-- {
			if utf8.RuneStart(text[i-1]) {
				if !utf8.FullRune(text[i-1:]) {
					text = text[:i-1]
				}
				break
			}
		}
	}
	if !utf8.Valid(text) {
		return "", none, fmt.Errorf("%s is not a text file", in.Path)
	}
	seen := seenPart(string(text), start, st.Size())
	switch {
	case cutIn == 0 && whole:
		return string(text), seenWhole(history.FileRead, string(text)), nil
	case cutIn == 0:
		return string(text), seen, nil
	case !ranged:
		return string(text) + fmt.Sprintf("\n[output cut: the first %d of %d bytes shown]", len(text), st.Size()), seen, nil
	}
	return string(text) + readOn(len(text), cutIn), seen, nil
}

// readOn is the note of a ranged read cut after n bytes, in line line.
func readOn(n, line int) string {
	return fmt.Sprintf("\n[output cut: the first %d bytes of the lines asked for shown, up to line %d; ask for start_line %d to read on]", n, line, line)
}

// readLines reads lines start..end (1-based; end 0: to the end) from r,
// keeping at most max bytes, and stops as soon as it has them: at the end
// of the range, or at the bound. It returns the bytes, the line in which
// they were cut (0: not cut), and the number of lines it saw (all of them
// when it read to the end). It holds r's buffer and max bytes, whatever
// the length of the file or of its lines.
func readLines(ctx context.Context, r *bufio.Reader, start, end, max int) (text []byte, cutIn, lines int, err error) {
	text = make([]byte, 0, min(max, r.Size()))
	n, inLine := 1, false // the line being read; whether part of it was
	for steps := 0; end == 0 || n <= end; steps++ {
		if steps%1024 == 1023 && ctx.Err() != nil {
			return nil, 0, 0, ctx.Err()
		}
		chunk, rerr := r.ReadSlice('\n')
		if n >= start && len(chunk) > 0 {
			if room := max - len(text); len(chunk) > room {
				return append(text, chunk[:room]...), n, n, nil
			}
			text = append(text, chunk...)
		}
		if len(chunk) > 0 {
			inLine = chunk[len(chunk)-1] != '\n'
			if !inLine {
				n++
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) {
			return nil, 0, 0, rerr
		}
	}
	lines = n - 1
	if inLine {
		lines = n
	}
	return text, 0, lines, nil
}

// target is a file write_file or edit_file changes, as it was before the
// permission request.
type target struct {
	l      loc
	f      *os.File    // the file on the disk, open to read and write; nil: none by that name
	info   fs.FileInfo // f's fstat
	links  uint64      // f's hard links
	text   string      // the text before: the editor's buffer when it reads files, otherwise f's
	exists bool        // text is a file's or a buffer's
	asked  bool        // a permission request for the change was made (permitChange)
}

func (tg *target) close() {
	if tg.f != nil {
		_ = tg.f.Close()
	}
}

// target opens the file at path, resolved in the workspace, to change it:
// on the disk by descriptor (a regular file of at most MaxFileSize bytes,
// inside; open to write unless the editor writes files) and its text,
// through the editor when it reads files (it sees unsaved changes).
func (t tools) target(ctx context.Context, path string) (*target, error) {
	l, err := t.w.resolve(path)
	if err != nil {
		return nil, err
	}
	tg := &target{l: l}
	flag := os.O_RDWR // written through this descriptor
	if ed := t.o.Editor; ed != nil && ed.CanWriteFiles() {
		flag = os.O_RDONLY // the editor writes it
	}
	f, st, err := t.w.open(l, flag)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if link, lerr := l.dir.root.Readlink(l.name); lerr == nil {
			return nil, fmt.Errorf("%s is a link to %s, which does not exist; write that file by its own name", l.asked, link)
		}
	case err != nil:
		return nil, err
	case st.Size() > int64(t.o.MaxFileSize):
		_ = f.Close()
		return nil, t.tooLarge(l, st.Size())
	default:
		tg.f, tg.info, tg.links = f, st, links(st)
	}
	if ed := t.o.Editor; ed != nil && ed.CanReadFiles() {
		if err := t.w.held(l); err != nil { // just before the editor opens the name
			tg.close()
			return nil, err
		}
		text, err := ed.ReadTextFile(ctx, l.shown(), 0, 0)
		switch {
		case err == nil:
			tg.text, tg.exists = text, true
		case tg.f != nil || ctx.Err() != nil:
			tg.close()
			return nil, err
		}
		// Otherwise a new file: neither on the disk nor in the editor.
	} else if tg.f != nil {
		data, err := io.ReadAll(io.LimitReader(tg.f, int64(t.o.MaxFileSize)+1))
		if err != nil {
			tg.close()
			return nil, fmt.Errorf("%s: %w", l.asked, err)
		}
		tg.text, tg.exists = string(data), true
	}
	switch {
	case len(tg.text) > t.o.MaxFileSize:
		tg.close()
		return nil, t.tooLarge(l, int64(len(tg.text)))
	case strings.IndexByte(tg.text[:min(len(tg.text), binaryProbe)], 0) >= 0 || !utf8.ValidString(tg.text):
		tg.close()
		return nil, fmt.Errorf("%s is not a text file", l.asked)
	}
	return tg, nil
}

func (t tools) tooLarge(l loc, size int64) error {
	return fmt.Errorf("%s has %d bytes, more than the %d bytes the file tools replace or edit; nothing was changed", l.asked, size, t.o.MaxFileSize)
}

// permitChange asks the user's permission to change tg (see permit). A
// file with more than one hard link is the same file as its other names,
// which may lie outside the workspace: it is changed only after a request
// that says so, also when the tool is allowed always, and never where
// nobody can be asked.
func (t tools) permitChange(ctx context.Context, tool, title string, tg *target, newText string) (string, error) {
	if tg.links <= 1 {
		if free, err := t.unasked(actEdit, tool); free || err != nil {
			return "", err
		}
		tg.asked = true
		return t.ask(ctx, tool, request{title: title, kind: acpschema.ToolKindEdit, path: tg.l.shown(), oldText: tg.text, newText: newText})
	}
	note := fmt.Sprintf("%s has %d hard links", shownName(tg.l.asked), tg.links)
	v, mode := t.o.verdict(actEdit)
	if v == refuse {
		return "", refused(tool, mode, actEdit)
	}
	if t.o.Editor == nil || t.o.AllowAll || mode == ModeFullAuto {
		return "", fmt.Errorf("%s: changing it changes the file under its other names too, which may lie outside the workspace, so it is changed only when the user allows it in a permission request, and none is made here; nothing was changed", note)
	}
	tg.asked = true
	return t.ask(ctx, tool, request{title: title + " (" + note + ": the file changes under its other names too, which may lie outside the workspace)", kind: acpschema.ToolKindEdit, path: tg.l.shown(), oldText: tg.text, newText: newText})
}

// commit writes content to tg, allowed. The name must still lead to the
// file the permission request showed (or still to none): a file or link
// swapped in while the request waited is refused. An existing file is
// written through the descriptor opened before the request; a new one is
// created exclusively (a link that appears at its name is not followed).
// Through the editor, when it writes files, the editor writes the path.
// Parent directories are made first, and removed again when the write
// fails.
func (t tools) commit(ctx context.Context, tg *target, content string) error {
	l := tg.l
	changed := fmt.Errorf("%s changed while the permission request waited (it is no longer the file shown); nothing was changed", l.asked)
	if tg.f != nil {
		if st, err := l.dir.root.Stat(l.name); err != nil || !os.SameFile(st, tg.info) {
			return changed
		}
	} else if _, err := l.dir.root.Lstat(l.name); !errors.Is(err, fs.ErrNotExist) {
		return changed
	}
	if err := t.w.held(l); err != nil { // moved while the request waited
		return err
	}
	if ed := t.o.Editor; ed != nil && ed.CanWriteFiles() {
		made, err := t.mkdirs(l)
		if err != nil {
			return err
		}
		if err := t.w.held(l); err != nil { // just before the editor opens the name
			rmdirs(l, made)
			return err
		}
		if err := ed.WriteTextFile(ctx, l.shown(), content); err != nil {
			rmdirs(l, made)
			return err
		}
		return nil
	}
	if tg.f != nil {
		if err := tg.f.Truncate(0); err != nil {
			return fmt.Errorf("%s: %w", l.asked, err)
		}
		if _, err := tg.f.WriteAt([]byte(content), 0); err != nil {
			return fmt.Errorf("%s: %w", l.asked, err)
		}
		return nil
	}
	made, err := t.mkdirs(l)
	if err != nil {
		return err
	}
	f, err := l.dir.root.OpenFile(l.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		rmdirs(l, made)
		return changed
	}
	if err != nil {
		rmdirs(l, made)
		return t.w.rootErr(l, err)
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = l.dir.root.Remove(l.name)
		rmdirs(l, made)
		return fmt.Errorf("%s: %w", l.asked, err)
	}
	return nil
}

// mkdirs makes the missing parent directories of l, one at a time through
// its Root, and returns those it made.
func (t tools) mkdirs(l loc) ([]string, error) {
	parent := filepath.Dir(l.name)
	if parent == "." {
		return nil, nil
	}
	var made []string
	parts := strings.Split(parent, string(filepath.Separator))
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		switch err := l.dir.root.Mkdir(p, 0o755); {
		case err == nil:
			made = append(made, p)
		case errors.Is(err, fs.ErrExist): // a directory, or what the write then fails on
		default:
			rmdirs(l, made)
			return nil, t.w.rootErr(l, err)
		}
	}
	return made, nil
}

// rmdirs removes the directories mkdirs made, deepest first (each only
// while it is empty).
func rmdirs(l loc, made []string) {
	for _, p := range slices.Backward(made) {
		_ = l.dir.root.Remove(p)
	}
}

// writeFileArgs are the arguments of writeFile.
type writeFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (t tools) writeFile(ctx context.Context, in writeFileArgs) (string, error) {
	tg, err := t.target(ctx, in.Path)
	if err != nil {
		return "", err
	}
	defer tg.close()
	if err := t.guard(ctx, "write_file", tg); err != nil {
		return "", err
	}
	if declined, err := t.change(ctx, "write_file", "Write", tg, in.Content); declined != "" || err != nil {
		return declined, err
	}
	if tg.exists {
		return fmt.Sprintf("wrote %s (%d bytes; replaced the previous %d bytes)", t.w.rel(tg.l), len(in.Content), len(tg.text)), nil
	}
	return fmt.Sprintf("wrote %s (%d bytes)", t.w.rel(tg.l), len(in.Content)), nil
}

// editFileArgs are the arguments of editFile.
type editFileArgs struct {
	Path    string `json:"path"`
	OldText string `json:"old_text"`
	NewText string `json:"new_text"`
}

func (t tools) editFile(ctx context.Context, in editFileArgs) (string, error) {
	if in.OldText == "" {
		return "", errors.New("old_text is empty")
	}
	tg, err := t.target(ctx, in.Path)
	if err != nil {
		return "", err
	}
	defer tg.close()
	if !tg.exists {
		return "", fmt.Errorf("%s does not exist; nothing was changed", in.Path)
	}
	if err := t.guard(ctx, "edit_file", tg); err != nil {
		return "", err
	}
	data := tg.text
	switch n := strings.Count(data, in.OldText); n {
	case 0:
		return "", fmt.Errorf("old_text does not occur in %s; nothing was changed", in.Path)
	case 1:
	default:
		return "", fmt.Errorf("old_text occurs %d times in %s; give more context so it occurs once; nothing was changed", n, in.Path)
	}
	out := strings.Replace(data, in.OldText, in.NewText, 1)
	line := 1 + strings.Count(data[:strings.Index(data, in.OldText)], "\n")
	if declined, err := t.change(ctx, "edit_file", "Edit", tg, out); declined != "" || err != nil {
		return declined, err
	}
	return fmt.Sprintf("edited %s at line %d", t.w.rel(tg.l), line), nil
}

// change writes text to tg for tool once the user permits it (the request
// titled verb and the file's name; declined is the answer of a change not
// permitted) and shows the change in the editor.
func (t tools) change(ctx context.Context, tool, verb string, tg *target, text string) (declined string, err error) {
	if declined, err := t.permitChange(ctx, tool, verb+" "+shownName(t.w.rel(tg.l)), tg, text); declined != "" || err != nil {
		return declined, err
	}
	if err := t.guardAgain(ctx, tool, tg); err != nil {
		return "", err
	}
	if err := t.commit(ctx, tg, text); err != nil {
		return "", err
	}
	t.record(ctx, tg.l, seenWhole(history.FileChanged, text))
	t.showDiff(ctx, tg.l, tg.text, text)
	return "", nil
}

func (t tools) listFiles(ctx context.Context, raw json.RawMessage) (string, error) {
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
	l, err := t.w.resolve(in.Path)
	if err != nil {
		return "", err
	}
	f, err := l.dir.root.OpenFile(l.name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return "", t.w.rootErr(l, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", in.Path)
	}
	// The first MaxEntries names in order, read in batches: a directory of
	// a million entries costs the names kept, not the million.
	type entry struct {
		name string
		dir  bool
	}
	var kept []entry
	byName := func(a, b entry) int { return strings.Compare(a.name, b.name) }
	total := 0
	for {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		batch, err := f.ReadDir(1024)
		for _, e := range batch {
			kept = append(kept, entry{e.Name(), e.IsDir()})
		}
		total += len(batch)
		if len(kept) > 2*t.o.MaxEntries {
			slices.SortFunc(kept, byName)
			kept = kept[:t.o.MaxEntries]
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", in.Path, err)
		}
	}
	slices.SortFunc(kept, byName)
	var b strings.Builder
	for i, e := range kept {
		if i == t.o.MaxEntries {
			fmt.Fprintf(&b, "[listing cut: %d of %d entries shown]\n", i, total)
			break
		}
		b.WriteString(e.name)
		if e.dir {
			b.WriteString("/")
		}
		b.WriteString("\n")
	}
	return textcut.Bound(b.String(), t.o.MaxOutput), nil
}
