package history

import (
	"fmt"
	"math"
	"slices"
)

// CommittedSegment, AssignSegments and MergeTimeline assemble what
// [Store.CommitCompaction], [Store.Segments] and [Store.Timeline] return
// from the rows a store reads, so that every store gives the same answer;
// like the Check helpers, they are meant for store implementations. They do
// no I/O.

// CommittedSegment is the Segment that commit c makes of the in-progress
// compaction rec, as CommitCompaction returns it: without Messages, created
// at rec.FinishedAt (the commit's time as the store keeps it).
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
		Fidelity:        CloneFidelity(c.Fidelity),
	}
}

// CloneFidelity returns f with a Missing of its own (nil when empty).
func CloneFidelity(f Fidelity) Fidelity {
	if len(f.Missing) == 0 {
		f.Missing = nil
	} else {
		f.Missing = slices.Clone(f.Missing)
	}
	return f
}

// SegmentSpan is the range of timeline positions a [Segment]'s archived
// messages occupy, both ends included.
type SegmentSpan struct {
	From, To int64
}

// AssignSegments hands the archived messages to their segments: msgs are
// the session's archived messages, oldest first, and positions[i] is the
// timeline position of msgs[i]; segs are the segments in archive order and
// spans[k] is the span of segs[k]. Each segment's Messages becomes the
// subslice of msgs (capacity clipped, so appending to it never overwrites
// the next segment's messages) that lies in its span.
//
// A message that falls in no span is an integrity error: the returned error
// names it (its position, or how many messages are left over at the end),
// and the caller wraps it with its own prefix. Messages of segments before
// the error may already be assigned.
func AssignSegments(segs []Segment, spans []SegmentSpan, positions []int64, msgs []Message) error {
	i := 0
	for k, sp := range spans {
		j := i
		for j < len(msgs) && positions[j] <= sp.To {
			j++
		}
		if i < len(msgs) && positions[i] < sp.From {
			return fmt.Errorf("message at position %d belongs to no segment", positions[i])
		}
		segs[k].Messages = msgs[i:j:j]
		i = j
	}
	if i != len(msgs) {
		return fmt.Errorf("%d archived messages belong to no segment", len(msgs)-i)
	}
	return nil
}

// MergeTimeline merges a session's messages and compaction records into its
// timeline: msgs and positions (positions[i] is the position of msgs[i]) and
// recs are each in position order, and activeFrom is the session's
// watermark, the position of its first Active message: a message before it
// is Archived. The entries point into msgs and recs, which the caller must
// not reuse.
func MergeTimeline(positions []int64, msgs []Message, recs []CompactionRecord, activeFrom int64) []Entry {
	return MergeEntries(positions, msgs, recs, nil, activeFrom)
}

// MergeEntries is MergeTimeline with the session's uncompaction records
// too, undos in position order.
func MergeEntries(positions []int64, msgs []Message, recs []CompactionRecord, undos []UncompactionRecord, activeFrom int64) []Entry {
	out := make([]Entry, 0, len(msgs)+len(recs)+len(undos))
	mi, ci, ui := 0, 0, 0
	const none = int64(math.MaxInt64)
	for mi < len(msgs) || ci < len(recs) || ui < len(undos) {
		mp, cp, up := none, none, none
		if mi < len(msgs) {
			mp = positions[mi]
		}
		if ci < len(recs) {
			cp = recs[ci].Position
		}
		if ui < len(undos) {
			up = undos[ui].Position
		}
		switch {
		case mp <= cp && mp <= up:
			out = append(out, Entry{Position: mp, Archived: mp < activeFrom, Message: &msgs[mi]})
			mi++
		case cp <= up:
			out = append(out, Entry{Position: cp, Compaction: &recs[ci]})
			ci++
		default:
			out = append(out, Entry{Position: up, Uncompaction: &undos[ui]})
			ui++
		}
	}
	return out
}
