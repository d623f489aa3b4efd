package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// DefaultInstructionBytes is InstructionOptions.MaxBytes's default: the
// most bytes of project instructions ReadInstructions reads (32 KiB).
const DefaultInstructionBytes = 32 << 10

// InstructionFiles are the names of project instruction files, by
// preference: in each directory ReadInstructions reads the first that
// exists (AGENTS.md, the convention coding agents share; CLAUDE.md where a
// directory has no AGENTS.md).
var InstructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// InstructionOptions tune [ReadInstructions].
type InstructionOptions struct {
	// Stops are directories where the walk up from the working directory
	// ends, besides a repository's root: a session's additional
	// directories, say. The first of them reached is read and is the last.
	Stops []string
	// MaxBytes bounds the text read from all files together; 0 =
	// DefaultInstructionBytes.
	MaxBytes int
}

// Instructions are a project's instructions for a coding agent
// ([ReadInstructions]): the text to add to the system prompt and the files
// it came from.
type Instructions struct {
	// Text is each file's content under a line naming it, outermost
	// directory first (so the nearest, most specific file comes last),
	// with a note at the end when the bound cut it; "" when no file was
	// found.
	Text string
	// Files are the absolute paths of the files read, in Text's order.
	Files []string
	// Cut reports that MaxBytes cut Text: the files past the bound, or the
	// rest of the one it fell in, are left out (the note in Text says so).
	Cut bool
}

// ReadInstructions reads the project instructions of a session whose
// working directory is cwd: in cwd and each of its parents up to the root
// of the repository cwd is in (the first directory that has a .git entry)
// or the first of opts.Stops reached, whichever comes first, the first of
// [InstructionFiles] that the directory has. When neither is reached (cwd
// is in no repository and under no stop) only cwd is read: files above
// the project are not the project's. The files are read outermost first;
// what passes opts.MaxBytes is cut, at a line end where one is near, and a
// note naming what was left out ends Text.
//
// cwd must be an absolute path (else the error wraps [ErrBadRoot]). A file
// that is not a regular file is skipped; a file that cannot be read, or
// that is not UTF-8 text ([ErrNotText]: a NUL byte, bytes that are not
// UTF-8), is skipped and named in the returned error, which joins every
// such error, while Instructions holds what was read (the directory's
// next name, CLAUDE.md after an AGENTS.md skipped, is read).
func ReadInstructions(cwd string, opts InstructionOptions) (Instructions, error) {
	if !filepath.IsAbs(cwd) {
		return Instructions{}, fmt.Errorf("%w: project instructions: %q is not an absolute path", ErrBadRoot, cwd)
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultInstructionBytes
	}
	budget := limit
	var (
		out     Instructions
		b       strings.Builder
		errs    []error
		skipped []string
	)
	for _, dir := range instructionDirs(filepath.Clean(cwd), opts.Stops) {
		path, data, err := readInstructionFile(dir, budget+1)
		if err != nil {
			errs = append(errs, err)
		}
		if path == "" {
			continue
		}
		text := string(data)
		switch {
		case out.Cut || budget == 0:
			out.Cut = true
			skipped = append(skipped, path)
			continue
		case len(text) > budget:
			text = cutText(text, budget)
			out.Cut = true
			skipped = append(skipped, "the rest of "+path)
		}
		budget -= len(text)
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "Project instructions from %s:\n\n%s", path, strings.TrimRight(text, "\n"))
		out.Files = append(out.Files, path)
	}
	if out.Cut {
		fmt.Fprintf(&b, "\n\n[Project instructions cut at %d bytes: %s not included.]", limit, strings.Join(skipped, ", "))
	}
	out.Text = b.String()
	return out, errors.Join(errs...)
}

// instructionDirs are the directories ReadInstructions reads, outermost
// first: cwd and its parents up to a repository root or a stop, or cwd
// alone when neither is reached.
func instructionDirs(cwd string, stops []string) []string {
	clean := make([]string, 0, len(stops))
	for _, s := range stops {
		if filepath.IsAbs(s) {
			clean = append(clean, filepath.Clean(s))
		}
	}
	var dirs []string
	for dir := cwd; ; {
		dirs = append(dirs, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || slices.Contains(clean, dir) {
			slices.Reverse(dirs)
			return dirs
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return []string{cwd}
		}
		dir = parent
	}
}

// readInstructionFile reads at most limit bytes of the first of
// InstructionFiles in dir, and returns its path; "" when dir has none (or
// only one that is not a regular file, or not UTF-8 text: such a file is
// named in the error, which may come with a path read). It reads through an os.Root of
// dir: a file that is a link out of dir (AGENTS.md -> ~/.aws/credentials,
// committed to a repository) is refused, never sent to the model; a link
// to another file of dir (CLAUDE.md -> AGENTS.md) is read.
func readInstructionFile(dir string, limit int) (string, []byte, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("project instructions in %s: %w", dir, err)
	}
	defer root.Close()
	var skipped error // the files that are not text
	for _, name := range InstructionFiles {
		path := filepath.Join(dir, name)
		st, err := root.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", nil, fmt.Errorf("project instructions %s: %w", path, err)
		case !st.Mode().IsRegular():
			continue // a directory named AGENTS.md, a FIFO: not instructions
		}
		f, err := root.OpenFile(name, os.O_RDONLY|openFlags, 0)
		if err != nil {
			return "", nil, fmt.Errorf("project instructions %s: %w", path, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return "", nil, nil // swapped for something else after the look
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(limit)))
		if err != nil {
			return "", nil, fmt.Errorf("project instructions %s: %w", path, err)
		}
		if why := notText(data, len(data) == limit); why != "" {
			// Never sent to the model; said, and the next name is read.
			skipped = errors.Join(skipped, fmt.Errorf("project instructions %s: %w: %s; skipped", path, ErrNotText, why))
			continue
		}
		return path, data, skipped
	}
	return "", nil, skipped
}

// ErrNotText is wrapped by ReadInstructions' error about an instruction
// file that is not UTF-8 text (a NUL byte, or bytes that are not UTF-8):
// it is skipped.
var ErrNotText = errors.New("not UTF-8 text")

// notText says why data, the start of a file (cut: the read stopped at
// its bound, so its last rune may be incomplete), is not UTF-8 text, or
// "".
func notText(data []byte, cut bool) string {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Sprintf("it has a NUL byte at offset %d", i)
	}
	valid := data
	if cut {
		for n := 1; n < utf8.UTFMax && n <= len(data); n++ { // an incomplete last rune
			if tail := data[len(data)-n:]; utf8.RuneStart(tail[0]) {
				if !utf8.FullRune(tail) {
					valid = data[:len(data)-n]
				}
				break
			}
		}
	}
	if !utf8.Valid(valid) {
		return "it is not valid UTF-8"
	}
	return ""
}

// cutText is text cut to at most n bytes: at the last line end in its last
// quarter when it has one, else at a rune boundary.
func cutText(text string, n int) string {
	text = text[:n]
	if i := strings.LastIndexByte(text, '\n'); i >= n*3/4 {
		return text[:i+1]
	}
	for len(text) > 0 { // no rune cut in two
		if r, size := utf8.DecodeLastRuneInString(text); r != utf8.RuneError || size != 1 {
			break
		}
		text = text[:len(text)-1]
	}
	return text
}
