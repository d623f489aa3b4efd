// Package historytest is the conformance suite every [history.Store] runs.
//
// A store package calls [Run] once from its own tests with a [Harness] that
// makes fresh stores (and reopens them, for durable stores); a store with
// leases sets [Harness.Leases] as well, the one option for what is truly
// optional:
//
//	func TestConformance(t *testing.T) {
//		historytest.Run(t, historytest.Harness{
//			New: func(t *testing.T) history.Store { return memstore.New() },
//		})
//	}
//
// The suite checks the whole contract documented on [history.Store]:
// optimistic concurrency, atomic compaction commits that leave no trace
// when they fail, identical state after reopening, two stores on the same
// data (where the store can share it), independent concurrent sessions,
// loads that each see one committed state while compactions commit, the
// timeline order that replay relies on, search (ranking, stemming, paging,
// tool results, archived and Active messages, isolation between sessions,
// any query text), window reads around a message, the fidelity a Segment
// keeps, configuration changes recorded in the timeline, undo, the event
// log with its reservations of sequence numbers, the usage ledger, listing
// and deletion (every part of a session goes, nothing of another); with
// [Harness.Leases], the lease cases of [history.Leaser] too.
package historytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// Harness makes stores for the suite.
type Harness struct {
	// New returns a fresh, empty store. The harness owns closing it (for
	// example with t.Cleanup).
	New func(t *testing.T) history.Store
	// Reopen closes s and opens the same data again. Nil for stores that
	// keep nothing beyond the process; the suite then uses s itself.
	Reopen func(t *testing.T, s history.Store) history.Store
	// Share opens a second store on the same data as s, as another
	// process would; the harness owns closing it. Nil for stores whose
	// data only one store can use; the suite then skips the case
	// SharedData.
	Share func(t *testing.T, s history.Store) history.Store
	// Leases is set for a store with leases ([history.Leaser]), the one
	// optional part of the contract: the suite then runs the lease cases
	// too, on stores Leases opens. Nil for a store without leases.
	Leases *LeaseHarness
}

func (h Harness) reopen(t *testing.T, s history.Store) history.Store {
	if h.Reopen == nil {
		return s
	}
	return h.Reopen(t, s)
}

// Run runs the conformance suite: every case of [history.Store] and, when
// h.Leases is set, every case of [history.Leaser] (named Lease/...).
func Run(t *testing.T, h Harness) {
	runCases(t, h, []testCase[Harness]{
		{"CreateLoad", testCreateLoad},
		{"MessageFidelity", testMessageFidelity},
		{"Attachments", testAttachments},
		{"Files", testFiles},
		{"Thoughts", testThoughts},
		{"InvalidWrites", testInvalidWrites},
		{"VersionConflict", testVersionConflict},
		{"Config", testConfig},
		{"CompactionCommit", testCompactionCommit},
		{"FailedCommitLeavesNoTrace", testFailedCommitLeavesNoTrace},
		{"FinishAndRecover", testFinishAndRecover},
		{"ConsecutiveCompactions", testConsecutiveCompactions},
		{"CommitRangeAcrossRecords", testCommitRangeAcrossRecords},
		{"ReopenIdentical", testReopenIdentical},
		{"ConcurrentSessions", testConcurrentSessions},
		{"RacingWriters", testRacingWriters},
		{"ConsistentReads", testConsistentReads},
		{"SharedData", testSharedData},
		{"TimelineOrder", testTimelineOrder},
		{"Entries", testEntries},
		{"EntriesInvalid", testEntriesInvalid},
		{"SegmentHeaders", testSegmentHeaders},
		{"CancelledContext", testCancelledContext},
		{"CommitRecordsControls", testCommitRecordsControls},
		{"Uncompact", testUncompact},
		{"ConfigRecords", testConfigRecords},
		{"ConfigRecordsInvalid", testConfigRecordsInvalid},
		{"ListOrder", testListOrder},
		{"ListPages", testListPages},
		{"ListCwd", testListCwd},
		{"ListInvalid", testListInvalid},
		{"EventLog", testEventLog},
		{"EventLogInvalid", testEventLogInvalid},
		{"EventLogCovers", testEventLogCovers},
		{"SeqReserve", testSeqReserve},
		{"SearchRanking", testSearchRanking},
		{"SearchToolResults", testSearchToolResults},
		{"SearchAttachments", testSearchAttachments},
		{"SearchArchived", testSearchArchived},
		{"SearchSessions", testSearchSessions},
		{"SearchPages", testSearchPages},
		{"SearchAnyText", testSearchAnyText},
		{"SearchInvalid", testSearchInvalid},
		{"SearchNeighbors", testSearchNeighbors},
		{"SearchConversation", testSearchConversation},
		{"SearchSameAsMemstore", testSearchSameAsMemstore},
		{"Window", testWindow},
		{"WindowPlaces", testWindowPlaces},
		{"WindowInvalid", testWindowInvalid},
		{"SegmentFidelity", testSegmentFidelity},
		{"UsageLedger", testUsageLedger},
		{"UsageInvalid", testUsageInvalid},
		{"UsageTotals", testUsageTotals},
		{"LastUsage", testLastUsage},
		{"Delete", testDelete},
		{"DeleteMissing", testDeleteMissing},
		{"ForkState", testForkState},
		{"ForkWrites", testForkWrites},
		{"ForkInvalid", testForkInvalid},
		{"ForkListDelete", testForkListDelete},
		{"ForkToolResult", testForkToolResult},
		{"ListForkOf", testListForkOf},
		{"ForkDeep", testForkDeep},
		{"ForkDeleteRecreate", testForkDeleteRecreate},
		{"ForkDeleteSiblings", testForkDeleteSiblings},
		{"ForkSettings", testForkSettings},
		{"Vectors", testVectors},
		{"VectorsInvalid", testVectorsInvalid},
		{"VectorsFork", testVectorsFork},
	})
	if h.Leases != nil {
		t.Run("Lease", func(t *testing.T) { runLeaser(t, *h.Leases) })
	}
}

// testCase is one named conformance case of a harness H.
type testCase[H any] struct {
	name string
	fn   func(t *testing.T, h H)
}

// runCases runs each case as a subtest of t, in order, with h.
func runCases[H any](t *testing.T, h H, cases []testCase[H]) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)

// Msg returns a message for tests: user for even i, assistant for odd i.
func Msg(id string, i int) history.Message {
	role := history.RoleUser
	if i%2 == 1 {
		role = history.RoleAssistant
	}
	return history.Message{ID: id, Role: role, Text: fmt.Sprintf("%s text %d", role, i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}
}

// Msgs returns n messages with IDs prefix-0 … prefix-(n-1).
func Msgs(prefix string, n int) []history.Message {
	out := make([]history.Message, n)
	for i := range out {
		out[i] = Msg(fmt.Sprintf("%s-%d", prefix, i), i)
	}
	return out
}

// seeded is a new store of h that holds session id with msgs appended, and
// the session's version.
func (h Harness) seeded(t *testing.T, id string, msgs []history.Message) (history.Store, uint64) {
	t.Helper()
	s := h.New(t)
	return s, appendMsgs(t, s, id, create(t, s, id), msgs)
}

// compactedTwice is a new store of h that holds session id with two
// Segments, and the session's version: msgs[:split] appended and their
// first a compacted (c1, summary S1), then the rest appended and the first
// b Active messages compacted (c2, summary S2).
func (h Harness) compactedTwice(t *testing.T, id string, msgs []history.Message, split, a, b int) (history.Store, uint64) {
	t.Helper()
	s, v := h.seeded(t, id, msgs[:split])
	v, _ = compact(t, s, id, v, "c1", a, "S1")
	v = appendMsgs(t, s, id, v, msgs[split:])
	v, _ = compact(t, s, id, v, "c2", b, "S2")
	return s, v
}

func create(t *testing.T, s history.Store, id string) uint64 {
	t.Helper()
	snap, err := s.Create(context.Background(), history.NewSession{ID: id, Config: json.RawMessage(`{"k":1}`)})
	require.NoError(t, err)
	return snap.Version
}

func appendMsgs(t *testing.T, s history.Store, id string, v uint64, msgs []history.Message) uint64 {
	t.Helper()
	nv, err := s.Append(context.Background(), id, v, msgs)
	require.NoError(t, err)
	require.Greater(t, nv, v, "a write must advance the version")
	return nv
}

// compact runs a whole compaction of the first archive Active messages.
func compact(t *testing.T, s history.Store, id string, v uint64, cid string, archive int, summary string) (uint64, *history.Segment) {
	t.Helper()
	ctx := context.Background()
	v, err := s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Instructions: "focus " + cid, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, seg, err := s.CommitCompaction(ctx, id, v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: archive, Summary: summary, InputTokens: 10, OutputTokens: 3, At: t0.Add(time.Minute)})
	require.NoError(t, err)
	return v, seg
}

func ids(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// EqualMessages asserts that two message lists are equal field by field
// (times compared with Equal, so time zones do not matter).
func EqualMessages(t *testing.T, want, got []history.Message) {
	t.Helper()
	require.Equal(t, ids(want), ids(got))
	for i := range want {
		w, g := want[i], got[i]
		assert.True(t, w.CreatedAt.Equal(g.CreatedAt), "message %s CreatedAt: want %v, got %v", w.ID, w.CreatedAt, g.CreatedAt)
		w.CreatedAt, g.CreatedAt = time.Time{}, time.Time{}
		if len(w.ToolCalls) == 0 {
			w.ToolCalls = nil
		}
		if len(g.ToolCalls) == 0 {
			g.ToolCalls = nil
		}
		assert.Equal(t, w, g, "message %d", i)
	}
}

func testCreateLoad(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	snap, err := s.Create(ctx, history.NewSession{ID: "a", Config: json.RawMessage(`{"x":"y"}`)})
	require.NoError(t, err)
	assert.Equal(t, "a", snap.ID)
	assert.Empty(t, snap.Active)
	assert.Empty(t, snap.Summary)
	assert.JSONEq(t, `{"x":"y"}`, string(snap.Config))

	_, err = s.Create(ctx, history.NewSession{ID: "a"})
	assert.ErrorIs(t, err, history.ErrExists)
	_, err = s.Load(ctx, "missing")
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Append(ctx, "missing", 1, Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Segments(ctx, "missing")
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Timeline(ctx, "missing")
	assert.ErrorIs(t, err, history.ErrNotFound)

	loaded, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, snap.Version, loaded.Version)
	assert.Empty(t, loaded.Active)

	// A session without configuration loads with none.
	_, err = s.Create(ctx, history.NewSession{ID: "b"})
	require.NoError(t, err)
	b, err := s.Load(ctx, "b")
	require.NoError(t, err)
	assert.Empty(t, b.Config)
}

func testMessageFidelity(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "f")
	local := time.FixedZone("X", 3600)
	msgs := []history.Message{
		{ID: "u1", Role: history.RoleUser, Text: "héllo \x00 wörld\n\"quoted\"", CreatedAt: t0.In(local)},
		{ID: "a1", Role: history.RoleAssistant, Text: "", ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.go",  "n":[1,2]}`)},
			{ID: "c2", Name: "noargs"},
		}, CreatedAt: t0.Add(time.Nanosecond)},
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c1", Text: strings.Repeat("x", 100000), CreatedAt: t0.Add(2)},
		{ID: "t2", Role: history.RoleTool, ToolCallID: "c2", Text: "", CreatedAt: t0.Add(3)},
		{ID: "s1", Role: history.RoleUser, Text: "also this", Steer: true, CreatedAt: t0.Add(4)},
	}
	appendMsgs(t, s, "f", v, msgs)
	snap, err := s.Load(ctx, "f")
	require.NoError(t, err)
	EqualMessages(t, msgs, snap.Active)
	s = h.reopen(t, s)
	snap, err = s.Load(ctx, "f")
	require.NoError(t, err)
	EqualMessages(t, msgs, snap.Active)
}

func testInvalidWrites(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "i", Msgs("m", 4))
	bad := map[string][]history.Message{
		"empty":             nil,
		"no id":             {{Role: history.RoleUser, Text: "x"}},
		"bad role":          {{ID: "x", Role: "system", Text: "x"}},
		"tool without call": {{ID: "x", Role: history.RoleTool, Text: "x"}},
		"user with calls":   {{ID: "x", Role: history.RoleUser, ToolCalls: []history.ToolCall{{ID: "c", Name: "n"}}}},
		"bad arguments":     {{ID: "x", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{`)}}}},
		"steer assistant":   {{ID: "x", Role: history.RoleAssistant, Steer: true}},
		"second bad":        {Msg("ok", 0), {ID: "", Role: history.RoleUser}},
	}
	for name, msgs := range bad {
		_, err := s.Append(ctx, "i", v, msgs)
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	_, err := s.Create(ctx, history.NewSession{ID: ""})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.Create(ctx, history.NewSession{ID: "j", Config: json.RawMessage(`{nope`)})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.SetConfig(ctx, "i", v, json.RawMessage(`nope`))
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.BeginCompaction(ctx, "i", v, history.CompactionRecord{CompactID: "", Trigger: "manual", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.BeginCompaction(ctx, "i", v, history.CompactionRecord{CompactID: "c", Trigger: "sometimes", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.BeginCompaction(ctx, "i", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusCompleted})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.FinishCompaction(ctx, "i", v, "nope", history.StatusFailed, "x", t0)
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.FinishCompaction(ctx, "i", v, "nope", history.StatusCompleted, "", t0)
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, _, err = s.CommitCompaction(ctx, "i", v, history.Commit{CompactID: "nope", SegmentID: "s", Archive: 1, Summary: "x"})
	assert.ErrorIs(t, err, history.ErrInvalid)

	// Nothing of the above changed the session.
	snap, err := s.Load(ctx, "i")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version)
	assert.Equal(t, ids(Msgs("m", 4)), ids(snap.Active))
	_, err = s.Load(ctx, "j")
	assert.ErrorIs(t, err, history.ErrNotFound)
	tl, err := s.Timeline(ctx, "i")
	require.NoError(t, err)
	assert.Len(t, tl, 4)
}

func testVersionConflict(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v0 := create(t, s, "v")
	v1 := appendMsgs(t, s, "v", v0, Msgs("a", 2))
	_, err := s.Append(ctx, "v", v0, Msgs("b", 1))
	assert.ErrorIs(t, err, history.ErrConflict)
	_, err = s.SetConfig(ctx, "v", v0, json.RawMessage(`{}`))
	assert.ErrorIs(t, err, history.ErrConflict)
	_, err = s.BeginCompaction(ctx, "v", v0, history.CompactionRecord{CompactID: "c", Trigger: "manual", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrConflict)
	_, _, err = s.Recover(ctx, "v", v0+1000, t0)
	assert.ErrorIs(t, err, history.ErrConflict)
	snap, err := s.Load(ctx, "v")
	require.NoError(t, err)
	assert.Equal(t, v1, snap.Version)
	assert.Equal(t, []string{"a-0", "a-1"}, ids(snap.Active))
}

func testConfig(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "c")
	v, err := s.SetConfig(ctx, "c", v, json.RawMessage(`{"system":"be brief"}`))
	require.NoError(t, err)
	s = h.reopen(t, s)
	snap, err := s.Load(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version)
	assert.JSONEq(t, `{"system":"be brief"}`, string(snap.Config))
}

func testCompactionCommit(t *testing.T, h Harness) {
	ctx := context.Background()
	all := Msgs("m", 6)
	s, v := h.seeded(t, "k", all)
	v, seg := compact(t, s, "k", v, "c1", 3, "summary one")
	require.NotNil(t, seg)
	assert.Equal(t, "seg-c1", seg.ID)
	assert.Equal(t, "c1", seg.CompactID)
	assert.Equal(t, history.TriggerManual, seg.Trigger)
	assert.Equal(t, "summary one", seg.Summary)
	assert.Equal(t, "focus c1", seg.Instructions)
	assert.Equal(t, 10, seg.InputTokens)
	assert.Equal(t, 3, seg.OutputTokens)
	assert.True(t, seg.CreatedAt.Equal(t0.Add(time.Minute)))
	assert.True(t, seg.StartedAt.Equal(t0))
	assert.Empty(t, seg.Messages, "the commit reads no archived message")

	snap, err := s.Load(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version)
	assert.Equal(t, "summary one", snap.Summary)
	assert.EqualValues(t, 3, snap.Archived)
	EqualMessages(t, all[3:], snap.Active)
	assert.Empty(t, snap.Interrupted)

	segs, err := s.Segments(ctx, "k")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, seg.ID, segs[0].ID)
	EqualMessages(t, all[:3], segs[0].Messages)

	// The same compaction cannot be begun twice nor committed twice.
	_, err = s.BeginCompaction(ctx, "k", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrExists)
	_, _, err = s.CommitCompaction(ctx, "k", v, history.Commit{CompactID: "c1", SegmentID: "other", Archive: 1, Summary: "again"})
	assert.ErrorIs(t, err, history.ErrInvalid)
}

func testFailedCommitLeavesNoTrace(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "n", Msgs("m", 8))
	v, _ = compact(t, s, "n", v, "c1", 2, "first")
	v, err := s.BeginCompaction(ctx, "n", v, history.CompactionRecord{CompactID: "c2", Trigger: "auto", Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	before := readAll(t, s, "n")

	failing := []history.Commit{
		{CompactID: "c2", SegmentID: "seg-c1", Archive: 2, Summary: "dup segment"}, // fails half-way on the segment
		{CompactID: "c2", SegmentID: "s2", Archive: 7, Summary: "too many"},
		{CompactID: "c2", SegmentID: "s2", Archive: 0, Summary: "none"},
		{CompactID: "c2", SegmentID: "s2", Archive: 2, Summary: " \n\t"},
		{CompactID: "c2", SegmentID: "", Archive: 2, Summary: "no id"},
	}
	for _, c := range failing {
		_, _, err := s.CommitCompaction(ctx, "n", v, c)
		require.Error(t, err, c.Summary)
	}
	_, _, err = s.CommitCompaction(ctx, "n", v-1, history.Commit{CompactID: "c2", SegmentID: "s2", Archive: 2, Summary: "stale"})
	assert.ErrorIs(t, err, history.ErrConflict)

	for pass := range 2 {
		if pass == 1 {
			s = h.reopen(t, s)
		}
		after := readAll(t, s, "n")
		assert.Equal(t, before.snap.Version, after.snap.Version)
		assert.Equal(t, before.snap.Summary, after.snap.Summary)
		assert.Equal(t, before.snap.Archived, after.snap.Archived)
		EqualMessages(t, before.snap.Active, after.snap.Active)
		assert.Equal(t, entryKeys(before.timeline), entryKeys(after.timeline))
		assert.Len(t, after.segments, 1)
	}
	// The compaction can still commit afterwards.
	_, _, err = s.CommitCompaction(ctx, "n", before.snap.Version, history.Commit{CompactID: "c2", SegmentID: "s2", Archive: 2, Summary: "second", At: t0})
	require.NoError(t, err)
	segs, err := s.Segments(ctx, "n")
	require.NoError(t, err)
	require.Len(t, segs, 2)
	assert.Equal(t, []string{"m-2", "m-3"}, ids(segs[1].Messages))
}

func testFinishAndRecover(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "r", Msgs("m", 4))
	var err error
	for _, cid := range []string{"failed", "cancelled", "lost"} {
		v, err = s.BeginCompaction(ctx, "r", v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Status: history.StatusInProgress, StartedAt: t0})
		require.NoError(t, err)
	}
	v, err = s.BeginCompaction(ctx, "r", v, history.CompactionRecord{CompactID: "nothing", Trigger: "auto", Status: history.StatusNothingToCompact, StartedAt: t0})
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, "r", v, "failed", history.StatusFailed, "model said no", t0.Add(time.Second))
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, "r", v, "cancelled", history.StatusCancelled, "cancelled by user", t0.Add(time.Second))
	require.NoError(t, err)
	_, err = s.FinishCompaction(ctx, "r", v, "failed", history.StatusCancelled, "again", t0)
	assert.ErrorIs(t, err, history.ErrInvalid, "a finished compaction cannot finish again")

	s = h.reopen(t, s)
	snap, err := s.Load(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, []string{"lost"}, snap.Interrupted)
	v, recovered, err := s.Recover(ctx, "r", snap.Version, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"lost"}, recovered)
	v2, again, err := s.Recover(ctx, "r", v, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, again)
	assert.Equal(t, v, v2, "a recovery with nothing to do writes nothing")

	snap, err = s.Load(ctx, "r")
	require.NoError(t, err)
	assert.Empty(t, snap.Interrupted)
	assert.Len(t, snap.Active, 4, "no compaction committed")
	tl, err := s.Timeline(ctx, "r")
	require.NoError(t, err)
	got := map[string]history.CompactionRecord{}
	for _, e := range tl {
		if e.Compaction != nil {
			got[e.Compaction.CompactID] = *e.Compaction
		}
	}
	require.Len(t, got, 4)
	assert.Equal(t, history.StatusFailed, got["failed"].Status)
	assert.Equal(t, "model said no", got["failed"].Error)
	assert.Equal(t, history.StatusCancelled, got["cancelled"].Status)
	assert.Equal(t, history.StatusFailed, got["lost"].Status)
	assert.Equal(t, history.InterruptedError, got["lost"].Error)
	assert.True(t, got["lost"].FinishedAt.Equal(t0.Add(time.Hour)))
	assert.Equal(t, history.StatusNothingToCompact, got["nothing"].Status)
	assert.Equal(t, history.TriggerAuto, got["nothing"].Trigger)
	for _, c := range got {
		assert.Empty(t, c.Summary)
		assert.True(t, c.Status.Terminal())
	}
}

func testConsecutiveCompactions(t *testing.T, h Harness) {
	ctx := context.Background()
	all := Msgs("m", 10)
	s, v := h.compactedTwice(t, "cc", all, 6, 3, 4)
	_, _ = compact(t, s, "cc", v, "c3", 1, "S3")

	s = h.reopen(t, s)
	snap, err := s.Load(ctx, "cc")
	require.NoError(t, err)
	assert.Equal(t, "S3", snap.Summary)
	assert.EqualValues(t, 8, snap.Archived)
	EqualMessages(t, all[8:], snap.Active)
	segs, err := s.Segments(ctx, "cc")
	require.NoError(t, err)
	require.Len(t, segs, 3)
	var archived []history.Message
	for i, seg := range segs {
		assert.Equal(t, fmt.Sprintf("c%d", i+1), seg.CompactID)
		EqualMessages(t, all[[]int{0, 3, 7}[i]:[]int{3, 7, 8}[i]], seg.Messages)
		archived = append(archived, seg.Messages...)
	}
	// Active + Segments = everything ever appended, in order.
	EqualMessages(t, all, append(archived, snap.Active...))
}

// testCommitRangeAcrossRecords checks the watermark arithmetic across
// interleaved compaction records: positions are shared by messages and
// records, and a commit's range skips the records inside it.
func testCommitRangeAcrossRecords(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	v := snap.Version
	step := func(vv uint64, err error) {
		t.Helper()
		require.NoError(t, err)
		v = vv
	}
	step(s.Append(ctx, "a", v, Msgs("m", 2)))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "x", Trigger: "auto", Status: history.StatusNothingToCompact}))
	step(s.Append(ctx, "a", v, Msgs("n", 2)))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "p", Trigger: "auto", Status: history.StatusInProgress}))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "q", Trigger: "auto", Status: history.StatusInProgress}))
	step(s.Append(ctx, "a", v, Msgs("o", 1)))
	// q commits before p: segments are in archive order, not begin order.
	v2, seg, err := s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: "q", SegmentID: "gq", Archive: 3, Summary: "q"})
	require.NoError(t, err)
	assert.Equal(t, "gq", seg.ID)
	v = v2
	v2, seg, err = s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: "p", SegmentID: "gp", Archive: 2, Summary: "p"})
	require.NoError(t, err)
	assert.Equal(t, "gp", seg.ID)
	segs, err := s.Segments(ctx, "a")
	require.NoError(t, err)
	require.Len(t, segs, 2)
	assert.Equal(t, "gq", segs[0].ID)
	assert.Equal(t, []string{"m-0", "m-1", "n-0"}, ids(segs[0].Messages))
	assert.Equal(t, "gp", segs[1].ID)
	assert.Equal(t, []string{"n-1", "o-0"}, ids(segs[1].Messages))
	loaded, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Empty(t, loaded.Active)
	assert.EqualValues(t, 5, loaded.Archived)
	assert.Equal(t, v2, loaded.Version)
	assert.Equal(t, "p", loaded.Summary)
	_, _, err = s.CommitCompaction(ctx, "a", v2, history.Commit{CompactID: "p", SegmentID: "gz", Archive: 1, Summary: "z"})
	assert.ErrorIs(t, err, history.ErrInvalid, "nothing is Active")
}

func testReopenIdentical(t *testing.T, h Harness) {
	s, v := h.seeded(t, "ro", Msgs("m", 5))
	v, _ = compact(t, s, "ro", v, "c1", 2, "sum")
	_, err := s.BeginCompaction(context.Background(), "ro", v, history.CompactionRecord{CompactID: "c2", Trigger: "auto", Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	one := readAll(t, s, "ro")
	two := readAll(t, h.reopen(t, s), "ro")
	snap1, tl1, segs1 := one.snap, one.timeline, one.segments
	snap2, tl2, segs2 := two.snap, two.timeline, two.segments
	assert.Equal(t, snap1.Version, snap2.Version)
	assert.Equal(t, snap1.Summary, snap2.Summary)
	assert.Equal(t, snap1.Interrupted, snap2.Interrupted)
	assert.Equal(t, snap1.Archived, snap2.Archived)
	EqualMessages(t, snap1.Active, snap2.Active)
	assert.Equal(t, entryKeys(tl1), entryKeys(tl2))
	require.Len(t, segs2, len(segs1))
	for i := range segs1 {
		EqualMessages(t, segs1[i].Messages, segs2[i].Messages)
		assert.Equal(t, segs1[i].Summary, segs2[i].Summary)
		assert.Equal(t, segs1[i].Position, segs2[i].Position)
	}
}

func testConcurrentSessions(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	const sessions, rounds = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%d", i)
			errs <- func() error {
				snap, err := s.Create(ctx, history.NewSession{ID: id})
				if err != nil {
					return err
				}
				v := snap.Version
				for r := range rounds {
					if v, err = s.Append(ctx, id, v, Msgs(fmt.Sprintf("%s-r%d", id, r), 4)); err != nil {
						return err
					}
					cid := fmt.Sprintf("%s-c%d", id, r)
					if v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: cid, Trigger: "auto", Status: history.StatusInProgress}); err != nil {
						return err
					}
					if v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: 2, Summary: cid}); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s = h.reopen(t, s)
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		snap, err := s.Load(ctx, id)
		require.NoError(t, err)
		assert.Len(t, snap.Active, 2*rounds)
		assert.EqualValues(t, 2*rounds, snap.Archived)
		assert.Equal(t, fmt.Sprintf("%s-c%d", id, rounds-1), snap.Summary)
		segs, err := s.Segments(ctx, id)
		require.NoError(t, err)
		assert.Len(t, segs, rounds)
		for _, seg := range segs {
			for _, m := range seg.Messages {
				assert.True(t, strings.HasPrefix(m.ID, id+"-"), "session %s holds message %s", id, m.ID)
			}
		}
	}
}

func testRacingWriters(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "race")
	const writers = 8
	var wg sync.WaitGroup
	results := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = s.Append(ctx, "race", v, Msgs(fmt.Sprintf("w%d", i), 2))
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, history.ErrConflict)
	}
	assert.Equal(t, 1, won, "exactly one writer of a version wins")
	snap, err := s.Load(ctx, "race")
	require.NoError(t, err)
	require.Len(t, snap.Active, 2)
	assert.Equal(t, strings.Split(snap.Active[0].ID, "-")[0], strings.Split(snap.Active[1].ID, "-")[0], "writes are never merged")
}

// testSharedData opens two stores on the same data, as two processes
// would: each sees the other's writes, and a write computed from a version
// the other store has moved past conflicts.
func testSharedData(t *testing.T, h Harness) {
	if h.Share == nil {
		t.Skip("the store cannot share its data")
	}
	a := h.New(t)
	b := h.Share(t, a)
	ctx := context.Background()
	snap, err := a.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := a.Append(ctx, "s", snap.Version, Msgs("a", 3))
	require.NoError(t, err)

	seen, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, seen.Version)
	assert.Len(t, seen.Active, 3)

	// b writes; a's next write, computed from the version it knew, conflicts.
	vb, err := b.Append(ctx, "s", seen.Version, Msgs("b", 1))
	require.NoError(t, err)
	_, err = a.Append(ctx, "s", v, Msgs("c", 1))
	assert.ErrorIs(t, err, history.ErrConflict)
	_, err = a.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrConflict)

	// Both see b's write; a compaction committed by a is seen by b.
	loaded, err := a.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, vb, loaded.Version)
	assert.Equal(t, []string{"a-0", "a-1", "a-2", "b-0"}, ids(loaded.Active))
	va, err := a.BeginCompaction(ctx, "s", vb, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	require.NoError(t, err)
	va, _, err = a.CommitCompaction(ctx, "s", va, history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 2, Summary: "two"})
	require.NoError(t, err)
	segs, err := b.Segments(ctx, "s")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, []string{"a-0", "a-1"}, ids(segs[0].Messages))
	fromB, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, va, fromB.Version)
	assert.Equal(t, "two", fromB.Summary)
	assert.Equal(t, []string{"a-2", "b-0"}, ids(fromB.Active))

	// Racing writers across the two stores: exactly one wins.
	errs := make(chan error, 2)
	for _, st := range []history.Store{a, b} {
		go func() {
			_, err := st.Append(ctx, "s", va, Msgs("r", 1))
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	assert.True(t, (e1 == nil) != (e2 == nil), "exactly one wins: %v, %v", e1, e2)
	for _, err := range []error{e1, e2} {
		if err != nil {
			assert.ErrorIs(t, err, history.ErrConflict)
		}
	}
}

// testConsistentReads loads a session while another goroutine keeps
// compacting it: every snapshot must be one committed state, with the
// summary, the archived count and the first Active message agreeing.
func testConsistentReads(t *testing.T, h Harness) {
	s := h.New(t)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			v, next := snap.Version, 0
			for r := range 40 {
				msgs := make([]history.Message, 4)
				for i := range msgs {
					msgs[i] = Msg(fmt.Sprintf("m-%d", next+i), next+i)
				}
				next += 4
				var err error
				if v, err = s.Append(ctx, "a", v, msgs); err != nil {
					return err
				}
				cid := fmt.Sprintf("c%d", r)
				if v, err = s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: cid, Trigger: "auto", Status: history.StatusInProgress}); err != nil {
					return err
				}
				// Archives 2 per round: the summary names the archived count.
				if v, _, err = s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: cid, SegmentID: "g" + cid, Archive: 2, Summary: fmt.Sprint(2 * (r + 1))}); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	for loads := 0; ; loads++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			t.Logf("%d consistent loads", loads)
			return
		default:
		}
		snap, err := s.Load(ctx, "a")
		require.NoError(t, err)
		if snap.Archived > 0 {
			require.Equal(t, fmt.Sprint(snap.Archived), snap.Summary)
		}
		for i, m := range snap.Active {
			require.Equal(t, fmt.Sprintf("m-%d", snap.Archived+int64(i)), m.ID)
		}
		require.LessOrEqual(t, len(snap.Interrupted), 1)
	}
}

func testTimelineOrder(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "t", Msgs("a", 4))
	v, _ = compact(t, s, "t", v, "c1", 2, "one")
	v = appendMsgs(t, s, "t", v, Msgs("b", 2))
	v, err := s.BeginCompaction(ctx, "t", v, history.CompactionRecord{CompactID: "c2", Trigger: "manual", Status: history.StatusInProgress})
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, "t", v, "c2", history.StatusFailed, "boom", t0)
	require.NoError(t, err)
	v = appendMsgs(t, s, "t", v, Msgs("c", 1))
	_, err = s.BeginCompaction(ctx, "t", v, history.CompactionRecord{CompactID: "c3", Trigger: "auto", Status: history.StatusNothingToCompact})
	require.NoError(t, err)

	want := []string{"a-0 archived", "a-1 archived", "a-2", "a-3", "compaction c1 completed one", "b-0", "b-1", "compaction c2 failed boom", "c-0", "compaction c3 nothing_to_compact"}
	for pass := range 2 {
		if pass == 1 {
			s = h.reopen(t, s)
		}
		st := s
		tl, err := st.Timeline(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, want, entryKeys(tl))
		for i := 1; i < len(tl); i++ {
			assert.Greater(t, tl[i].Position, tl[i-1].Position, "positions strictly increase")
		}
		segs, err := st.Segments(ctx, "t")
		require.NoError(t, err)
		require.Len(t, segs, 1)
		assert.Equal(t, tl[4].Position, segs[0].Position)
	}
}

func testCancelledContext(t *testing.T, h Harness) {
	s := h.New(t)
	v := create(t, s, "ctx")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Append(ctx, "ctx", v, Msgs("m", 1))
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	snap, err := s.Load(context.Background(), "ctx")
	require.NoError(t, err)
	assert.Empty(t, snap.Active)
	assert.Equal(t, v, snap.Version)
}

// entryKeys renders a timeline compactly for comparisons.
func entryKeys(tl []history.Entry) []string {
	out := make([]string, len(tl))
	for i, e := range tl {
		switch {
		case e.Message != nil && e.Archived:
			out[i] = e.Message.ID + " archived"
		case e.Message != nil:
			out[i] = e.Message.ID
		case e.Uncompaction != nil:
			out[i] = fmt.Sprintf("uncompaction %s %s %d", e.Uncompaction.ID, e.Uncompaction.SegmentID, e.Uncompaction.Restored)
		case e.Config != nil:
			out[i] = fmt.Sprintf("config %s", e.Config.Data)
		default:
			c := e.Compaction
			out[i] = strings.TrimSpace(fmt.Sprintf("compaction %s %s %s%s", c.CompactID, c.Status, c.Summary, c.Error))
		}
	}
	return out
}
