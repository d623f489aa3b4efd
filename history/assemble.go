package history

import "slices"

// CommittedSegment is the Segment that commit c makes of the in-progress
// compaction rec, as [Store.CommitCompaction] returns it: without Messages,
// created at rec.FinishedAt (the commit's time as the store keeps it). Stores
// return it from CommitCompaction, and a session uses it for a commit that
// landed although the store reported an error, so both give the same
// Segment.
func CommittedSegment(c *Commit, rec *CompactionRecord) *Segment {
	return &Segment{
		ID:           c.SegmentID,
		CompactID:    c.CompactID,
		Trigger:      rec.Trigger,
		Summary:      c.Summary,
		Instructions: rec.Instructions,
		CreatedAt:    rec.FinishedAt,
		StartedAt:    rec.StartedAt,
		InputTokens:  c.InputTokens,
		OutputTokens: c.OutputTokens,
		Position:     rec.Position,

		SummaryProvider: c.SummaryProvider,
		SummaryModel:    c.SummaryModel,
		ContextBefore:   c.ContextBefore,
		ContextAfter:    c.ContextAfter,
		Fidelity:        c.Fidelity.Clone(),
	}
}

// Clone returns f with a Missing of its own (nil when empty).
func (f Fidelity) Clone() Fidelity {
	if len(f.Missing) == 0 {
		f.Missing = nil
	} else {
		f.Missing = slices.Clone(f.Missing)
	}
	return f
}
