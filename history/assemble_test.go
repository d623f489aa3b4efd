package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/history"
)

func TestCommittedSegment(t *testing.T) {
	started, finished := time.Unix(10, 5), time.Unix(20, 7)
	c := &history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 4, Summary: "sum", InputTokens: 11, OutputTokens: 3, At: time.Unix(99, 0)}
	rec := &history.CompactionRecord{CompactID: "c1", Trigger: "auto", Instructions: "keep paths", Status: history.StatusInProgress, StartedAt: started, FinishedAt: finished, Position: 42}
	want := &history.Segment{ID: "g1", CompactID: "c1", Trigger: "auto", Summary: "sum", Instructions: "keep paths",
		CreatedAt: finished, StartedAt: started, InputTokens: 11, OutputTokens: 3, Position: 42}
	assert.Equal(t, want, history.CommittedSegment(c, rec))
}
