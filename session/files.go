package session

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/textcut"
)

// FileLedger is what a session knows of the files its tools read and
// changed: for each path, the last access (the content hash and size the
// agent saw, when, by which call) and whether it was read or changed
// (docs/compaction.md, "Files"). A session keeps one, folded from what it
// stores: the files of its standing Segments (history.Segment.Files),
// oldest first, then those of its Active messages (history.Message.Files).
// So it survives compaction, reopen, takeover and a client's session/load
// alike, and a fork starts with its parent's at the fork point.
//
// A tool reads it and records into it through the ctx of its call
// ([FileLedgerOf]): what a call records goes into the Files of the tool
// result the session stores. The ledger is bounded: it keeps the newest
// [history.MaxFiles] paths, and [FileLedger.Evicted] says how many older
// ones it dropped, which a tool must treat as never read.
//
// A session's tools run one at a time on one goroutine; a FileLedger is
// not safe for concurrent use.
type FileLedger struct {
	max     int
	set     *fileSet // shared with other ledgers until one changes (own)
	evicted int
	pending []history.FileAccess // recorded by the call running, not yet stored
}

// fileSet is the files of one or more FileLedgers: the loop's ledger and
// the view it hands a tool batch's worker (share) hold the same set, and
// whichever changes it first while the other still holds it changes a
// copy (own). A set held by one ledger is changed in place. Only the
// loop shares a set (refs rises on its goroutine alone); refs falls
// where a holder copies or lets go.
type fileSet struct {
	files map[string]*list.Element // of order
	order *list.List               // of history.FileState, oldest access first
	refs  atomic.Int32             // the ledgers that hold it
}

// newFileSet is an empty set held by one ledger.
func newFileSet() *fileSet {
	s := &fileSet{files: make(map[string]*list.Element), order: list.New()}
	s.refs.Store(1)
	return s
}

// NewFileLedger returns an empty ledger that keeps the newest max paths
// (max ≤ 0 or above history.MaxFiles: history.MaxFiles), for tests of
// tools and for agents that run tools themselves ([WithFileLedger]).
func NewFileLedger(max int) *FileLedger {
	if max <= 0 || max > history.MaxFiles {
		max = history.MaxFiles
	}
	return &FileLedger{max: max, set: newFileSet()}
}

type fileLedgerKey struct{}

// WithFileLedger returns a copy of ctx whose [FileLedgerOf] is f, for
// tests of tools and for agents that run tools themselves.
func WithFileLedger(ctx context.Context, f *FileLedger) context.Context {
	return context.WithValue(ctx, fileLedgerKey{}, f)
}

// FileLedgerOf returns the file ledger of the session whose tool call ctx
// is (see [Tool].Run), nil for any other ctx: a tool then has nothing to
// go on and records nothing.
func FileLedgerOf(ctx context.Context) *FileLedger {
	f, _ := ctx.Value(fileLedgerKey{}).(*FileLedger)
	return f
}

// Seen returns what the session last saw of the file at path (a
// [history.FileAccess] Path), and false when it never read or changed it
// or no longer remembers it (see Evicted).
func (f *FileLedger) Seen(path string) (history.FileState, bool) {
	if f == nil {
		return history.FileState{}, false
	}
	e, ok := f.set.files[path]
	if !ok {
		return history.FileState{}, false
	}
	return e.Value.(history.FileState), true
}

// Record records that the tool call running read or changed a file: the
// ledger knows it at once, and the session stores it with the call's
// result (its ToolCallID and, when zero, At are the session's to fill).
// It returns the error of an access that is not valid
// ([history.FileAccess.Validate]), which it does not record.
func (f *FileLedger) Record(a history.FileAccess) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("session: file ledger: %w", err)
	}
	if f == nil {
		return nil
	}
	if a.At.IsZero() {
		a.At = time.Now()
	}
	a.At = a.At.UTC().Round(0) // as the stores give it back
	f.fold(stateOf(a))
	f.pending = append(f.pending, a)
	return nil
}

// Evicted is how many paths the ledger dropped, oldest first, to keep
// within its bound.
func (f *FileLedger) Evicted() int {
	if f == nil {
		return 0
	}
	return f.evicted
}

// Max is the number of paths the ledger keeps at most.
func (f *FileLedger) Max() int {
	if f == nil {
		return 0
	}
	return f.max
}

// Len is the number of paths the ledger holds.
func (f *FileLedger) Len() int {
	if f == nil {
		return 0
	}
	return len(f.set.files)
}

// Newest returns up to n of the ledger's files, newest access first (all
// of them for n ≤ 0).
func (f *FileLedger) Newest(n int) []history.FileState {
	if f == nil {
		return nil
	}
	if n <= 0 || n > len(f.set.files) {
		n = len(f.set.files)
	}
	out := make([]history.FileState, 0, n)
	for e := f.set.order.Back(); e != nil && len(out) < n; e = e.Prev() {
		out = append(out, e.Value.(history.FileState))
	}
	return out
}

func stateOf(a history.FileAccess) history.FileState {
	return history.FileState{FileAccess: a, Read: a.Op == history.FileRead, Changed: a.Op == history.FileChanged}
}

// fold adds st, newer than everything folded before.
func (f *FileLedger) fold(st history.FileState) {
	f.own()
	s := f.set
	if e, ok := s.files[st.Path]; ok {
		was := e.Value.(history.FileState)
		st.Read = st.Read || was.Read
		st.Changed = st.Changed || was.Changed
		e.Value = st
		s.order.MoveToBack(e)
		return
	}
	s.files[st.Path] = s.order.PushBack(st)
	if len(s.files) > f.max {
		oldest := s.order.Front()
		delete(s.files, oldest.Value.(history.FileState).Path)
		s.order.Remove(oldest)
		f.evicted++
	}
}

// own makes f's set its own to change: while another ledger holds it too,
// f takes a copy and lets go of it.
func (f *FileLedger) own() {
	if f.set.refs.Load() == 1 {
		return
	}
	c := newFileSet()
	for e := f.set.order.Front(); e != nil; e = e.Next() {
		st := e.Value.(history.FileState)
		c.files[st.Path] = c.order.PushBack(st)
	}
	f.set.refs.Add(-1)
	f.set = c
}

// foldStates folds a Segment's files, which list the newest first.
func (f *FileLedger) foldStates(files []history.FileState) {
	for i := len(files) - 1; i >= 0; i-- {
		f.fold(files[i])
	}
}

// foldMessages folds the files of msgs, oldest first.
func (f *FileLedger) foldMessages(msgs []history.Message) {
	for i := range msgs {
		for _, a := range msgs[i].Files {
			if a.ToolCallID == "" {
				a.ToolCallID = msgs[i].ToolCallID
			}
			f.fold(stateOf(a))
		}
	}
}

// clone is a copy of f, without pending accesses.
func (f *FileLedger) clone() *FileLedger {
	c := f.share()
	c.own()
	return c
}

// share is a ledger of f's files, without pending accesses, that holds
// f's set until one of the two changes it (copy on write): what the loop
// hands a tool batch's worker, which lets go of it (release) when done.
// Call it on the goroutine that owns f.
func (f *FileLedger) share() *FileLedger {
	f.set.refs.Add(1)
	return &FileLedger{max: f.max, set: f.set, evicted: f.evicted}
}

// release lets go of f's set: f is not used again.
func (f *FileLedger) release() {
	f.set.refs.Add(-1)
}

// take returns the accesses recorded since the last take, for the result
// of tool call id: the newest history.MaxFiles of them.
func (f *FileLedger) take(id string) []history.FileAccess {
	p := f.pending
	f.pending = nil
	if len(p) > history.MaxFiles {
		p = p[len(p)-history.MaxFiles:]
	}
	for i := range p {
		p[i].ToolCallID = id
	}
	return p
}

// ledgerOf folds the files of segs (the standing Segments' Files, oldest
// Segment first) and of active.
func ledgerOf(segs [][]history.FileState, active []history.Message) *FileLedger {
	f := NewFileLedger(0)
	for _, s := range segs {
		f.foldStates(s)
	}
	f.foldMessages(active)
	return f
}

// standingFiles are the Files of the Segments that stand, oldest first.
func standingFiles(segs []history.Segment) [][]history.FileState {
	var out [][]history.FileState
	for i := range segs {
		if !segs[i].Undone() && len(segs[i].Files) > 0 {
			out = append(out, segs[i].Files)
		}
	}
	return out
}

// readStandingFiles reads the Files of session id's standing Segments
// (standingFiles).
func readStandingFiles(ctx context.Context, store history.Store, id string) ([][]history.FileState, error) {
	heads, err := store.SegmentHeaders(ctx, id)
	if err != nil {
		return nil, err
	}
	return standingFiles(heads), nil
}

// segmentFiles are the files msgs (the prefix a compaction archives) read
// or changed, as the Segment records them: newest first, at most
// history.MaxFiles.
func segmentFiles(msgs []history.Message) []history.FileState {
	f := NewFileLedger(0)
	f.foldMessages(msgs)
	if f.Len() == 0 {
		return nil
	}
	return f.Newest(0)
}

// Bounds of the files note of the retained summary view.
const (
	maxNoteFiles = 40
	maxNotePath  = 200
)

// filesNote is the note after the retained summary that lists the files
// read and changed before it (segs, the ledger of the standing Segments'
// files alone), newest first, at most maxNoteFiles of them; "" for none.
func filesNote(segs *FileLedger) string {
	if segs.Len() == 0 {
		return ""
	}
	files := segs.Newest(maxNoteFiles + 1)
	more := segs.Len() - maxNoteFiles
	var b strings.Builder
	b.WriteString("Files read or changed before this summary, newest first (the file tools still know what you saw of each, so an unchanged file needs no new read before edit_file; read_file shows its content now, and a file changed since must be read again):")
	for i, f := range files {
		if i == maxNoteFiles {
			fmt.Fprintf(&b, "\n- and %d more", more)
			break
		}
		what := "read"
		switch {
		case f.Read && f.Changed:
			what = "read, changed"
		case f.Changed:
			what = "changed"
		}
		fmt.Fprintf(&b, "\n- %s (%s)", textcut.Quote(f.Path, maxNotePath), what)
	}
	return b.String()
}

// setSegFiles adopts segs as the standing Segments' files: the ledger and
// the summary view's note are made again from them.
func (l *loop) setSegFiles(segs [][]history.FileState) {
	l.segLedger = ledgerOf(segs, nil)
	l.segFilesChanged()
}

// addSegFiles adds the files of a Segment just committed, the newest
// standing one, to the standing Segments': one fold of its files, the
// same as setSegFiles of all of them (the fold is in order, and depends
// only on the ledger folded so far).
func (l *loop) addSegFiles(files []history.FileState) {
	l.segLedger.foldStates(files)
	l.segFilesChanged()
}

// segFilesChanged makes the summary view's note and the ledger again from
// segLedger (and Active).
func (l *loop) segFilesChanged() {
	l.filesStale = false
	l.filesNote = filesNote(l.segLedger)
	l.setFiles(l.activeLedger())
}

// setFiles makes f the loop's ledger and lets go of the one before, so
// that a tool batch's worker still holding that one's set (share) changes
// it in place instead of copying it for nobody.
func (l *loop) setFiles(f *FileLedger) {
	if l.files != nil {
		l.files.release()
	}
	l.files = f
}

// activeLedger is the ledger of the standing Segments' files and Active's.
func (l *loop) activeLedger() *FileLedger {
	f := l.segLedger.clone()
	f.foldMessages(l.active)
	return f
}
