package session_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

func mustUncompact(t *testing.T, s *session.Session) session.UncompactResult {
	t.Helper()
	h, err := s.Uncompact(ctxT(t), session.UncompactRequest{})
	require.NoError(t, err)
	return wait(t, h)
}

// TestUncompact_AfterOneCompaction: the Segment's messages go back to the
// front of Active, the retained summary becomes "" again, the Segment stays
// in the archive marked undone, and a second Uncompact has nothing to undo.
func TestUncompact_AfterOneCompaction(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	before, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	rec := record(t, s)

	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, res.Segment.ID, u.SegmentID)
	assert.Equal(t, 2, u.Restored)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(active))
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	sameAsStore(t, s)
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.True(t, segs[0].Undone())
	assert.Len(t, segs[0].Messages, 2, "an undone Segment keeps its messages")

	evs := rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if _, ok := ev.Payload.(*session.UncompactEvent); ok {
				return true
			}
		}
		return false
	})
	var ue *session.UncompactEvent
	for _, ev := range evs {
		if p, ok := ev.Payload.(*session.UncompactEvent); ok {
			ue = p
		}
	}
	assert.Equal(t, res.Segment.ID, ue.SegmentID)
	assert.Equal(t, 2, ue.Restored)
	assert.NotEqual(t, session.NoPosition, ue.Position)

	again := mustUncompact(t, s)
	require.ErrorIs(t, again.Err, history.ErrNothingToUndo)
	sameAsStore(t, s)

	// The restored messages are Active: they are sent and can be compacted
	// again.
	converse(t, s, fake, 1)
	last := fake.Requests()[len(fake.Requests())-1]
	assert.Equal(t, append(texts(before), "user:prompt a"), texts(last.Messages))
	fake.QueueSummary(providertest.Reply{Text: "S again"})
	res = wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Len(t, storedSegments(t, s), 2)
}

// TestUncompact_AfterTwoCompactions: undoing the second compaction brings
// back the first one's summary; undoing again brings back everything.
func TestUncompact_AfterTwoCompactions(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	all, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	first := wait(t, mustCompact(t, s, ""))
	require.True(t, first.Compacted)
	converse(t, s, fake, 1)
	afterFirst, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S2"})
	second := wait(t, mustCompact(t, s, ""))
	require.True(t, second.Compacted)

	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, second.Segment.ID, u.SegmentID)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(afterFirst), texts(active))
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "S1", summary, "the summary before it")
	sameAsStore(t, s)

	u = mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, first.Segment.ID, u.SegmentID)
	active, err = s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(all), texts(active[:len(all)]))
	assert.Len(t, active, 6)
	summary, err = s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	segs := storedSegments(t, s)
	require.Len(t, segs, 2)
	assert.True(t, segs[0].Undone())
	assert.True(t, segs[1].Undone())
	sameAsStore(t, s)
}

// TestUncompact_DuringTurnAtCheckpoint: Uncompact is a checkpoint command:
// queued during a turn it runs at the next step checkpoint, and the next
// provider request sees the restored messages.
func TestUncompact_DuringTurnAtCheckpoint(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}, 1), make(chan struct{})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release)}})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("b1", "block", `{}`)}}, providertest.Reply{Text: "done"})
	h := mustPrompt(t, s, "go")
	<-started
	uh, err := s.Uncompact(ctxT(t), session.UncompactRequest{})
	require.NoError(t, err)
	close(release)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, uh).Err)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	require.Equal(t, provider.PurposeTurn, last.Purpose)
	assert.Empty(t, last.Summary, "the summary is undone")
	assert.Equal(t, "user:prompt a", texts(last.Messages)[0], "the restored messages lead")
}

// TestUncompact_Replay: a Replay yields the undo at its position, after
// the compaction it undid.
func TestUncompact_Replay(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	require.NoError(t, mustUncompact(t, s).Err)
	converse(t, s, fake, 1)

	rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	var kinds []string
	var last int64 = -1
	for _, ev := range rep.Events {
		var pos int64
		switch p := ev.Payload.(type) {
		case *session.MessageEvent:
			kinds, pos = append(kinds, "message"), p.Position
		case *session.CompactionEvent:
			kinds, pos = append(kinds, "compaction"), p.Position
		case *session.UncompactEvent:
			kinds, pos = append(kinds, "uncompact"), p.Position
			assert.Equal(t, res.Segment.ID, p.SegmentID)
			assert.Equal(t, res.CompactID, p.CompactID)
			assert.Equal(t, 2, p.Restored)
		case *session.SettingsEvent:
			continue // the title, right after the first message: no position of its own
		}
		assert.Greater(t, pos, last, "in position order")
		last = pos
	}
	assert.Equal(t, []string{"message", "message", "message", "message", "compaction", "uncompact", "message", "message"}, kinds)
}

// TestUncompact_SQLiteReopen: on the SQLite store (through its lease) the
// undo is durable: a session opened again has the restored Active, the
// summary before it and the undone Segment.
func TestUncompact_SQLiteReopen(t *testing.T) {
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "undo", Store: store})
	converse(t, s, fake, 2)
	all, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	require.NoError(t, s.Close())

	s2, err := session.Open(ctxT(t), session.Config{ID: "undo", Store: store, Provider: fake})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	active, err := s2.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(all), texts(active))
	summary, err := s2.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	segs := storedSegments(t, s2)
	require.Len(t, segs, 1)
	assert.True(t, segs[0].Undone())
	assert.Equal(t, u.SegmentID, segs[0].ID)
}
