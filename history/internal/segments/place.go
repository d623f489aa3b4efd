package segments

import (
	"slices"

	"github.com/sessionkit/sessionkit/history"

	"github.com/sessionkit/sessionkit/history/storekit"
)

// Standing is a session's standing Segments (those not undone), in
// archive order, with the numbers of the compactions that made them: what
// tells where a message stands from its position alone, for a search hit
// ([history.SearchHit]) and a window read ([history.WindowMessage]).
type Standing struct {
	spans []storekit.SegmentSpan
	ids   []string
	nums  []int
}

// Add records the standing Segment id, which spans sp and is the session's
// num-th Segment in commit order (the order of [history.Reader.Segments],
// undone ones counted, from 1). Add them in archive order (by sp.From).
func (s *Standing) Add(id string, sp storekit.SegmentSpan, num int) {
	s.spans, s.ids, s.nums = append(s.spans, sp), append(s.ids, id), append(s.nums, num)
}

// At returns the Segment that archives the message at pos and the number
// of its compaction: "" and 0 for a message at or after activeFrom (the
// watermark: it is Active) or in no standing Segment's span.
func (s *Standing) At(pos, activeFrom int64) (segmentID string, compaction int) {
	if pos >= activeFrom {
		return "", 0
	}
	i, ok := slices.BinarySearchFunc(s.spans, pos, func(sp storekit.SegmentSpan, p int64) int {
		switch {
		case sp.To < p:
			return -1
		case sp.From > p:
			return 1
		}
		return 0
	})
	if !ok {
		return "", 0
	}
	return s.ids[i], s.nums[i]
}

// StandingQuery selects, for one session (the one parameter, written
// $1, which PostgreSQL and SQLite both bind to the first argument), the standing
// Segments' IDs, spans and compaction numbers in archive order, as
// [Standing.Add] takes them: the numbers count every Segment in the
// order Segments lists them (commit order; rows from before commit
// versions were recorded, NULL, first, by position).
const StandingQuery = `
	SELECT segment_id, from_pos, to_pos, num FROM (
		SELECT segment_id, from_pos, to_pos, undo_id,
			row_number() OVER (ORDER BY COALESCE(commit_version, 0), from_pos) AS num
		FROM compactions WHERE session_id = $1 AND segment_id IS NOT NULL
	) AS g WHERE undo_id IS NULL ORDER BY from_pos`

// WindowReads are the reads of one window read ([history.Reader.Window])
// that a SQL store makes in one read transaction: [ReadWindow] calls them
// in order, and each store keeps its SQL.
type WindowReads struct {
	// Session reads the session's watermark (ErrNotFound for an unknown
	// session).
	Session func() (activeFrom int64, err error)
	// Find reads the position of the newest message with the ID; found is
	// false when there is none.
	Find func(msgID string) (pos int64, found bool, err error)
	// Before reads at most limit messages before position pos, newest
	// first; From at most limit messages from pos on, oldest first.
	Before, From func(pos int64, limit int) ([]history.WindowMessage, error)
	// Standing reads the standing Segments (StandingQuery).
	Standing func() (*Standing, error)
}

// ReadWindow is [history.Reader.Window] of session id over r: it checks
// q, finds the message, reads both sides of it and, when the window
// reaches before the watermark, places its messages in their Segments.
func ReadWindow(id string, q history.WindowQuery, r WindowReads) ([]history.WindowMessage, error) {
	if err := storekit.CheckWindow(q); err != nil {
		return nil, err
	}
	activeFrom, err := r.Session()
	if err != nil {
		return nil, err
	}
	at, found, err := r.Find(q.Around)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, storekit.UnknownMessage(id, q.Around)
	}
	var before, after []history.WindowMessage
	if q.Before > 0 {
		if before, err = r.Before(at, q.Before); err != nil {
			return nil, err
		}
	}
	if after, err = r.From(at, q.After+1); err != nil {
		return nil, err
	}
	out := make([]history.WindowMessage, 0, len(before)+len(after))
	for i := len(before) - 1; i >= 0; i-- {
		out = append(out, before[i])
	}
	out = append(out, after...)
	if len(out) == 0 || out[0].Position >= activeFrom {
		return out, nil
	}
	st, err := r.Standing()
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].SegmentID, out[i].Compaction = st.At(out[i].Position, activeFrom)
	}
	return out, nil
}
