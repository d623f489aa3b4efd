package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// ErrNotRead is wrapped by the refusal of an edit_file of a file the
// session never read (or no longer remembers: its ledger is bounded).
// Nothing was changed.
var ErrNotRead = errors.New("workspace: the file was not read in this session")

// ErrChangedSinceRead is wrapped by the refusal of a write_file or
// edit_file of a file whose content changed since the session last read
// or changed it (on the disk, or in the editor when the editor reads the
// files). Nothing was changed.
var ErrChangedSinceRead = errors.New("workspace: the file changed since the session last saw it")

// hashPrefix begins every hash of the ledger: xxHash64, a fast change
// detector (a file's content is not secret from the agent, and nobody
// gains by forging a collision with what the agent itself read).
const hashPrefix = "xxh64:"

// contentHash is the ledger's hash of text.
func contentHash(text string) string {
	return hashPrefix + fmt.Sprintf("%016x", xxhash.Sum64String(text))
}

// maxLinkHops bounds the links ledgerPath follows in one path.
const maxLinkHops = 40

// ledgerPath is the path the file ledger knows the file at l by: the links
// inside its directory resolved, one component at a time through its
// Root, so that "a", "./a", "dir/../a" and a link to a inside the
// workspace are one path; relative to the working directory (absolute
// for a file of another directory of the session), slash-separated. A
// link that leads out of the directory, a loop or an absolute link is left
// as it is (the Root refuses to follow it anyway); so is the part of the
// name that does not exist yet.
func (w *Workspace) ledgerPath(l loc) string {
	name := l.name
	hops := 0
walk:
	for {
		parts := strings.Split(name, string(filepath.Separator))
		for i := range parts {
			prefix := filepath.Join(parts[:i+1]...)
			st, err := l.dir.root.Lstat(prefix)
			if err != nil {
				break walk // not there (yet): the rest is a name
			}
			if st.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := l.dir.root.Readlink(prefix)
			if err != nil || filepath.IsAbs(target) || hops == maxLinkHops {
				break walk
			}
			hops++
			next := filepath.Join(append([]string{filepath.Dir(prefix), target}, parts[i+1:]...)...)
			if next == ".." || strings.HasPrefix(next, ".."+string(filepath.Separator)) {
				break walk // out of the directory
			}
			name = next
			continue walk
		}
		break
	}
	return filepath.ToSlash(w.rel(loc{dir: l.dir, name: name}))
}

// record records an access of the file at l in the session's ledger (none
// outside a session's tool call).
func (t tools) record(ctx context.Context, l loc, a history.FileAccess) {
	led := session.FileLedgerOf(ctx)
	if led == nil {
		return
	}
	a.Path = t.w.ledgerPath(l)
	_ = led.Record(a) // valid by construction
}

// seenWhole is the access of a tool that saw all of text.
func seenWhole(op history.FileOp, text string) history.FileAccess {
	return history.FileAccess{Op: op, Hash: contentHash(text), Size: int64(len(text))}
}

// seenPart is the access of a read that saw text from the start of line
// line of a file of size bytes.
func seenPart(text string, line int, size int64) history.FileAccess {
	return history.FileAccess{Op: history.FileRead, Hash: contentHash(text), Size: size, Line: max(line, 1), Length: int64(len(text))}
}

// unchanged reports whether text, the file's content now, still holds
// what st saw of it: the same content for a whole file, the same bytes
// from the start of the same line for a part.
func unchanged(st history.FileState, text string) bool {
	if st.Whole() {
		return int64(len(text)) == st.Size && contentHash(text) == st.Hash
	}
	off := 0
	for n := 1; n < st.Line; n++ {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return false
		}
		off += i + 1
	}
	end := int64(off) + st.Length
	return end <= int64(len(text)) && contentHash(text[off:end]) == st.Hash
}

// guard refuses tool's change of tg when the session's ledger says the
// model would change a file it has not seen as it is: edit_file of a file
// never read, write_file or edit_file of one changed since the session
// last read or changed it. A new file needs no read; write_file may
// replace a file never read. Off with Options.NoFileGuard, and outside a
// session's tool call (no ledger).
func (t tools) guard(ctx context.Context, tool string, tg *target) error {
	led := session.FileLedgerOf(ctx)
	if t.o.NoFileGuard || led == nil || !tg.exists {
		return nil
	}
	name := shownName(t.w.rel(tg.l))
	st, ok := led.Seen(t.w.ledgerPath(tg.l))
	if !ok {
		if tool == "write_file" {
			return nil
		}
		msg := name + " has not been read in this session: read it with read_file, then edit it; nothing was changed"
		if led.Evicted() > 0 {
			msg += fmt.Sprintf(" (this session has read or changed more files than the %d the file tools remember, so one read long ago counts as not read)", led.Max())
		}
		return &guardError{ErrNotRead, msg}
	}
	if unchanged(st, tg.text) {
		return nil
	}
	where := "on disk"
	if ed := t.o.Editor; ed != nil && ed.CanReadFiles() {
		where = "in the editor"
	}
	did := "read"
	if st.Op == history.FileChanged {
		did = "changed"
	}
	size := ""
	if st.Whole() && int64(len(tg.text)) != st.Size {
		size = " (it has " + strconv.Itoa(len(tg.text)) + " bytes now, " + strconv.FormatInt(st.Size, 10) + " then)"
	}
	verb := "editing"
	if tool == "write_file" {
		verb = "replacing"
	}
	return &guardError{ErrChangedSinceRead, fmt.Sprintf("%s changed %s since you %s it at %s%s: read it again before %s it; nothing was changed",
		name, where, did, st.At.Local().Format("15:04:05"), size, verb)}
}

// guardAgain repeats the guard after the permission request, which may
// have waited long: it refuses the change when tg's file no longer holds
// the text the guard passed and the request showed (edited meanwhile on
// the disk or in the editor), since the change was made from that text
// and writing it would undo the edit. Like guard, only for a file that
// exists, in a session's tool call, with the guard on; and only after a
// request (nothing waited otherwise).
func (t tools) guardAgain(ctx context.Context, tool string, tg *target) error {
	if t.o.NoFileGuard || session.FileLedgerOf(ctx) == nil || !tg.exists || !tg.asked {
		return nil
	}
	var (
		now   string
		err   error
		where = "on disk"
	)
	if ed := t.o.Editor; ed != nil && ed.CanReadFiles() {
		where = "in the editor"
		if err = t.w.held(tg.l); err == nil { // just before the editor opens the name
			now, err = ed.ReadTextFile(ctx, tg.l.shown(), 0, 0)
		}
	} else {
		var data []byte
		data, err = io.ReadAll(io.LimitReader(io.NewSectionReader(tg.f, 0, math.MaxInt64), int64(t.o.MaxFileSize)+1))
		now = string(data)
	}
	switch {
	case err != nil:
		return fmt.Errorf("%s: reading it again after the permission request: %w; nothing was changed", tg.l.asked, err)
	case now == tg.text:
		return nil
	}
	verb := "editing"
	if tool == "write_file" {
		verb = "replacing"
	}
	return &guardError{ErrChangedSinceRead, fmt.Sprintf("%s changed %s while the permission request waited: read it again before %s it; nothing was changed",
		shownName(t.w.rel(tg.l)), where, verb)}
}

// guardError is a refusal of the guard: its text says what happened and
// what to do, for the model, and it wraps its sentinel.
type guardError struct {
	sentinel error
	msg      string
}

func (e *guardError) Error() string { return e.msg }
func (e *guardError) Unwrap() error { return e.sentinel }
