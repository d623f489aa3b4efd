package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// lineShown bounds the part of a matching line search shows.
const lineShown = 512

// maxNamed bounds the files a note of search names.
const maxNamed = 10

// searchArgs are the arguments of search.
type searchArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Regex   bool   `json:"regex"`
}

func (t tools) search(ctx context.Context, in searchArgs) (string, error) {
	if in.Pattern == "" {
		return "", errors.New("pattern is empty")
	}
	s, err := newSearcher(t, in.Pattern, in.Regex)
	if err != nil {
		return "", err
	}
	if in.Path == "" {
		in.Path = "."
	}
	l, err := t.w.resolve(in.Path)
	if err != nil {
		return "", err
	}
	if _, err := l.dir.root.Stat(l.name); err != nil {
		return "", t.w.rootErr(l, err)
	}
	fsys := l.dir.root.FS()
	start := filepath.ToSlash(l.name)
	err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		at := loc{dir: l.dir, name: filepath.FromSlash(p), asked: p}
		if err != nil {
			if p == start {
				return t.w.rootErr(at, err)
			}
			s.fail(t.w.rel(at), err)
			return nil
		}
		if d.IsDir() {
			if p != start && (d.Name() == ".git" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // links are not followed; FIFOs, devices and sockets are not read
		}
		if s.within() {
			if err := s.file(ctx, at); err != nil {
				return err
			}
		} else if !s.late() {
			s.unsearched.add(t.w.rel(at)) // only counted, while there is time
		} else {
			s.walkCut = true
			return fs.SkipAll
		}
		if s.full {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return s.result(), nil
}

// result is the search's answer: the matches, why the search stopped
// early, and the files it skipped or could not finish.
func (s *searcher) result() string {
	var notes strings.Builder
	if s.spent != "" {
		fmt.Fprintf(&notes, "[search stopped early: %s; the matches shown are from the files searched until then]\n", s.spent)
	}
	s.binary.note(&notes, "skipped %d binary %s", "file", "files")
	s.failed.note(&notes, "could not finish %d %s", "file", "files")
	s.unfinished.note(&notes, "not searched to the end, for the budget: %d %s", "file", "files")
	s.unsearched.note(&notes, "not searched, for the budget: %d %s", "file", "files")
	if s.walkCut {
		notes.WriteString("[the search stopped walking the tree there: the files after it were not even counted]\n")
	}
	var b strings.Builder
	if s.matches == 0 {
		b.WriteString("no matches")
		if notes.Len() > 0 {
			b.WriteString("\n")
		}
	} else {
		b.WriteString(s.out.String())
		b.WriteString(s.cut)
	}
	b.WriteString(notes.String())
	return b.String()
}

// errBudget ends the reading of a file when the search's budget is spent.
var errBudget = errors.New("the search's budget is spent")

// within reports whether the search's budget lasts: bytes left to read
// and time left. When it does not, spent says which ran out.
func (s *searcher) within() bool {
	switch {
	case s.spent != "":
	case s.left <= 0:
		s.spent = fmt.Sprintf("it read %d bytes, its budget (SearchBytes)", s.t.o.SearchBytes)
	case s.late():
		s.spent = fmt.Sprintf("it ran for %v, its budget (SearchTime)", s.t.o.SearchTime)
	}
	return s.spent == ""
}

// late reports whether the search's time is up.
func (s *searcher) late() bool { return !time.Now().Before(s.deadline) }

// budgetReader reads a file for the search within its budget: at most
// the bytes left, and nothing once the time is up (errBudget).
type budgetReader struct {
	r io.Reader
	s *searcher
}

func (b budgetReader) Read(p []byte) (int, error) {
	if !b.s.within() {
		return 0, errBudget
	}
	p = p[:min(int64(len(p)), b.s.left)]
	n, err := b.r.Read(p)
	b.s.left -= int64(n)
	return n, err
}

// newSearcher returns the searcher for pattern, a regular expression when
// regex.
func newSearcher(t tools, pattern string, regex bool) (*searcher, error) {
	s := &searcher{t: t, r: bufio.NewReaderSize(nil, readBuffer), left: t.o.SearchBytes, deadline: time.Now().Add(t.o.SearchTime)}
	if regex {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("pattern is not a valid regular expression: %v", err)
		}
		s.re, s.find = re, re.FindIndex
		return s, nil
	}
	s.re = regexp.MustCompile(regexp.QuoteMeta(pattern))
	s.fixed = []byte(pattern)
	s.find = func(line []byte) []int {
		if i := bytes.Index(line, s.fixed); i >= 0 {
			return []int{i, i + len(s.fixed)}
		}
		return nil
	}
	return s, nil
}

// errText is err's text without the path the error repeats.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// fail notes that the file shown could not be searched to its end: for
// the budget, or for err.
func (s *searcher) fail(shown string, err error) {
	if errors.Is(err, errBudget) {
		s.unfinished.add(shown)
		return
	}
	s.failed.add(shown + " (" + errText(err) + ")")
}

// names counts files and keeps the first few names, for a note.
type names struct {
	n    int
	kept []string
}

func (ns *names) add(name string) {
	ns.n++
	if len(ns.kept) < maxNamed {
		ns.kept = append(ns.kept, name)
	}
}

// note writes the note "[format: names]" when there is a name.
func (ns *names) note(b *strings.Builder, format, one, many string) {
	if ns.n == 0 {
		return
	}
	noun := many
	if ns.n == 1 {
		noun = one
	}
	list := strings.Join(ns.kept, ", ")
	if ns.n > len(ns.kept) {
		list += ", …"
	}
	fmt.Fprintf(b, "["+format+": %s]\n", ns.n, noun, list)
}

// searcher is one search: it reads one file at a time through r and keeps
// at most MaxOutput bytes of matches, each line cut to lineShown bytes
// around its match, so it holds r's buffer, the output and one line's
// shown part, whatever the files hold.
type searcher struct {
	t          tools
	re         *regexp.Regexp     // the pattern, for a line longer than r's buffer (streamed)
	find       func([]byte) []int // the first match in a line r holds whole
	r          *bufio.Reader
	out        strings.Builder
	matches    int
	fixed      []byte // the pattern when it is a fixed string
	cut        string // why the search stopped early; "" when it did not
	pendingCut string // the note of a long line's entry, waiting for its length
	full       bool
	binary     names
	failed     names
	tail       tailBuffer
	left       int64     // the bytes the search may still read (Options.SearchBytes)
	deadline   time.Time // when its time is up (Options.SearchTime)
	spent      string    // which budget ran out; "" while both last
	unfinished names     // files the budget stopped in
	unsearched names     // files not read for the budget
	walkCut    bool      // the walk itself stopped for the time
}

// file searches the file at l.
func (s *searcher) file(ctx context.Context, l loc) error {
	shown := s.t.w.rel(l)
	f, err := l.dir.root.OpenFile(l.name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		s.fail(shown, err)
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil // swapped for something else since the listing
	}
	s.scan(ctx, shown, f)
	return ctx.Err()
}

// scan searches the file shown, read from r within the search's budget.
func (s *searcher) scan(ctx context.Context, shown string, r io.Reader) {
	s.r.Reset(budgetReader{r: r, s: s})
	if head, _ := s.r.Peek(binaryProbe); bytes.IndexByte(head, 0) >= 0 {
		s.binary.add(shown)
		return
	}
	for n := 1; !s.full; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return
		}
		line, err := s.r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if err := s.longLine(shown, n, line); err != nil {
				s.fail(shown, err)
				return
			}
			continue
		case err != nil && !errors.Is(err, io.EOF):
			s.fail(shown, err)
			return
		}
		if len(line) > 0 {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if m := s.find(line); m != nil {
				s.keep(shown, n, line, m[0], len(line), 0)
			}
		}
		if err != nil { // io.EOF
			return
		}
	}
}

// longLine searches line n, longer than r's buffer, whose first part r
// holds, as the line streams by: a fixed string chunk by chunk (each
// chunk after the end of the one before, so a match across two is
// found), a regular expression with regexp's MatchReader (which holds no
// input). The bytes around the first match are kept.
func (s *searcher) longLine(shown string, n int, first []byte) error {
	if s.fixed != nil {
		return s.longLineFixed(shown, n, first)
	}
	lr := &lineReader{r: s.r, tail: &s.tail}
	s.tail.reset()
	buf := append(s.tail.spare[:0], first...) // first is r's buffer: copied before r reads on
	s.tail.spare, lr.pending = buf, buf
	matched := s.re.MatchReader(lr)
	if matched {
		// Read on a little, so the match sits inside what is shown.
		for i := 0; i < lineShown/4 && !lr.done; i++ {
			if _, _, err := lr.ReadRune(); err != nil {
				break
			}
		}
		part := s.tail.bytes()
		s.keep(shown, n, part, -1, 0, lr.n-len(part))
	}
	for !lr.done { // the rest of the line
		if _, _, err := lr.ReadRune(); err != nil {
			break
		}
	}
	if lr.err != nil && !errors.Is(lr.err, io.EOF) {
		return lr.err
	}
	s.fixTotal(lr.n)
	return nil
}

// longLineFixed is longLine for a fixed string.
func (s *searcher) longLineFixed(shown string, n int, chunk []byte) error {
	carry := s.tail.spare[:0] // the end of the bytes before chunk, as long as the pattern less one
	total, matched, eof := 0, false, false
	for {
		last := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if last {
			chunk = chunk[:len(chunk)-1]
		}
		if !matched {
			window := append(carry, chunk...)
			if i := bytes.Index(window, s.fixed); i >= 0 {
				matched = true
				from := max(0, i-lineShown/4)
				to := min(len(window), from+lineShown)
				s.keep(shown, n, window[from:to], -1, 0, total-len(carry)+from)
			}
			keep := min(len(window), len(s.fixed)-1)
			carry = append(window[:0], window[len(window)-keep:]...)
			s.tail.spare = carry
		}
		total += len(chunk)
		if last || eof {
			break
		}
		var err error
		chunk, err = s.r.ReadSlice('\n')
		switch {
		case errors.Is(err, io.EOF):
			eof = true
		case err != nil && !errors.Is(err, bufio.ErrBufferFull):
			return err
		}
	}
	s.fixTotal(total)
	return nil
}

// keep adds the match in line n to the output. part is the line (whole:
// at is where the match begins and total its length) or, for a long line,
// the bytes of it that begin at offset (at -1, total filled in by
// fixTotal).
func (s *searcher) keep(shown string, n int, part []byte, at, total, offset int) {
	if s.matches == s.t.o.MaxEntries {
		s.cut = fmt.Sprintf("[search cut after %d matches]\n", s.matches)
		s.full = true
		return
	}
	from := 0
	if at >= 0 && total > lineShown {
		from = max(0, min(at-lineShown/4, len(part)-lineShown))
	}
	to := min(from+lineShown, len(part))
	for from > 0 && from < len(part) && !utf8.RuneStart(part[from]) {
		from++
	}
	for to < len(part) && to > from && !utf8.RuneStart(part[to]) {
		to--
	}
	text := strings.ToValidUTF8(string(part[from:to]), "\uFFFD")
	entry := fmt.Sprintf("%s:%d: %s", shown, n, text)
	s.pendingCut = ""
	switch {
	case at < 0:
		s.pendingCut = fmt.Sprintf(" [line of %%d bytes: bytes %d..%d shown]", offset+from, offset+to)
	case total > lineShown:
		entry += fmt.Sprintf(" [line of %d bytes: bytes %d..%d shown]", total, from, to)
	}
	if s.out.Len()+len(entry)+len(s.pendingCut)+24 > s.t.o.MaxOutput {
		s.cut = fmt.Sprintf("[search cut after %d matches: the output bound of %d bytes is reached]\n", s.matches, s.t.o.MaxOutput)
		s.full, s.pendingCut = true, ""
		return
	}
	s.matches++
	s.out.WriteString(entry)
	if s.pendingCut == "" {
		s.out.WriteString("\n")
	}
}

// fixTotal ends the entry of a long line, whose length is known once it
// has been read to its end.
func (s *searcher) fixTotal(total int) {
	if s.pendingCut != "" {
		fmt.Fprintf(&s.out, s.pendingCut+"\n", total)
		s.pendingCut = ""
	}
}

// lineReader is an io.RuneReader over one line: the bytes pending (the
// part of it already read), then r up to the newline, which ends it. It
// counts the line's bytes and keeps the last ones in tail.
type lineReader struct {
	r       *bufio.Reader
	pending []byte
	tail    *tailBuffer
	n       int   // the line's bytes read so far
	done    bool  // the newline (or the end of the file) was read
	err     error // a read error, io.EOF at the end of the file
}

func (lr *lineReader) ReadRune() (rune, int, error) {
	if lr.done {
		return 0, 0, io.EOF
	}
	var (
		r    rune
		size int
	)
	if len(lr.pending) > 0 {
		r, size = utf8.DecodeRune(lr.pending)
		lr.tail.write(lr.pending[:size])
		lr.pending = lr.pending[size:]
	} else {
		var err error
		r, size, err = lr.r.ReadRune()
		if err != nil {
			lr.done, lr.err = true, err
			return 0, 0, io.EOF
		}
		if r == '\n' {
			lr.done = true
			return 0, 0, io.EOF
		}
		lr.tail.writeRune(r)
	}
	lr.n += size
	return r, size, nil
}

// tailBuffer keeps the last lineShown bytes written to it.
type tailBuffer struct {
	buf   []byte
	spare []byte // reused for a long line's first part
}

func (t *tailBuffer) reset() { t.buf = t.buf[:0] }

func (t *tailBuffer) write(p []byte) {
	if len(t.buf)+len(p) > 2*lineShown {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-lineShown:]...)
	}
	t.buf = append(t.buf, p...)
}

func (t *tailBuffer) writeRune(r rune) {
	var b [utf8.UTFMax]byte
	t.write(b[:utf8.EncodeRune(b[:], r)])
}

// bytes returns the last lineShown bytes (or fewer) written.
func (t *tailBuffer) bytes() []byte {
	return t.buf[max(0, len(t.buf)-lineShown):]
}
