package storekit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

func msgs(ids ...string) []history.Message {
	out := make([]history.Message, len(ids))
	for i, id := range ids {
		out[i] = history.Message{ID: id, Role: history.RoleUser}
	}
	return out
}

func TestAssignSegments(t *testing.T) {
	segs := make([]history.Segment, 2)
	spans := []storekit.SegmentSpan{{From: 1, To: 2}, {From: 4, To: 6}}
	all := msgs("a", "b", "c", "d")
	require.NoError(t, storekit.AssignSegments(segs, spans, []int64{1, 2, 4, 6}, all))
	assert.Equal(t, all[:2], segs[0].Messages)
	assert.Equal(t, all[2:], segs[1].Messages)
	assert.Equal(t, 2, cap(segs[0].Messages), "a segment's messages cannot grow into the next one's")

	segs = make([]history.Segment, 2)
	err := storekit.AssignSegments(segs, spans, []int64{1, 3, 4}, msgs("a", "x", "c"))
	assert.EqualError(t, err, "message at position 3 belongs to no segment")
	err = storekit.AssignSegments(segs, spans, []int64{1, 2, 4, 7, 8}, msgs("a", "b", "c", "x", "y"))
	assert.EqualError(t, err, "2 archived messages belong to no segment")
	require.NoError(t, storekit.AssignSegments(nil, nil, nil, nil))
}

func TestMergeEntries(t *testing.T) {
	all := msgs("a", "b", "c")
	recs := []history.CompactionRecord{{CompactID: "c1", Position: 3}, {CompactID: "c2", Position: 6}}
	tl := storekit.MergeEntries([]int64{1, 2, 4}, all, recs, nil, 4)
	require.Len(t, tl, 5)
	want := []struct {
		pos      int64
		id       string
		archived bool
	}{{1, "a", true}, {2, "b", true}, {3, "c1", false}, {4, "c", false}, {6, "c2", false}}
	for i, w := range want {
		e := tl[i]
		assert.Equal(t, w.pos, e.Position)
		assert.Equal(t, w.archived, e.Archived)
		if e.Message != nil {
			assert.Nil(t, e.Compaction)
			assert.Equal(t, w.id, e.Message.ID)
		} else {
			assert.Equal(t, w.id, e.Compaction.CompactID)
		}
	}
	assert.Same(t, &all[0], tl[0].Message, "entries point into the caller's slices")
	assert.Empty(t, storekit.MergeEntries(nil, nil, nil, nil, 0))
}

func TestMergeConfigs(t *testing.T) {
	all := msgs("a", "b")
	entries := storekit.MergeEntries([]int64{1, 3}, all, nil, nil, 0)
	recs := []history.ConfigRecord{{Position: 0}, {Position: 2}, {Position: 4}}
	out := storekit.MergeConfigs(entries, recs)
	require.Len(t, out, 5)
	for i, e := range out {
		assert.Equal(t, int64(i), e.Position)
		assert.Equal(t, i%2 == 0, e.Config != nil, "entry %d", i)
	}
	assert.Same(t, &recs[1], out[2].Config)
	assert.Equal(t, entries, storekit.MergeConfigs(entries, nil))
}

func TestCommittedSegment(t *testing.T) {
	started, finished := time.Unix(10, 5), time.Unix(20, 7)
	c := &history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 4, Summary: "sum", InputTokens: 11, OutputTokens: 3, At: time.Unix(99, 0)}
	rec := &history.CompactionRecord{CompactID: "c1", Trigger: "auto", Instructions: "keep paths", Status: history.StatusInProgress, StartedAt: started, FinishedAt: finished, Position: 42}
	want := &history.Segment{ID: "g1", CompactID: "c1", Trigger: "auto", Summary: "sum", Instructions: "keep paths",
		CreatedAt: finished, StartedAt: started, InputTokens: 11, OutputTokens: 3, Position: 42}
	assert.Equal(t, want, storekit.CommittedSegment(c, rec))
}
