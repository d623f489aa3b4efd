package historytest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// The crash checker of durable stores. A store's crash test runs a child
// process that writes one session with [CrashWrite] and kills it (or its
// database server) at a random instant; the parent parses the lines the
// child printed with [ParseCrashOp] and checks the stored session with
// [CrashModel.Verify]: every acknowledged write is there, the write in
// flight is there completely or not at all, nothing is lost, duplicated or
// half-written, and interrupted compactions are recovered. Starting and
// killing the processes is the store's business.

var crashT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// CrashMessage is the n-th message ever appended to a crash session. Its
// content is derived from n so that the parent can check every byte: it
// holds a NUL byte and non-ASCII text, and cycles through the roles, tool
// calls, tool results and steers.
func CrashMessage(n int) history.Message {
	m := history.Message{
		ID:        fmt.Sprintf("m-%d", n),
		Role:      history.RoleUser,
		Text:      fmt.Sprintf("message %d \x00 %s", n, strings.Repeat("é", n%97)),
		CreatedAt: crashT0.Add(time.Duration(n) * time.Millisecond),
	}
	switch n % 5 {
	case 1, 3:
		m.Role = history.RoleAssistant
	case 2:
		m.Role = history.RoleAssistant
		m.ToolCalls = []history.ToolCall{{ID: fmt.Sprintf("call-%d", n), Name: "read", Arguments: []byte(fmt.Sprintf(`{"n": %d}`, n))}}
	case 4:
		m.Role, m.ToolCallID = history.RoleTool, fmt.Sprintf("call-%d", n-2)
	}
	if n%7 == 3 && m.Role == history.RoleUser {
		m.Steer = true
	}
	return m
}

// sameMessage reports whether got is want, byte for byte.
func sameMessage(want, got *history.Message) bool {
	if !want.CreatedAt.Equal(got.CreatedAt) || len(want.ToolCalls) != len(got.ToolCalls) {
		return false
	}
	for i := range want.ToolCalls {
		w, g := want.ToolCalls[i], got.ToolCalls[i]
		if w.ID != g.ID || w.Name != g.Name || !bytes.Equal(w.Arguments, g.Arguments) {
			return false
		}
	}
	return want.ID == got.ID && want.Role == got.Role && want.Text == got.Text &&
		want.ToolCallID == got.ToolCallID && want.Steer == got.Steer
}

// CrashWrite is the writing loop of a crash child: it continues session
// snap.ID of s from snap, its stored state, and writes until a write fails,
// with random batches of [CrashMessage] appends and compactions that are
// committed (and sometimes undone),
// finished as failed or left in progress, all drawn from seed.
// It reports every write with say: "try …" before it and "ack …" after it
// succeeded, lines that [ParseCrashOp] reads back. It returns the kind of the
// write that failed (append, begin, commit, finish or uncompact) and its
// error.
func CrashWrite(ctx context.Context, s history.Store, snap *history.Snapshot, seed uint64, say func(format string, args ...any)) (kind string, err error) {
	id, v := snap.ID, snap.Version
	next := int(snap.Archived) + len(snap.Active)
	active := len(snap.Active)
	rng := rand.New(rand.NewPCG(seed, 1))
	standing := 0 // segments not undone
	segs, err := s.Segments(ctx, id)
	if err != nil {
		return "segments", err
	}
	for i := range segs {
		if !segs[i].Undone() {
			standing++
		}
	}
	for i := 0; ; i++ {
		n := 1 + rng.IntN(3)
		batch := make([]history.Message, n)
		for j := range batch {
			batch[j] = CrashMessage(next + j)
		}
		say("try append %d %d", next, n)
		if v, err = s.Append(ctx, id, v, batch); err != nil {
			return "append", err
		}
		say("ack append %d %d %d", v, next, n)
		next += n
		active += n
		if rng.IntN(3) != 0 {
			continue
		}
		cid := fmt.Sprintf("c-%d-%d", seed, i)
		say("try begin %s", cid)
		v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{
			CompactID: cid, Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now(),
		})
		if err != nil {
			return "begin", err
		}
		say("ack begin %d %s", v, cid)
		switch r := rng.IntN(10); {
		case r < 6:
			k := max(1, active/2)
			say("try commit %s %d", cid, k)
			v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{
				CompactID: cid, SegmentID: "seg-" + cid, Archive: k, Summary: "summary of " + cid, At: time.Now(),
			})
			if err != nil {
				return "commit", err
			}
			say("ack commit %d %s %d", v, cid, k)
			active -= k
			standing++
			// Undo it sometimes, and then sometimes the one before too.
			for j := 0; standing > 0 && rng.IntN(3) == 0; j++ {
				uid := fmt.Sprintf("u-%s-%d", cid, j)
				say("try uncompact %s", uid)
				var rec *history.UncompactionRecord
				v, rec, err = s.Uncompact(ctx, id, v, history.Uncompaction{ID: uid, At: time.Now()})
				if err != nil {
					return "uncompact", err
				}
				say("ack uncompact %d %s %s %d", v, uid, rec.CompactID, rec.Restored)
				active += rec.Restored
				standing--
			}
		case r < 8:
			say("try finish %s", cid)
			v, err = s.FinishCompaction(ctx, id, v, cid, history.StatusFailed, "model failed", time.Now())
			if err != nil {
				return "finish", err
			}
			say("ack finish %d %s", v, cid)
		default: // left in progress
		}
	}
}

// CrashOp is one write of a crash child as it reported it: the "try" line
// before the write or the "ack" line after it.
type CrashOp struct {
	Kind    string // append, begin, commit, finish or uncompact
	Ack     bool   // the write's ack, else its try
	Version uint64 // ack: the version the write returned
	First   int    // append: the number of its first message
	N       int    // append: messages; commit: archived; uncompact ack: restored
	CID     string // begin, commit, finish: the compaction ID; uncompact ack: the one undone
	UID     string // uncompact: the uncompaction ID
}

// ParseCrashOp parses a "try …" or "ack …" line that [CrashWrite] printed.
func ParseCrashOp(line string) (CrashOp, error) {
	bad := fmt.Errorf("bad line %q", line)
	f := strings.Fields(line)
	if len(f) < 2 || (f[0] != "try" && f[0] != "ack") {
		return CrashOp{}, bad
	}
	op := CrashOp{Ack: f[0] == "ack", Kind: f[1]}
	args := f[2:]
	if op.Ack {
		if len(args) == 0 {
			return op, bad
		}
		v, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return op, bad
		}
		op.Version, args = v, args[1:]
	}
	var err error
	switch {
	case op.Kind == "append" && len(args) == 2:
		op.First, err = strconv.Atoi(args[0])
		if err == nil {
			op.N, err = strconv.Atoi(args[1])
		}
	case op.Kind == "commit" && len(args) == 2:
		op.CID = args[0]
		op.N, err = strconv.Atoi(args[1])
	case (op.Kind == "begin" || op.Kind == "finish") && len(args) == 1:
		op.CID = args[0]
	case op.Kind == "uncompact" && !op.Ack && len(args) == 1:
		op.UID = args[0]
	case op.Kind == "uncompact" && op.Ack && len(args) == 3:
		op.UID, op.CID = args[0], args[1]
		op.N, err = strconv.Atoi(args[2])
	default:
		err = bad
	}
	return op, err
}

// CrashModel is what a crash test's parent knows of the stored session after
// the last verified round. Make it with [NewCrashModel].
type CrashModel struct {
	Total    int      // messages ever appended
	Segments []string // compaction IDs of the segments, in order
	Sizes    []int    // their message counts
	Undone   []bool   // whether an uncompaction undid them
	Version  uint64   // the session version after the last Recover
	// InFlightStored and InFlightLost count the writes in flight at a kill,
	// by kind, that were found stored and not stored.
	InFlightStored, InFlightLost map[string]int

	// finished compactions whose outcome is known from acknowledged writes
	committed, failed map[string]bool
	// undone compactions and their uncompaction IDs, from acknowledged writes
	undone map[string]string
}

// NewCrashModel returns the model of a new, empty session at version.
func NewCrashModel(version uint64) *CrashModel {
	return &CrashModel{
		Version:   version,
		committed: map[string]bool{}, failed: map[string]bool{}, undone: map[string]string{},
		InFlightStored: map[string]int{}, InFlightLost: map[string]int{},
	}
}

// Verify checks session id of s after a round of a crash child against the
// model and ops, the writes the child reported, reporting each violation
// with violate. fenced says that the child's write in flight failed with
// [history.ErrFenced]: it must not have been stored. Verify recovers the
// session with Recover on the way, then brings the model up to the stored
// state. It returns the session as loaded before Recover and the IDs of the
// interrupted compactions that Recover recorded; an error means the session
// could not be read at all.
func (m *CrashModel) Verify(ctx context.Context, s history.Store, id string, ops []CrashOp, fenced bool, violate func(format string, args ...any)) (loaded *history.Snapshot, recovered []string, err error) {
	r := &crashRound{m: m, violate: violate, begun: map[string]bool{}}
	r.readAcks(ops)
	snap, rv, ids, err := r.recoverAndRead(ctx, s, id)
	if err != nil {
		return snap, ids, err
	}
	r.checkMessages()
	r.checkSegments()
	r.checkTimeline()
	r.checkInFlight(fenced)

	m.Total = len(r.all)
	m.Segments, m.Sizes, m.Undone = m.Segments[:0], m.Sizes[:0], m.Undone[:0]
	for _, g := range r.segs {
		m.Segments = append(m.Segments, g.CompactID)
		m.Sizes = append(m.Sizes, len(g.Messages))
		m.Undone = append(m.Undone, g.Undone())
		if g.Undone() {
			m.undone[g.CompactID] = g.UndoID
		}
	}
	m.Version = rv
	return snap, ids, nil
}

// crashRound is one Verify: what the acknowledgements promise, what the
// store holds after Recover, and what the checks found on the way.
type crashRound struct {
	m       *CrashModel
	violate func(format string, args ...any)

	// from the acknowledgements: the messages and version they promise, the
	// acknowledged commits and begun compactions, and the one write that
	// may or may not have happened
	ackedTotal  int
	lastVersion uint64
	commits     []CrashOp
	pending     *CrashOp
	begun       map[string]bool

	// stored after Recover
	after *history.Snapshot
	segs  []history.Segment
	tl    []history.Entry

	all          []history.Message // standing segments' messages, then Active
	archived     int               // how many of all are archived
	undoneStored bool              // the pending uncompaction is stored
	records      map[string]history.CompactionRecord
	undos        map[string]history.UncompactionRecord
}

// readAcks takes in the writes the child reported: each acknowledged one
// joins the model's promises, an unacknowledged one is pending.
func (r *crashRound) readAcks(ops []CrashOp) {
	m := r.m
	r.ackedTotal, r.lastVersion = m.Total, m.Version
	for i, op := range ops {
		if !op.Ack {
			if i != len(ops)-1 {
				if next := ops[i+1]; !next.Ack || next.Kind != op.Kind {
					r.violate("a %s was not acknowledged before the next write", op.Kind)
				}
			}
			r.pending = &ops[i]
			continue
		}
		r.pending = nil
		if op.Version <= r.lastVersion {
			r.violate("acknowledged version %d does not increase (after %d)", op.Version, r.lastVersion)
		}
		r.lastVersion = op.Version
		switch op.Kind {
		case "append":
			if op.First != r.ackedTotal {
				r.violate("append acknowledged at message %d, expected %d", op.First, r.ackedTotal)
			}
			r.ackedTotal = op.First + op.N
		case "begin":
			r.begun[op.CID] = true
		case "commit":
			r.commits = append(r.commits, op)
			m.committed[op.CID] = true
		case "finish":
			m.failed[op.CID] = true
		case "uncompact":
			m.undone[op.CID] = op.UID
		}
	}
}

// recoverAndRead loads session id, recovers it and reads it again with its
// segments and timeline. It returns the session as loaded before Recover,
// the version after Recover and the compactions it recorded.
func (r *crashRound) recoverAndRead(ctx context.Context, s history.Store, id string) (*history.Snapshot, uint64, []string, error) {
	snap, err := s.Load(ctx, id)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("load: %w", err)
	}
	if snap.Version < r.lastVersion {
		r.violate("stored version %d is older than the last acknowledged %d", snap.Version, r.lastVersion)
	}
	rv, ids, err := s.Recover(ctx, id, snap.Version, time.Now())
	if err != nil {
		return snap, 0, nil, fmt.Errorf("recover: %w", err)
	}
	if fmt.Sprint(ids) != fmt.Sprint(snap.Interrupted) {
		r.violate("Recover recorded %v, Load reported %v interrupted", ids, snap.Interrupted)
	}
	if (len(ids) > 0) != (rv > snap.Version) {
		r.violate("Recover of %d compactions went from version %d to %d", len(ids), snap.Version, rv)
	}
	if r.after, err = s.Load(ctx, id); err != nil {
		return snap, 0, ids, fmt.Errorf("load after recover: %w", err)
	}
	if r.segs, err = s.Segments(ctx, id); err != nil {
		return snap, 0, ids, fmt.Errorf("segments: %w", err)
	}
	if r.tl, err = s.Timeline(ctx, id); err != nil {
		return snap, 0, ids, fmt.Errorf("timeline: %w", err)
	}
	if r.after.Version != rv || len(r.after.Interrupted) > 0 {
		r.violate("after Recover: version %d (want %d), interrupted %v", r.after.Version, rv, r.after.Interrupted)
	}
	return snap, rv, ids, nil
}

// checkMessages checks that the standing segments + Active is every message
// ever appended, in order, each exactly as written; an undone segment keeps
// its messages, which are Active again.
func (r *crashRound) checkMessages() {
	for _, g := range r.segs {
		if !g.Undone() {
			r.all = append(r.all, g.Messages...)
		}
	}
	r.archived = len(r.all)
	r.all = append(r.all, r.after.Active...)
	bad := 0
	for i := range r.all {
		if want := CrashMessage(i); !sameMessage(&want, &r.all[i]) {
			if bad++; bad <= 3 {
				r.violate("message %d is %s %q, want %s", i, r.all[i].ID, r.all[i].Text, want.ID)
			}
		}
	}
	switch pending := r.pending; {
	case len(r.all) == r.ackedTotal:
	case pending != nil && pending.Kind == "append" && len(r.all) == r.ackedTotal+pending.N:
	default:
		r.violate("%d messages stored, %d acknowledged (pending %+v)", len(r.all), r.ackedTotal, pending)
	}
	if int64(r.archived) != r.after.Archived {
		r.violate("Snapshot.Archived %d, segments hold %d", r.after.Archived, r.archived)
	}
}

// checkSegments checks that the segments are the earlier ones, the
// acknowledged commits and at most the pending one, each with the summary
// and size it was committed with.
func (r *crashRound) checkSegments() {
	m, segs, pending := r.m, r.segs, r.pending
	want := append([]string(nil), m.Segments...)
	wantSizes := append([]int(nil), m.Sizes...)
	for _, c := range r.commits {
		want, wantSizes = append(want, c.CID), append(wantSizes, c.N)
	}
	if pending != nil && pending.Kind == "commit" && len(segs) == len(want)+1 {
		want, wantSizes = append(want, pending.CID), append(wantSizes, pending.N)
		m.committed[pending.CID] = true
	}
	if len(segs) != len(want) {
		r.violate("%d segments stored, want %d", len(segs), len(want))
	}
	for i := range min(len(segs), len(want)) {
		g := segs[i]
		if g.CompactID != want[i] || g.ID != "seg-"+want[i] || len(g.Messages) != wantSizes[i] || g.Summary != "summary of "+want[i] {
			r.violate("segment %d is %s/%s with %d messages and %q, want %s with %d", i, g.ID, g.CompactID, len(g.Messages), g.Summary, want[i], wantSizes[i])
		}
		uid, acked := m.undone[g.CompactID]
		switch {
		case acked && g.UndoID != uid:
			r.violate("segment %s undone by %q, want %q", g.CompactID, g.UndoID, uid)
		case !acked && g.Undone() && pending != nil && pending.Kind == "uncompact" && g.UndoID == pending.UID && !r.undoneStored:
			r.undoneStored = true
		case !acked && g.Undone():
			r.violate("segment %s undone by %q without an acknowledged or pending uncompaction", g.CompactID, g.UndoID)
		}
	}
	// Undone segments are the newest ones: no standing segment after one.
	for i := 1; i < len(segs); i++ {
		if segs[i-1].Undone() && !segs[i].Undone() && segs[i].Position < segs[i-1].Position {
			r.violate("segment %s stands after the undone %s", segs[i].CompactID, segs[i-1].CompactID)
		}
	}
	wantSummary := ""
	for _, g := range segs {
		if !g.Undone() {
			wantSummary = g.Summary
		}
	}
	if r.after.Summary != wantSummary {
		r.violate("retained summary %q, last segment's %q", r.after.Summary, wantSummary)
	}
}

// checkTimeline checks the timeline: positions increase, every message
// once, no compaction in progress, acknowledged outcomes recorded.
func (r *crashRound) checkTimeline() {
	m, tl := r.m, r.tl
	mi := 0
	r.records = map[string]history.CompactionRecord{}
	r.undos = map[string]history.UncompactionRecord{}
	for i, e := range tl {
		if i > 0 && e.Position <= tl[i-1].Position {
			r.violate("timeline position %d after %d", e.Position, tl[i-1].Position)
		}
		switch {
		case e.Message != nil:
			if mi >= len(r.all) || e.Message.ID != r.all[mi].ID || e.Archived != (mi < r.archived) {
				r.violate("timeline message %s (archived %v) at index %d", e.Message.ID, e.Archived, mi)
			}
			mi++
		case e.Compaction != nil:
			c := *e.Compaction
			r.records[c.CompactID] = c
			if !c.Status.Terminal() {
				r.violate("compaction %s is %s after Recover", c.CompactID, c.Status)
			}
		case e.Uncompaction != nil:
			r.undos[e.Uncompaction.ID] = *e.Uncompaction
		}
	}
	for cid, uid := range m.undone {
		if u, ok := r.undos[uid]; !ok || u.CompactID != cid {
			r.violate("acknowledged uncompaction %s of %s is not in the timeline (%+v)", uid, cid, u)
		}
	}
	if mi != len(r.all) {
		r.violate("timeline has %d messages, segments and Active %d", mi, len(r.all))
	}
	for cid := range r.begun {
		if _, ok := r.records[cid]; !ok {
			r.violate("acknowledged compaction %s is not in the timeline", cid)
		}
	}
	for cid, c := range r.records {
		switch {
		case m.committed[cid] && c.Status != history.StatusCompleted:
			r.violate("committed compaction %s is %s", cid, c.Status)
		case m.failed[cid] && (c.Status != history.StatusFailed || c.Error != "model failed"):
			r.violate("finished compaction %s is %s %q", cid, c.Status, c.Error)
		case !m.committed[cid] && c.Status == history.StatusCompleted:
			r.violate("compaction %s completed without a commit", cid)
		}
	}
}

// checkInFlight counts the write in flight at the kill as stored or lost;
// with fenced it must be lost.
func (r *crashRound) checkInFlight(fenced bool) {
	pending := r.pending
	if pending == nil {
		if fenced {
			r.violate("the child reported a fenced write but had none in flight")
		}
		return
	}
	stored := false
	switch pending.Kind {
	case "append":
		stored = len(r.all) > r.ackedTotal
	case "begin":
		_, stored = r.records[pending.CID]
	case "commit":
		stored = r.records[pending.CID].Status == history.StatusCompleted
	case "finish":
		stored = r.records[pending.CID].Error == "model failed"
	case "uncompact":
		_, inTimeline := r.undos[pending.UID]
		if inTimeline != r.undoneStored {
			r.violate("uncompaction %s: in the timeline %v, segment undone %v", pending.UID, inTimeline, r.undoneStored)
		}
		stored = r.undoneStored
	}
	switch {
	case stored && fenced:
		r.violate("the fenced %s was stored", pending.Kind)
	case stored:
		r.m.InFlightStored[pending.Kind]++
	default:
		r.m.InFlightLost[pending.Kind]++
	}
}
