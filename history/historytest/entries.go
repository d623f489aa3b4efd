package historytest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// entriesSession stores session "s" with every kind of entry: messages
// archived and Active, a completed compaction, an undone one with its
// uncompaction record, a failed attempt and a configuration change. It
// returns its timeline.
func entriesSession(t *testing.T, s history.Store) []history.Entry {
	t.Helper()
	ctx := context.Background()
	v := create(t, s, "s")
	msgs := Msgs("m", 10)
	v = appendMsgs(t, s, "s", v, msgs[:4])
	v, _ = compact(t, s, "s", v, "c1", 2, "S1")
	v, _, err := s.RecordConfig(ctx, "s", v, history.ConfigChange{Config: json.RawMessage(`{"k":2}`), Data: json.RawMessage(`{"n":1}`), At: t0})
	require.NoError(t, err)
	v = appendMsgs(t, s, "s", v, msgs[4:7])
	v, _ = compact(t, s, "s", v, "c2", 3, "S2")
	v, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	v, err = s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c3", Trigger: "manual", Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, "s", v, "c3", history.StatusFailed, "boom", t0.Add(time.Minute))
	require.NoError(t, err)
	appendMsgs(t, s, "s", v, msgs[7:])
	tl, err := s.Timeline(ctx, "s")
	require.NoError(t, err)
	return tl
}

// testEntries: Entries returns exactly the entries of Timeline in its
// range, as Timeline returns them, and with Records only the records; a
// range past the end or empty returns none.
func testEntries(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	tl := entriesSession(t, s)
	end := tl[len(tl)-1].Position + 1
	s = h.reopen(t, s)
	in := func(from, to int64, records bool) []history.Entry {
		var out []history.Entry
		for _, e := range tl {
			if e.Position >= from && (to == 0 || e.Position < to) && (!records || e.Message == nil) {
				out = append(out, e)
			}
		}
		return out
	}
	for _, q := range []history.EntryQuery{
		{}, {Records: true},
		{From: 0, To: end}, {From: 0, To: end + 100},
		{From: 3, To: 9}, {From: 3, To: 9, Records: true},
		{From: 5}, {From: 5, Records: true},
		{From: 1, To: 2}, {From: 4, To: 4}, {From: end}, {From: end + 5, To: end + 9},
	} {
		got, err := s.Entries(ctx, "s", q)
		require.NoError(t, err, "%+v", q)
		if want := in(q.From, q.To, q.Records); len(want) > 0 {
			assert.Equal(t, want, got, "%+v", q)
		} else {
			assert.Empty(t, got, "%+v", q)
		}
	}
	// Every entry once over batches of three positions.
	var all []history.Entry
	for from := int64(0); from < end; from += 3 {
		got, err := s.Entries(ctx, "s", history.EntryQuery{From: from, To: from + 3})
		require.NoError(t, err)
		all = append(all, got...)
	}
	assert.Equal(t, tl, all)
}

// testEntriesInvalid: Entries of an unknown session is ErrNotFound; a
// negative From or To, or a To below From, is ErrInvalid naming the field.
func testEntriesInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	create(t, s, "s")
	_, err := s.Entries(ctx, "nope", history.EntryQuery{})
	assert.ErrorIs(t, err, history.ErrNotFound)
	for q, field := range map[history.EntryQuery]string{
		{From: -1}:                      "From",
		{To: -1}:                        "To",
		{From: 5, To: 4}:                "To",
		{From: -3, To: -1}:              "From",
		{From: 2, To: 1, Records: true}: "To",
	} {
		_, err := s.Entries(ctx, "s", q)
		assert.ErrorIs(t, err, history.ErrInvalid, "%+v", q)
		assert.ErrorContains(t, err, field, "%+v", q)
	}
	_, err = s.SegmentHeaders(ctx, "nope")
	assert.ErrorIs(t, err, history.ErrNotFound)
}

// testSegmentHeaders: SegmentHeaders returns what Segments does, in the
// same order, without the messages; none for a session without Segments.
func testSegmentHeaders(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	entriesSession(t, s)
	create(t, s, "empty")
	s = h.reopen(t, s)
	segs, err := s.Segments(ctx, "s")
	require.NoError(t, err)
	require.Len(t, segs, 2)
	heads, err := s.SegmentHeaders(ctx, "s")
	require.NoError(t, err)
	for i := range segs {
		require.NotEmpty(t, segs[i].Messages)
		segs[i].Messages = nil
	}
	assert.Equal(t, segs, heads)
	assert.True(t, heads[1].Undone(), "the undone Segment is there, marked")
	heads, err = s.SegmentHeaders(ctx, "empty")
	require.NoError(t, err)
	assert.Empty(t, heads)
}
