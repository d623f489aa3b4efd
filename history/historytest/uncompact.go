package historytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// testCommitRecordsControls: a commit's summary provider, model and token
// figures come back with the Segment, and the overflow trigger is valid.
func testCommitRecordsControls(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "s", Msgs("m", 4))
	v, err := s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerOverflow, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	_, seg, err := s.CommitCompaction(ctx, "s", v, history.Commit{
		CompactID: "c1", SegmentID: "seg-c1", Archive: 2, Summary: "S", At: t0.Add(time.Minute),
		SummaryProvider: "small", SummaryModel: "mini-1", ContextBefore: 1200, ContextAfter: 300,
	})
	require.NoError(t, err)
	check := func(g *history.Segment) {
		t.Helper()
		assert.Equal(t, history.TriggerOverflow, g.Trigger)
		assert.Equal(t, "small", g.SummaryProvider)
		assert.Equal(t, "mini-1", g.SummaryModel)
		assert.Equal(t, 1200, g.ContextBefore)
		assert.Equal(t, 300, g.ContextAfter)
		assert.False(t, g.Undone())
	}
	check(seg)
	s = h.reopen(t, s)
	segs, err := s.Segments(ctx, "s")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	check(&segs[0])
}

// testUncompact: Uncompact undoes the newest standing Segment in one
// transaction: its messages are Active again at the front, the summary is
// the one before it, the Segment stays in the archive marked undone with
// its messages, the timeline records the undo at its position; with
// nothing to undo it fails with ErrNothingToUndo and writes nothing. A
// compaction after an undo archives the restored messages again.
func testUncompact(t *testing.T, h Harness) {
	ctx := context.Background()
	msgs := Msgs("m", 8)
	s, v := h.compactedTwice(t, "s", msgs, 6, 2, 3)
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, v, snap.Version)
	pos := snap.NextPosition

	v2, rec, err := s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Greater(t, v2, v)
	v = v2
	assert.Equal(t, "u1", rec.ID)
	assert.Equal(t, "seg-c2", rec.SegmentID)
	assert.Equal(t, "c2", rec.CompactID)
	assert.Equal(t, 3, rec.Restored)
	assert.Equal(t, pos, rec.Position)

	check := func(s history.Store, active []history.Message, summary string, undone ...bool) {
		t.Helper()
		snap, err := s.Load(ctx, "s")
		require.NoError(t, err)
		EqualMessages(t, active, snap.Active)
		assert.Equal(t, summary, snap.Summary)
		assert.Equal(t, int64(len(msgs)-len(active)), snap.Archived)
		segs, err := s.Segments(ctx, "s")
		require.NoError(t, err)
		require.Len(t, segs, len(undone))
		for i, u := range undone {
			assert.Equal(t, u, segs[i].Undone(), "segment %d", i)
		}
	}
	check(s, msgs[2:], "S1", false, true)
	segs, err := s.Segments(ctx, "s")
	require.NoError(t, err)
	EqualMessages(t, msgs[:2], segs[0].Messages)
	EqualMessages(t, msgs[2:5], segs[1].Messages)
	assert.Equal(t, "u1", segs[1].UndoID)
	assert.True(t, segs[1].UndoneAt.Equal(t0.Add(time.Hour)))
	s = h.reopen(t, s)
	check(s, msgs[2:], "S1", false, true)

	tl, err := s.Timeline(ctx, "s")
	require.NoError(t, err)
	last := tl[len(tl)-1]
	require.NotNil(t, last.Uncompaction, "the undo is the newest entry")
	assert.Equal(t, pos, last.Position)
	assert.Equal(t, *rec, history.UncompactionRecord{ID: last.Uncompaction.ID, SegmentID: last.Uncompaction.SegmentID,
		CompactID: last.Uncompaction.CompactID, Restored: last.Uncompaction.Restored, At: rec.At, Position: last.Uncompaction.Position})
	assert.True(t, last.Uncompaction.At.Equal(rec.At))
	for _, e := range tl {
		if e.Message != nil {
			assert.Equal(t, e.Message.ID == "m-0" || e.Message.ID == "m-1", e.Archived, "message %s", e.Message.ID)
		}
	}

	// The same undo ID again is refused; the session is unchanged.
	_, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0})
	require.ErrorIs(t, err, history.ErrExists)
	// A stale version is a conflict.
	_, _, err = s.Uncompact(ctx, "s", v-1, history.Uncompaction{ID: "u2", At: t0})
	require.ErrorIs(t, err, history.ErrConflict)
	check(s, msgs[2:], "S1", false, true)

	v, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u2", At: t0.Add(2 * time.Hour)})
	require.NoError(t, err)
	check(s, msgs, "", true, true)

	_, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u3", At: t0})
	require.ErrorIs(t, err, history.ErrNothingToUndo)
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "nothing written")

	// Compacting the restored messages again makes a new Segment; the
	// undone ones keep theirs.
	v, seg := compact(t, s, "s", v, "c3", 4, "S3")
	assert.Equal(t, "seg-c3", seg.ID)
	check(s, msgs[4:], "S3", true, true, false)
	segs, err = s.Segments(ctx, "s")
	require.NoError(t, err)
	EqualMessages(t, msgs[:4], segs[2].Messages)
	EqualMessages(t, msgs[:2], segs[0].Messages)
	s = h.reopen(t, s)
	check(s, msgs[4:], "S3", true, true, false)
	_, rec, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u4", At: t0})
	require.NoError(t, err)
	assert.Equal(t, "seg-c3", rec.SegmentID)
	check(s, msgs, "", true, true, true)

	_, _, err = s.Uncompact(ctx, "nope", 1, history.Uncompaction{ID: "u5", At: t0})
	assert.True(t, errors.Is(err, history.ErrNotFound), "%v", err)
	_, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{})
	assert.ErrorIs(t, err, history.ErrInvalid)
}
