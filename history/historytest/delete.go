package historytest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// fullSession stores a session with something in every part a store keeps:
// settings and metadata, Active and archived messages (a tool call and its
// result among them), a Segment that stands and one that was undone, a
// failed compaction, logged events and so search index rows for the word
// "ledger". It returns the session's version.
func fullSession(t *testing.T, s history.Store, id string) uint64 {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: id, Config: json.RawMessage(`{"model":"m-` + id + `"}`), Title: "title " + id, Cwd: "/home/dev/" + id})
	require.NoError(t, err)
	v := appendMsgs(t, s, id, snap.Version, []history.Message{
		text("u0", 0, "Please fix the rounding in ledger.go."),
		{ID: "a1", Role: history.RoleAssistant, Text: "Reading ledger.go.", ToolCalls: []history.ToolCall{{ID: "call1", Name: "read_file", Arguments: json.RawMessage(`{"path":"ledger.go"}`)}}, CreatedAt: t0},
		{ID: "t2", Role: history.RoleTool, ToolCallID: "call1", Text: "package ledger", CreatedAt: t0},
		text("a3", 3, "The ledger rounds half up."),
	})
	v, _ = compact(t, s, id, v, "c1", 2, "summary one of the ledger")
	v = appendMsgs(t, s, id, v, []history.Message{text("u4", 4, "And the ledger totals?"), text("a5", 5, "They are fixed.")})
	v, _ = compact(t, s, id, v, "c2", 2, "summary two")
	v, _, err = s.Uncompact(ctx, id, v, history.Uncompaction{ID: "undo1", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: "c3", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, id, v, "c3", history.StatusFailed, "provider down", t0.Add(2*time.Hour))
	require.NoError(t, err)
	{
		v, _, err = s.RecordConfig(ctx, id, v, history.ConfigChange{Config: json.RawMessage(`{"model":"m2-` + id + `"}`), Data: json.RawMessage(`{"changed":["Model"]}`), At: t0.Add(3 * time.Hour)})
		require.NoError(t, err)
	}
	require.NoError(t, s.LogEvents(ctx, id, history.EventBatch{
		Events:  []history.LoggedEvent{loggedEvent(1, "message"), loggedEvent(2, "compaction")},
		Through: 5,
	}))
	require.NoError(t, s.RecordUsage(ctx, id, []history.UsageRecord{usageRec("r-"+id, "turn", 10, 2)}))
	return v
}

// stored is everything the reads of a store say of one session.
type stored struct {
	snap     *history.Snapshot
	segments []history.Segment
	timeline []history.Entry
	events   []history.LoggedEvent
	usage    []history.UsageRecord
	totals   []history.UsageTotal
	hits     []string
}

// readAll reads session id through every read of s, each of which must
// succeed.
func readAll(t *testing.T, s history.Store, id string) stored {
	t.Helper()
	ctx := context.Background()
	var (
		st  stored
		err error
	)
	st.snap, err = s.Load(ctx, id)
	require.NoError(t, err)
	st.segments, err = s.Segments(ctx, id)
	require.NoError(t, err)
	st.timeline, err = s.Timeline(ctx, id)
	require.NoError(t, err)
	st.events, err = s.Events(ctx, id, 0, 0)
	require.NoError(t, err)
	st.usage, err = s.Usage(ctx, id)
	require.NoError(t, err)
	st.totals, err = s.UsageTotals(ctx, id)
	require.NoError(t, err)
	st.hits = hitIDs(search(t, s, id, "ledger", history.MaxSearchLimit).Hits)
	return st
}

// sameStored asserts that two reads of a session are the same.
func sameStored(t *testing.T, want, got stored) {
	t.Helper()
	assert.Equal(t, want.snap.Version, got.snap.Version)
	assert.JSONEq(t, string(want.snap.Config), string(got.snap.Config))
	assert.Equal(t, want.snap.Title, got.snap.Title)
	assert.Equal(t, want.snap.Cwd, got.snap.Cwd)
	assert.Equal(t, want.snap.Summary, got.snap.Summary)
	assert.Equal(t, want.snap.LastSeq, got.snap.LastSeq)
	EqualMessages(t, want.snap.Active, got.snap.Active)
	require.Len(t, got.segments, len(want.segments))
	for i := range want.segments {
		assert.Equal(t, want.segments[i].ID, got.segments[i].ID)
		assert.Equal(t, want.segments[i].UndoID, got.segments[i].UndoID)
		EqualMessages(t, want.segments[i].Messages, got.segments[i].Messages)
	}
	assert.Equal(t, entryKeys(want.timeline), entryKeys(got.timeline))
	equalEvents(t, want.events, got.events)
	equalUsage(t, want.usage, got.usage)
	assert.Equal(t, want.totals, got.totals, "UsageTotals")
	assert.Equal(t, want.hits, got.hits)
}

// goneFrom asserts that every read of s fails for session id with
// ErrNotFound and that listing leaves it out.
func goneFrom(t *testing.T, s history.Store, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Load(ctx, id)
	assert.ErrorIs(t, err, history.ErrNotFound, "Load")
	_, err = s.Segments(ctx, id)
	assert.ErrorIs(t, err, history.ErrNotFound, "Segments")
	_, err = s.Timeline(ctx, id)
	assert.ErrorIs(t, err, history.ErrNotFound, "Timeline")
	_, err = s.Events(ctx, id, 0, 0)
	assert.ErrorIs(t, err, history.ErrNotFound, "Events")
	_, err = s.Search(ctx, id, history.SearchQuery{Text: "ledger"})
	assert.ErrorIs(t, err, history.ErrNotFound, "Search")
	_, err = s.Usage(ctx, id)
	assert.ErrorIs(t, err, history.ErrNotFound, "Usage")
	_, err = s.UsageTotals(ctx, id)
	assert.ErrorIs(t, err, history.ErrNotFound, "UsageTotals")
	_, err = s.Window(ctx, id, history.WindowQuery{Around: "m0"})
	assert.ErrorIs(t, err, history.ErrNotFound, "Window")
	assert.NotContains(t, listAll(t, s, history.ListOptions{}, nil), id, "ListSessions")
}

// testDelete: Delete removes a session with every part a store keeps of
// it (messages, Segments, records, events, search rows, settings): every
// read then fails with ErrNotFound, listing leaves it out, also after a
// reopen; another session is untouched; the ID can be created again and
// is then a new, empty session, whose search finds nothing of the old one.
func testDelete(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	fullSession(t, s, "keep")
	fullSession(t, s, "gone") // created last: a store that numbers sessions gives its number out again
	keep := readAll(t, s, "keep")
	gone := readAll(t, s, "gone")
	require.NotEmpty(t, gone.segments)
	require.NotEmpty(t, gone.events)
	require.NotEmpty(t, gone.usage)
	require.NotEmpty(t, gone.totals)
	require.NotEmpty(t, gone.hits, "the session is indexed")

	require.NoError(t, s.Delete(ctx, "gone"))
	goneFrom(t, s, "gone")
	sameStored(t, keep, readAll(t, s, "keep"))
	assert.Equal(t, []string{"keep"}, listAll(t, s, history.ListOptions{}, nil))
	assert.Empty(t, listAll(t, s, history.ListOptions{Cwd: "/home/dev/gone"}, nil), "listing by the deleted session's directory")

	err := s.Delete(ctx, "gone")
	assert.ErrorIs(t, err, history.ErrNotFound, "deleting twice")

	s = h.reopen(t, s)
	goneFrom(t, s, "gone")
	sameStored(t, keep, readAll(t, s, "keep"))

	// The ID is free again, for a new and empty session.
	snap, err := s.Create(ctx, history.NewSession{ID: "gone"})
	require.NoError(t, err)
	assert.Empty(t, snap.Active)
	assert.Empty(t, snap.Config)
	assert.Empty(t, snap.Title)
	assert.Empty(t, snap.Summary)
	assert.Zero(t, snap.Archived)
	assert.Zero(t, snap.NextPosition)
	assert.Zero(t, snap.LastSeq)
	again := readAll(t, s, "gone")
	assert.Empty(t, again.segments)
	assert.Empty(t, again.timeline)
	assert.Empty(t, again.events)
	assert.Empty(t, again.usage, "the usage ledger holds nothing of the deleted session")
	assert.Empty(t, again.totals, "the usage totals hold nothing of the deleted session")
	assert.Empty(t, again.hits, "the search index holds nothing of the deleted session")
	v := appendMsgs(t, s, "gone", snap.Version, []history.Message{text("n0", 0, "a new ledger question")})
	assert.Equal(t, []string{"n0"}, hitIDs(search(t, s, "gone", "ledger", 0).Hits))
	// Events start over: the old session's sequence numbers are gone.
	require.NoError(t, s.LogEvents(ctx, "gone", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(1, "message")}, Through: 1}))
	_, err = s.Append(ctx, "gone", v, Msgs("n", 1))
	require.NoError(t, err)
	sameStored(t, keep, readAll(t, s, "keep"))
}

// testDeleteMissing: deleting a session that does not exist (never
// created, or an empty ID) fails with ErrNotFound and touches nothing
// else; a Delete on a closed store or with a finished context fails and
// deletes nothing.
func testDeleteMissing(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	fullSession(t, s, "keep")
	keep := readAll(t, s, "keep")
	for _, id := range []string{"nope", "", "kee", "keep "} {
		err := s.Delete(ctx, id)
		assert.ErrorIs(t, err, history.ErrNotFound, "Delete(%q)", id)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Error(t, s.Delete(cancelled, "keep"))
	sameStored(t, keep, readAll(t, s, "keep"))
	assert.Equal(t, []string{"keep"}, listAll(t, s, history.ListOptions{}, nil))
}

// testDeleteLeased: a session another holder's live lease covers is not
// deleted by the store itself, whether another process's or the holder's
// own: the error names the holder and nothing is gone. The holder deletes
// it through its lease's store; a lease that was lost deletes nothing. The
// fencing tokens of a session created again under its ID keep growing.
func testDeleteLeased(t *testing.T, h LeaseHarness) {
	t.Parallel()
	ctx := context.Background()
	open := h.New(t)
	a := open("a", 0)
	other := open("other", 0)
	la := acquire(t, a, "s")
	fullSession(t, la.Store(), "s")
	fullSession(t, other, "free")
	before := readAll(t, other, "s")

	for _, s := range []LeaseStore{other, a} {
		LeaseError(t, s.Delete(ctx, "s"), "s", "a")
		sameStored(t, before, readAll(t, other, "s"))
	}
	// A lease's store deletes only its own session.
	assert.ErrorIs(t, la.Store().Delete(ctx, "free"), history.ErrInvalid)
	_, err := other.Load(ctx, "free")
	require.NoError(t, err)

	require.NoError(t, la.Store().Delete(ctx, "s"))
	goneFrom(t, other, "s")
	assert.ErrorIs(t, la.Store().Delete(ctx, "s"), history.ErrNotFound)
	require.NoError(t, la.Release(ctx))

	// Created again, leased again: a larger token; the released lease
	// deletes nothing.
	lb := acquire(t, other, "s")
	assert.Greater(t, lb.Token(), la.Token())
	fullSession(t, lb.Store(), "s")
	assert.ErrorIs(t, la.Store().Delete(ctx, "s"), history.ErrFenced)
	LeaseError(t, a.Delete(ctx, "s"), "s", "other")
	_, err = a.Load(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))

	// Nobody holds it: the store itself deletes it.
	require.NoError(t, a.Delete(ctx, "s"))
	goneFrom(t, other, "s")
	assert.True(t, slices.Contains(listAll(t, a, history.ListOptions{}, nil), "free"))
}
