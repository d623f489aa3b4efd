package historytest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// forkState is what the reads of a store say of a session's history, as a
// fork must read it back: the state a fork made at a point has to equal
// the source's state captured at that point.
type forkState struct {
	active   []history.Message
	summary  string
	archived int64
	next     int64
	segments []string // ID, undo and message IDs of each Segment
	segMsgs  [][]history.Message
	timeline []string
	hits     map[string][]string // word -> hit IDs with their Segment and compaction number
	windows  map[string][]string // message -> window IDs with their Segment
}

// forkWords are searched in every captured state: words of every message
// of forkSource, and words only its later messages hold.
var forkWords = []string{"alpha", "bravo", "charlie", "later", "text"}

// captureFork reads session id of s through every read.
func captureFork(t *testing.T, s history.Store, id string) forkState {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Load(ctx, id)
	require.NoError(t, err)
	st := forkState{active: snap.Active, summary: snap.Summary, archived: snap.Archived, next: snap.NextPosition,
		hits: map[string][]string{}, windows: map[string][]string{}}
	segs, err := s.Segments(ctx, id)
	require.NoError(t, err)
	heads, err := s.SegmentHeaders(ctx, id)
	require.NoError(t, err)
	require.Len(t, heads, len(segs))
	for i, g := range segs {
		st.segments = append(st.segments, fmt.Sprintf("%s %s undo=%q summary=%q pos=%d %v", g.ID, g.CompactID, g.UndoID, g.Summary, g.Position, ids(g.Messages)))
		st.segMsgs = append(st.segMsgs, g.Messages)
		assert.Equal(t, g.ID, heads[i].ID)
		assert.Equal(t, g.UndoID, heads[i].UndoID)
	}
	tl, err := s.Timeline(ctx, id)
	require.NoError(t, err)
	st.timeline = entryKeys(tl)
	for i, e := range tl {
		if e.Compaction != nil {
			st.timeline[i] += " " + string(e.Compaction.Status)
		}
	}
	part, err := s.Entries(ctx, id, history.EntryQuery{From: 1, To: max(2, snap.NextPosition-1)})
	require.NoError(t, err)
	want := []string{}
	for _, e := range tl {
		if e.Position >= 1 && e.Position < max(2, snap.NextPosition-1) {
			want = append(want, entryKeys([]history.Entry{e})...)
		}
	}
	assert.Equal(t, want, entryKeys(part), "Entries of a range")
	for _, w := range forkWords {
		p := search(t, s, id, w, history.MaxSearchLimit)
		for _, h := range p.Hits {
			st.hits[w] = append(st.hits[w], fmt.Sprintf("%s %s %d %d", h.MessageID, h.SegmentID, h.Compaction, h.Position))
		}
	}
	for _, e := range tl {
		if e.Message == nil {
			continue
		}
		win, err := s.Window(ctx, id, history.WindowQuery{Around: e.Message.ID, Before: 2, After: 2})
		require.NoError(t, err)
		for _, m := range win {
			st.windows[e.Message.ID] = append(st.windows[e.Message.ID], fmt.Sprintf("%s %s %d", m.Message.ID, m.SegmentID, m.Compaction))
		}
	}
	return st
}

// sameForkState asserts that a fork reads as the source read when captured.
func sameForkState(t *testing.T, want, got forkState) {
	t.Helper()
	EqualMessages(t, want.active, got.active)
	assert.Equal(t, want.summary, got.summary, "summary")
	assert.Equal(t, want.archived, got.archived, "archived")
	assert.Equal(t, want.next, got.next, "next position")
	assert.Equal(t, want.segments, got.segments, "segments")
	for i := range min(len(want.segMsgs), len(got.segMsgs)) {
		EqualMessages(t, want.segMsgs[i], got.segMsgs[i])
	}
	assert.Equal(t, want.timeline, got.timeline, "timeline")
	assert.Equal(t, want.hits, got.hits, "search")
	assert.Equal(t, want.windows, got.windows, "windows")
}

// forkMsg is message i of a fork case, holding the word w.
func forkMsg(id string, i int, w string) history.Message {
	return text(id, i, fmt.Sprintf("%s text %d", w, i))
}

// fork forks session from at message at as id, failing the test on error.
func fork(t *testing.T, s history.Store, id, from, at string) *history.Snapshot {
	t.Helper()
	snap, err := s.Fork(context.Background(), history.ForkSpec{ID: id, From: from, At: at})
	require.NoError(t, err, "fork %s of %s at %q", id, from, at)
	return snap
}

// testForkState: a fork made at a message reads exactly as its source read
// just after that message was committed (Active, summary, Segments with
// their undo state, timeline, search hits and windows), whatever the
// source did after: more messages, compactions that archived the fork
// point, an undo of a Segment the fork keeps. Cases: at an Active message,
// at a message archived later, after an undo, at the newest entry.
func testForkState(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "src")
	capture := map[string]forkState{}
	at := func(m string) { capture[m] = captureFork(t, s, "src") }

	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m0", 0, "alpha"), forkMsg("m1", 1, "alpha"), forkMsg("m2", 2, "bravo")})
	at("m2") // no compaction yet; m2 is archived later
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m3", 3, "bravo"), forkMsg("m4", 4, "charlie")})
	v, _ = compact(t, s, "src", v, "c1", 2, "S1")
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m5", 5, "charlie")})
	at("m5") // c1 stands, m5 Active
	v, _ = compact(t, s, "src", v, "c2", 2, "S2")
	v, _, err := s.Uncompact(ctx, "src", v, history.Uncompaction{ID: "u1", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m6", 6, "alpha")})
	at("m6") // c2 undone, c1 stands
	v, _, err = s.Uncompact(ctx, "src", v, history.Uncompaction{ID: "u2", At: t0.Add(2 * time.Hour)})
	require.NoError(t, err)
	v, _ = compact(t, s, "src", v, "c3", 5, "S3")
	v, _, err = s.RecordConfig(ctx, "src", v, history.ConfigChange{Config: json.RawMessage(`{"k":2}`), Data: json.RawMessage(`{"changed":["k"]}`), At: t0})
	require.NoError(t, err)
	newest := captureFork(t, s, "src")
	snap := fork(t, s, "f-newest", "src", "")
	assert.Equal(t, "m6", snap.ForkAt)
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m7", 7, "later alpha"), forkMsg("m8", 8, "later bravo")})
	v, _ = compact(t, s, "src", v, "c4", 2, "S4")
	_ = v

	for _, m := range []string{"m2", "m5", "m6"} {
		snap := fork(t, s, "f-"+m, "src", m)
		assert.Equal(t, "src", snap.ForkOf)
		assert.Equal(t, m, snap.ForkAt)
		assert.Equal(t, capture[m].next-1, snap.ForkPosition)
		assert.Nil(t, snap.Active, "Fork reads no Active message")
		assert.Equal(t, capture[m].summary, snap.Summary)
	}
	s = h.reopen(t, s)
	for _, m := range []string{"m2", "m5", "m6"} {
		t.Run("at "+m, func(t *testing.T) { sameForkState(t, capture[m], captureFork(t, s, "f-"+m)) })
	}
	t.Run("newest", func(t *testing.T) { sameForkState(t, newest, captureFork(t, s, "f-newest")) })
	snap, err = s.Load(ctx, "f-newest")
	require.NoError(t, err)
	assert.JSONEq(t, `{"k":2}`, string(snap.Config), "a fork takes the source's configuration as it stands")
	assert.Equal(t, "src", snap.ForkOf)
	assert.Zero(t, snap.LastSeq, "a fork's event log is its own")
	ev, err := s.Events(ctx, "f-newest", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, ev)
	u, err := s.Usage(ctx, "f-newest")
	require.NoError(t, err)
	assert.Empty(t, u, "a fork's usage ledger is its own and starts empty")
	tot, err := s.UsageTotals(ctx, "f-newest")
	require.NoError(t, err)
	assert.Empty(t, tot, "a fork's usage totals are its own and start empty")
}

// testForkWrites: a fork and its source are written independently: a
// fork's messages, compactions and undos (of a Segment it inherited
// included) never show in the source, nor the source's later writes in
// the fork; forks of forks, to depth 4, each read as their parent did
// at the fork point.
func testForkWrites(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := fourAndCompaction(t, s)
	srcBefore := captureFork(t, s, "src")
	snap := fork(t, s, "f1", "src", "")
	assert.Equal(t, "m3", snap.ForkAt)
	fv := snap.Version
	// Undo in the fork of a Segment it inherited.
	fv, rec, err := s.Uncompact(ctx, "f1", fv, history.Uncompaction{ID: "fu1", At: t0})
	require.NoError(t, err)
	assert.Equal(t, "seg-c1", rec.SegmentID)
	assert.Equal(t, 2, rec.Restored)
	fv = appendMsgs(t, s, "f1", fv, []history.Message{forkMsg("f1-0", 10, "later"), forkMsg("f1-1", 11, "later")})
	fv, _ = compact(t, s, "f1", fv, "fc1", 5, "F1")
	sameForkState(t, srcBefore, captureFork(t, s, "src"))
	// The source goes on; the fork does not see it.
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m4", 4, "later charlie")})
	v, _ = compact(t, s, "src", v, "c2", 2, "S2")
	_ = v
	f1 := captureFork(t, s, "f1")
	assert.Equal(t, []string{"m0 archived", "m1 archived", "m2 archived", "m3 archived", "compaction c1 completed S1 completed",
		"uncompaction fu1 seg-c1 2", "f1-0 archived", "f1-1", "compaction fc1 completed F1 completed"}, f1.timeline)
	assert.Equal(t, "F1", f1.summary)
	assert.Equal(t, int64(5), f1.archived)
	EqualMessages(t, []history.Message{forkMsg("f1-1", 11, "later")}, f1.active)
	assert.Len(t, f1.segments, 2)
	for _, hs := range f1.hits {
		for _, h := range hs {
			assert.NotContains(t, h, "m4", "a fork never finds a message its source got later")
		}
	}
	_, err = s.Window(ctx, "f1", history.WindowQuery{Around: "m4"})
	assert.ErrorIs(t, err, history.ErrUnknownMessage)
	// Windows across the fork point read both sides.
	for _, c := range []struct {
		around        string
		before, after int
		want          []string
	}{
		{"m3", 1, 2, []string{"m2 seg-fc1 2", "m3 seg-fc1 2", "f1-0 seg-fc1 2", "f1-1  0"}},
		{"f1-0", 2, 1, []string{"m2 seg-fc1 2", "m3 seg-fc1 2", "f1-0 seg-fc1 2", "f1-1  0"}},
		{"f1-1", 3, 0, []string{"m2 seg-fc1 2", "m3 seg-fc1 2", "f1-0 seg-fc1 2", "f1-1  0"}},
	} {
		win, err := s.Window(ctx, "f1", history.WindowQuery{Around: c.around, Before: c.before, After: c.after})
		require.NoError(t, err)
		var got []string
		for _, m := range win {
			got = append(got, fmt.Sprintf("%s %s %d", m.Message.ID, m.SegmentID, m.Compaction))
		}
		assert.Equal(t, c.want, got, "window around %s", c.around)
	}

	// Depth: f2 of f1, f3 of f2, f4 of f3, each at its parent's newest
	// message (f2 before fc1's record: fc1 is no compaction of f2).
	parent, msg := "f1", "f1-1"
	for d := 2; d <= 4; d++ {
		id := fmt.Sprintf("f%d", d)
		want := captureFork(t, s, parent)
		snap := fork(t, s, id, parent, msg)
		assert.Equal(t, parent, snap.ForkOf)
		msg = fmt.Sprintf("f%d-0", d)
		v := appendMsgs(t, s, id, snap.Version, []history.Message{forkMsg(msg, 20+d, "bravo")})
		_ = v
		// The parent reads as before.
		sameForkState(t, want, captureFork(t, s, parent))
		parent = id
	}
	s = h.reopen(t, s)
	f4 := captureFork(t, s, "f4")
	ids := ids(f4.active)
	assert.Equal(t, []string{"m0", "m1", "m2", "m3", "f1-0", "f1-1", "f2-0", "f3-0", "f4-0"}, ids)
	assert.Equal(t, []string{"seg-c1 c1 undo=\"fu1\" summary=\"S1\" pos=4 [m0 m1]"}, f4.segments)
	assert.Len(t, f4.hits["bravo"], 4, "m1 (archived) and the three forks' messages: %v", f4.hits["bravo"])
	fs, err := s.Load(ctx, "f4")
	require.NoError(t, err)
	assert.Equal(t, "f3", fs.ForkOf)
	assert.Equal(t, "f3-0", fs.ForkAt)
}

// testForkInvalid: each bad fork fails with its error and writes nothing.
func testForkInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "src", Msgs("m", 4))
	other := create(t, s, "other")
	appendMsgs(t, s, "other", other, []history.Message{Msg("o-0", 0)})
	create(t, s, "taken")
	before := captureFork(t, s, "src")
	list := func() int {
		p, err := s.ListSessions(ctx, history.ListOptions{Limit: history.MaxListLimit})
		require.NoError(t, err)
		return len(p.Sessions)
	}
	n := list()
	for _, c := range []struct {
		name string
		spec history.ForkSpec
		is   []error
	}{
		{"no ID", history.ForkSpec{From: "src"}, []error{history.ErrInvalid}},
		{"no From", history.ForkSpec{ID: "f"}, []error{history.ErrInvalid}},
		{"ID is From", history.ForkSpec{ID: "src", From: "src"}, []error{history.ErrInvalid}},
		{"bad config", history.ForkSpec{ID: "f", From: "src", Config: json.RawMessage(`{`)}, []error{history.ErrInvalid}},
		{"unknown source", history.ForkSpec{ID: "f", From: "nobody"}, []error{history.ErrNotFound}},
		{"unknown message", history.ForkSpec{ID: "f", From: "src", At: "nope"}, []error{history.ErrInvalid, history.ErrUnknownMessage}},
		{"message of another session", history.ForkSpec{ID: "f", From: "src", At: "o-0"}, []error{history.ErrInvalid, history.ErrUnknownMessage}},
		{"ID exists", history.ForkSpec{ID: "taken", From: "src"}, []error{history.ErrExists}},
	} {
		_, err := s.Fork(ctx, c.spec)
		for _, want := range c.is {
			assert.ErrorIs(t, err, want, c.name)
		}
	}
	// A compaction in progress: a fork at or after its record is inside it.
	v, err := s.BeginCompaction(ctx, "src", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v = appendMsgs(t, s, "src", v, []history.Message{Msg("m-4", 4), Msg("m-5", 5)})
	for _, at := range []string{"", "m-4"} {
		_, err = s.Fork(ctx, history.ForkSpec{ID: "f", From: "src", At: at})
		assert.ErrorIs(t, err, history.ErrInvalid, "at %q", at)
		assert.ErrorIs(t, err, history.ErrForkInCompaction, "at %q", at)
	}
	// Before the record it is no compaction of the fork.
	fork(t, s, "f", "src", "m-3")
	got, err := s.Load(ctx, "f")
	require.NoError(t, err)
	EqualMessages(t, before.active, got.Active)
	// A commit that archived a message after the fork point.
	v, _, err = s.CommitCompaction(ctx, "src", v, history.Commit{CompactID: "c1", SegmentID: "seg-c1", Archive: 6, Summary: "S", At: t0})
	require.NoError(t, err)
	_ = v
	_, err = s.Fork(ctx, history.ForkSpec{ID: "g", From: "src", At: "m-4"})
	assert.ErrorIs(t, err, history.ErrForkInCompaction)
	assert.Equal(t, n+1, list(), "only the good fork was written")
	_, err = s.Load(ctx, "g")
	assert.ErrorIs(t, err, history.ErrNotFound)
}

// testForkListDelete: listings name a fork's source and fork point;
// deleting the source leaves its forks whole, deleting a fork leaves its
// source whole, and a deleted ID can be created again.
func testForkListDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "src", Msgs("m", 4))
	v, _ = compact(t, s, "src", v, "c1", 2, "S1")
	_ = v
	fork(t, s, "f1", "src", "m-3")
	fork(t, s, "f2", "f1", "")
	p, err := s.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	forks := map[string][2]string{}
	for _, i := range p.Sessions {
		forks[i.ID] = [2]string{i.ForkOf, i.ForkAt}
		assert.Equal(t, 4, i.Messages, i.ID)
	}
	assert.Equal(t, map[string][2]string{"src": {}, "f1": {"src", "m-3"}, "f2": {"f1", "m-3"}}, forks)
	f2 := captureFork(t, s, "f2")
	src := captureFork(t, s, "src")
	require.NoError(t, s.Delete(ctx, "f1"))
	goneFrom(t, s, "f1")
	sameForkState(t, f2, captureFork(t, s, "f2"))
	require.NoError(t, s.Delete(ctx, "src"))
	goneFrom(t, s, "src")
	sameForkState(t, f2, captureFork(t, s, "f2"))
	require.NoError(t, s.Delete(ctx, "f2"))
	goneFrom(t, s, "f2")
	create(t, s, "src")
	_ = src
}

// testForkToolResult: a tool result a fork appends answers a call its
// source made before the fork point: search and window name its tool.
func testForkToolResult(t *testing.T, h Harness) {
	ctx := context.Background()
	s, _ := h.seeded(t, "src", []history.Message{
		text("u0", 0, "Read the ledger."),
		{ID: "a1", Role: history.RoleAssistant, Text: "Reading.", ToolCalls: []history.ToolCall{{ID: "call1", Name: "read_file", Arguments: json.RawMessage(`{"path":"ledger.go"}`)}}, CreatedAt: t0},
	})
	snap := fork(t, s, "f", "src", "a1")
	appendMsgs(t, s, "f", snap.Version, []history.Message{{ID: "t2", Role: history.RoleTool, ToolCallID: "call1", Text: "package ledger", CreatedAt: t0}})
	hit := hitOf(t, search(t, s, "f", "package", 10), "t2")
	assert.Equal(t, "read_file", hit.ToolName)
	win, err := s.Window(ctx, "f", history.WindowQuery{Around: "t2"})
	require.NoError(t, err)
	require.Len(t, win, 1)
	assert.Equal(t, "read_file", win[0].ToolName)
}

// testListForkOf: ListOptions.ForkOf lists the direct forks of one session
// only, in listing order and pages, with Cwd too.
func testListForkOf(t *testing.T, h Harness) {
	ctx := context.Background()
	s, _ := h.seeded(t, "src", Msgs("m", 2))
	create(t, s, "other")
	for _, f := range []struct{ id, from, cwd string }{
		{"f1", "src", "/a"}, {"f2", "src", "/b"}, {"f3", "f1", "/a"}, {"f4", "src", "/a"},
	} {
		_, err := s.Fork(ctx, history.ForkSpec{ID: f.id, From: f.from, Cwd: f.cwd})
		require.NoError(t, err, f.id)
	}
	all := listAll(t, s, history.ListOptions{}, nil)
	var want []string // the forks of src in listing order
	for _, id := range all {
		if id == "f1" || id == "f2" || id == "f4" {
			want = append(want, id)
		}
	}
	assert.Equal(t, want, listAll(t, s, history.ListOptions{ForkOf: "src", Limit: 1}, nil), "src's forks, a page each")
	assert.Equal(t, want, listAll(t, s, history.ListOptions{ForkOf: "src"}, nil))
	assert.Equal(t, []string{"f3"}, listAll(t, s, history.ListOptions{ForkOf: "f1"}, nil), "a fork's forks are not its source's")
	got := listAll(t, s, history.ListOptions{ForkOf: "src", Cwd: "/a"}, nil)
	slices.Sort(got)
	assert.Equal(t, []string{"f1", "f4"}, got)
	for _, id := range []string{"other", "f3", "nobody"} {
		assert.Empty(t, listAll(t, s, history.ListOptions{ForkOf: id}, nil), id)
	}
	p, err := s.ListSessions(ctx, history.ListOptions{ForkOf: "src", Limit: 1})
	require.NoError(t, err)
	require.Len(t, p.Sessions, 1)
	assert.Equal(t, "src", p.Sessions[0].ForkOf)
}

// testForkDeep: a fork of a fork, to depth 5, each made at a message of
// its parent that a later compaction of the parent archived, reads as its
// parent read at that point (its compactions before it included, those
// after it not), also after it was written as a parent in turn and the
// store was reopened.
func testForkDeep(t *testing.T, h Harness) {
	s := h.New(t)
	parent, v := "src", create(t, s, "src")
	want := map[string]forkState{}
	for d := 1; d <= 5; d++ {
		msg := func(k int, w string) history.Message {
			return forkMsg(fmt.Sprintf("d%d-%d", d, k), 10*d+k, w)
		}
		v = appendMsgs(t, s, parent, v, []history.Message{msg(0, "alpha"), msg(1, "bravo"), msg(2, "charlie")})
		v, _ = compact(t, s, parent, v, fmt.Sprintf("c%d", d), 2, fmt.Sprintf("S%d", d))
		v = appendMsgs(t, s, parent, v, []history.Message{msg(3, "alpha")})
		at := captureFork(t, s, parent)
		// The parent goes on: a message and a compaction that archives the
		// fork point, neither the fork's.
		v = appendMsgs(t, s, parent, v, []history.Message{msg(4, "later")})
		v, _ = compact(t, s, parent, v, fmt.Sprintf("c%d-later", d), 3, "later")
		_ = v
		id := fmt.Sprintf("f%d", d)
		snap := fork(t, s, id, parent, fmt.Sprintf("d%d-3", d))
		sameForkState(t, at, captureFork(t, s, id))
		want[id] = at
		parent, v = id, snap.Version
	}
	// Each fork but the deepest was written as a parent since: each reads
	// as it did before the reopen, the deepest as its parent at the point.
	for d := 1; d < 5; d++ {
		id := fmt.Sprintf("f%d", d)
		want[id] = captureFork(t, s, id)
	}
	s = h.reopen(t, s)
	for d := 1; d <= 5; d++ {
		id := fmt.Sprintf("f%d", d)
		t.Run(id, func(t *testing.T) { sameForkState(t, want[id], captureFork(t, s, id)) })
	}
}

// testForkDeleteRecreate: the ID of a deleted source that forks read may
// be created again at once; the new session and the fork never see each
// other's messages, and deleting either, or the fork's own fork's parent,
// leaves the others whole.
func testForkDeleteRecreate(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := fourAndCompaction(t, s)
	_ = v
	snap := fork(t, s, "f", "src", "m2")
	appendMsgs(t, s, "f", snap.Version, []history.Message{forkMsg("f0", 4, "bravo")})
	f := captureFork(t, s, "f")
	require.NoError(t, s.Delete(ctx, "src"))
	goneFrom(t, s, "src")
	sameForkState(t, f, captureFork(t, s, "f"))
	v = create(t, s, "src")
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m0", 0, "later alpha")})
	_ = v
	sameForkState(t, f, captureFork(t, s, "f"))
	assert.Len(t, search(t, s, "src", "alpha", 10).Hits, 1, "the new src holds its own message only")
	fork(t, s, "g", "f", "f0")
	g := captureFork(t, s, "g")
	require.NoError(t, s.Delete(ctx, "f"))
	sameForkState(t, g, captureFork(t, s, "g"))
	require.NoError(t, s.Delete(ctx, "src"))
	sameForkState(t, g, captureFork(t, s, "g"))
	require.NoError(t, s.Delete(ctx, "g"))
	goneFrom(t, s, "g")
	assert.Empty(t, listAll(t, s, history.ListOptions{}, nil))
}

// fourAndCompaction creates session src with messages m0 to m3 and a
// compaction c1 of the first two, and returns its version.
func fourAndCompaction(t *testing.T, s history.Store) uint64 {
	t.Helper()
	v := create(t, s, "src")
	v = appendMsgs(t, s, "src", v, []history.Message{forkMsg("m0", 0, "alpha"), forkMsg("m1", 1, "bravo"), forkMsg("m2", 2, "charlie"), forkMsg("m3", 3, "alpha")})
	v, _ = compact(t, s, "src", v, "c1", 2, "S1")
	return v
}

// testForkDeleteSiblings: a deleted source that two forks read stays
// while either does: deleting one leaves the other whole, deleting the
// other too leaves nothing listed, and the source's ID free.
func testForkDeleteSiblings(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	fourAndCompaction(t, s)
	fork(t, s, "f1", "src", "m2")
	fork(t, s, "f2", "src", "m3")
	f2 := captureFork(t, s, "f2")
	require.NoError(t, s.Delete(ctx, "src"))
	require.NoError(t, s.Delete(ctx, "f1"))
	goneFrom(t, s, "f1")
	sameForkState(t, f2, captureFork(t, s, "f2"))
	require.NoError(t, s.Delete(ctx, "f2"))
	goneFrom(t, s, "f2")
	assert.Empty(t, listAll(t, s, history.ListOptions{}, nil))
	create(t, s, "src")
}

// testForkSettings: a fork takes the configuration, title and working
// directory its spec gives, and its source's for each it leaves empty, in
// its snapshot, its Load and its listing.
func testForkSettings(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	snap, err := s.Create(ctx, history.NewSession{ID: "src", Config: json.RawMessage(`{"k":1}`), Title: "Source", Cwd: "/src"})
	require.NoError(t, err)
	appendMsgs(t, s, "src", snap.Version, Msgs("m", 2))
	for _, tc := range []struct {
		spec               history.ForkSpec
		config, title, cwd string
	}{
		{history.ForkSpec{ID: "same", From: "src"}, `{"k":1}`, "Source", "/src"},
		{history.ForkSpec{ID: "own", From: "src", Config: json.RawMessage(`{"k":9}`), Title: "Fork", Cwd: "/fork"}, `{"k":9}`, "Fork", "/fork"},
	} {
		got, err := s.Fork(ctx, tc.spec)
		require.NoError(t, err, tc.spec.ID)
		loaded, err := s.Load(ctx, tc.spec.ID)
		require.NoError(t, err, tc.spec.ID)
		for _, snap := range []*history.Snapshot{got, loaded} {
			assert.JSONEq(t, tc.config, string(snap.Config), tc.spec.ID)
			assert.Equal(t, tc.title, snap.Title, tc.spec.ID)
			assert.Equal(t, tc.cwd, snap.Cwd, tc.spec.ID)
		}
		page, err := s.ListSessions(ctx, history.ListOptions{ForkOf: "src", Cwd: tc.cwd})
		require.NoError(t, err, tc.spec.ID)
		require.Len(t, page.Sessions, 1, tc.spec.ID)
		assert.Equal(t, tc.title, page.Sessions[0].Title, tc.spec.ID)
	}
}
