// Package segments holds what the SQL stores (history/sqlite,
// history/postgres) do alike in Segments once they have read a session's
// compaction rows: the standing segments take their messages from the
// archive before the watermark, the undone ones (Active again) each from its
// own range. The stores keep the SQL that reads the rows and the messages.
package segments

import (
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Builder collects the segments of one session in the order the store reads
// them (commit order).
type Builder struct {
	out      []history.Segment
	standing []int // indexes into out, in archive order
	spans    []storekit.SegmentSpan
	undone   []int
	all      []storekit.SegmentSpan
}

// Add appends the segment g, which spans sp and was undone or not.
func (b *Builder) Add(g history.Segment, sp storekit.SegmentSpan, undone bool) {
	if undone {
		b.undone = append(b.undone, len(b.out))
	} else {
		b.standing = append(b.standing, len(b.out))
		b.spans = append(b.spans, sp)
	}
	b.all = append(b.all, sp)
	b.out = append(b.out, g)
}

// Headers returns the segments without their messages, in the order they
// were added (nil when there are none).
func (b *Builder) Headers() []history.Segment { return b.out }

// Finish returns the segments with their messages (nil when there are
// none). archived reads the positions and messages before the watermark,
// which [storekit.AssignSegments] shares among the standing segments (its
// error is returned through wrap, which adds the store's prefix); inRange
// reads the messages of an undone segment's span.
func (b *Builder) Finish(archived func() ([]int64, []history.Message, error), wrap func(error) error, inRange func(storekit.SegmentSpan) ([]history.Message, error)) ([]history.Segment, error) {
	// The standing segments are contiguous and end at the watermark, in
	// the order they were committed.
	segs := make([]history.Segment, len(b.standing))
	for k, i := range b.standing {
		segs[k] = b.out[i]
	}
	positions, msgs, err := archived()
	if err != nil {
		return nil, err
	}
	if err := storekit.AssignSegments(segs, b.spans, positions, msgs); err != nil {
		return nil, wrap(err)
	}
	for k, i := range b.standing {
		b.out[i] = segs[k]
	}
	for _, i := range b.undone {
		if b.out[i].Messages, err = inRange(b.all[i]); err != nil {
			return nil, err
		}
	}
	return b.out, nil
}
