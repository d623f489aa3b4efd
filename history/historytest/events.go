package historytest

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

func loggedEvent(seq uint64, kind string) history.LoggedEvent {
	return history.LoggedEvent{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Kind: kind, Data: []byte(`{"n":` + string(rune('0'+seq%10)) + `}`)}
}

// testEventLog: logged events come back in order, from any point, across a
// reopen, with the last batch's Through in the snapshot; a log
// write is a write (version, conflicts).
func testEventLog(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	l := s
	v := create(t, s, "s")
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Zero(t, snap.LastSeq, "a new session has logged nothing")
	evs, err := l.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)

	first := []history.LoggedEvent{loggedEvent(1, "message"), loggedEvent(2, "turn"), loggedEvent(5, "usage")}
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: first, Through: 7}))
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "a log write leaves the version as it is")
	v = appendMsgs(t, s, "s", v, Msgs("m", 2)) // other writes leave the log as it is
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Through: 9}), "a batch may carry no events, only a Through")
	second := []history.LoggedEvent{loggedEvent(10, "message"), loggedEvent(12, "compaction")}
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: second, Through: 12}))
	_, err = s.Append(ctx, "s", v, Msgs("n", 1))
	require.NoError(t, err, "a log write does not make the session's next write conflict")

	for round := range 2 {
		all := append(append([]history.LoggedEvent(nil), first...), second...)
		evs, err := l.Events(ctx, "s", 0, 0)
		require.NoError(t, err)
		equalEvents(t, all, evs)
		evs, err = l.Events(ctx, "s", 2, 0)
		require.NoError(t, err)
		equalEvents(t, all[2:], evs)
		evs, err = l.Events(ctx, "s", 3, 2)
		require.NoError(t, err)
		equalEvents(t, all[2:4], evs, "limit bounds the events returned")
		evs, err = l.Events(ctx, "s", 12, 0)
		require.NoError(t, err)
		assert.Empty(t, evs)
		evs, err = l.Events(ctx, "s", math.MaxUint64, 0)
		require.NoError(t, err)
		assert.Empty(t, evs)
		snap, err := s.Load(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, uint64(12), snap.LastSeq, "round %d", round)
		s = h.reopen(t, s)
		l = s
	}
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(13, "turn")}, Through: 20}))
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(20), snap.LastSeq)

	_, err = l.Events(ctx, "nope", 0, 0)
	require.ErrorIs(t, err, history.ErrNotFound)
	require.ErrorIs(t, l.LogEvents(ctx, "nope", history.EventBatch{Through: 1}), history.ErrNotFound)
}

// testEventLogInvalid: a batch whose numbers do not increase, or whose
// Through is below them or below the recorded one, or an event without a
// kind, fails with ErrInvalid and writes nothing.
func testEventLogInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	l := s
	create(t, s, "s")
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(3, "turn")}, Through: 4}))
	for name, b := range map[string]history.EventBatch{
		"not above the recorded through": {Events: []history.LoggedEvent{loggedEvent(4, "turn")}, Through: 5},
		"not increasing":                 {Events: []history.LoggedEvent{loggedEvent(6, "turn"), loggedEvent(6, "usage")}, Through: 6},
		"decreasing":                     {Events: []history.LoggedEvent{loggedEvent(7, "turn"), loggedEvent(6, "usage")}, Through: 7},
		"through below an event":         {Events: []history.LoggedEvent{loggedEvent(8, "turn")}, Through: 7},
		"through below the recorded":     {Through: 3},
		"no kind":                        {Events: []history.LoggedEvent{loggedEvent(8, "")}, Through: 8},
		"beyond int64":                   {Events: []history.LoggedEvent{loggedEvent(math.MaxUint64, "turn")}, Through: math.MaxUint64},
		"negative covers":                {Events: []history.LoggedEvent{loggedEvent(8, "turn")}, Through: 8, Covers: -1},
	} {
		if err := l.LogEvents(ctx, "s", b); !errors.Is(err, history.ErrInvalid) {
			t.Errorf("%s: got %v, want history.ErrInvalid", name, err)
		}
	}
	evs, err := l.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	equalEvents(t, []history.LoggedEvent{loggedEvent(3, "turn")}, evs, "a refused batch writes nothing")
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), snap.LastSeq)
}

// testEventLogCovers: the highest Covers a batch gave is in the snapshot,
// across a reopen; a lower one, or a batch without one, leaves it; a
// new session's is 0.
func testEventLogCovers(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	l := s
	create(t, s, "s")
	covers := func() int64 {
		t.Helper()
		snap, err := s.Load(ctx, "s")
		require.NoError(t, err)
		return snap.LogCovers
	}
	assert.Zero(t, covers(), "a new session's log covers nothing")
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(1, "message")}, Through: 1, Covers: 3}))
	assert.Equal(t, int64(3), covers())
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Through: 2, Covers: 2}))
	assert.Equal(t, int64(3), covers(), "a lower Covers changes nothing")
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Through: 3}))
	assert.Equal(t, int64(3), covers(), "a batch without Covers changes nothing")
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Through: 4, Covers: 9}))
	s = h.reopen(t, s)
	l = s
	assert.Equal(t, int64(9), covers(), "after a reopen")
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), snap.LastSeq)
}

func equalEvents(t *testing.T, want, got []history.LoggedEvent, msg ...any) {
	t.Helper()
	require.Len(t, got, len(want), msg...)
	for i := range want {
		assert.Equal(t, want[i].Seq, got[i].Seq, msg...)
		assert.Equal(t, want[i].Kind, got[i].Kind, msg...)
		assert.Equal(t, string(want[i].Data), string(got[i].Data), msg...)
		assert.True(t, want[i].Time.Equal(got[i].Time), "event %d time %v, want %v", want[i].Seq, got[i].Time, want[i].Time)
	}
}
