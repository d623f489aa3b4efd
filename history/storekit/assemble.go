package storekit

import (
	"fmt"
	"math"
	"slices"

	"github.com/sessionkit/sessionkit/history"
)

// CommittedSegment is the Segment that commit c makes of the in-progress
// compaction rec, as [history.Store.CommitCompaction] returns it: without
// Messages, created at rec.FinishedAt (the commit's time as the store keeps
// it). Stores return it from CommitCompaction, and a session uses it for a
// commit that landed although the store reported an error, so both give
// the same Segment.
func CommittedSegment(c *history.Commit, rec *history.CompactionRecord) *history.Segment {
	return &history.Segment{
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
		Files:           slices.Clone(c.Files),
	}
}

// SegmentSpan is the range of timeline positions a [history.Segment]'s
// archived messages occupy, both ends included.
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
func AssignSegments(segs []history.Segment, spans []SegmentSpan, positions []int64, msgs []history.Message) error {
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

// MergeEntries merges a session's messages, compaction records and
// uncompaction records into its timeline, as [history.Store.Timeline]
// returns it: msgs and positions (positions[i] is the position of msgs[i]),
// recs and undos are each in position order, and activeFrom is the
// session's watermark, the position of its first Active message: a message
// before it is Archived. The entries point into msgs, recs and undos, which
// the caller must not reuse.
func MergeEntries(positions []int64, msgs []history.Message, recs []history.CompactionRecord, undos []history.UncompactionRecord, activeFrom int64) []history.Entry {
	out := make([]history.Entry, 0, len(msgs)+len(recs)+len(undos))
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
			out = append(out, history.Entry{Position: mp, Archived: mp < activeFrom, Message: &msgs[mi]})
			mi++
		case cp <= up:
			out = append(out, history.Entry{Position: cp, Compaction: &recs[ci]})
			ci++
		default:
			out = append(out, history.Entry{Position: up, Uncompaction: &undos[ui]})
			ui++
		}
	}
	return out
}

// MergeConfigs merges a session's configuration records (history.Entry
// Config), in position order, into entries, its timeline without them as
// [MergeEntries] returns it. The entries point into recs, which the caller
// must not reuse.
func MergeConfigs(entries []history.Entry, recs []history.ConfigRecord) []history.Entry {
	if len(recs) == 0 {
		return entries
	}
	out := make([]history.Entry, 0, len(entries)+len(recs))
	ri := 0
	for _, e := range entries {
		for ri < len(recs) && recs[ri].Position < e.Position {
			out = append(out, history.Entry{Position: recs[ri].Position, Config: &recs[ri]})
			ri++
		}
		out = append(out, e)
	}
	for ; ri < len(recs); ri++ {
		out = append(out, history.Entry{Position: recs[ri].Position, Config: &recs[ri]})
	}
	return out
}
