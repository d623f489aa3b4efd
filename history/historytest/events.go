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

// eventLog returns s as a history.EventLog, or skips the test.
func eventLog(t *testing.T, s history.Store) history.EventLog {
	t.Helper()
	l, ok := s.(history.EventLog)
	if !ok {
		t.Skip("the store is no history.EventLog")
	}
	return l
}

func loggedEvent(seq uint64, kind string) history.LoggedEvent {
	return history.LoggedEvent{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Kind: kind, Data: []byte(`{"n":` + string(rune('0'+seq%10)) + `}`)}
}

// testEventLog: logged events come back in order, from any point, across a
// reopen, with the last batch's Through and Final in the snapshot; a log
// write is a write (version, conflicts).
func testEventLog(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	l := eventLog(t, s)
	v := create(t, s, "s")
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Zero(t, snap.LastSeq, "a new session has logged nothing")
	assert.False(t, snap.SeqFinal)
	evs, err := l.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)

	first := []history.LoggedEvent{loggedEvent(1, "message"), loggedEvent(2, "turn"), loggedEvent(5, "usage")}
	v2, err := l.LogEvents(ctx, "s", v, history.EventBatch{Events: first, Through: 7})
	require.NoError(t, err)
	assert.Equal(t, v+1, v2, "a log write advances the version")
	_, err = l.LogEvents(ctx, "s", v, history.EventBatch{Events: []history.LoggedEvent{loggedEvent(8, "turn")}, Through: 8})
	require.ErrorIs(t, err, history.ErrConflict, "a log write at a stale version conflicts")
	v = v2
	v = appendMsgs(t, s, "s", v, Msgs("m", 2)) // other writes leave the log as it is
	v, err = l.LogEvents(ctx, "s", v, history.EventBatch{Through: 9})
	require.NoError(t, err, "a batch may carry no events, only a Through")
	second := []history.LoggedEvent{loggedEvent(10, "message"), loggedEvent(12, "compaction")}
	_, err = l.LogEvents(ctx, "s", v, history.EventBatch{Events: second, Through: 12, Final: true})
	require.NoError(t, err)

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
		assert.True(t, snap.SeqFinal, "round %d", round)
		s = h.reopen(t, s)
		l = eventLog(t, s)
	}
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	_, err = l.LogEvents(ctx, "s", snap.Version, history.EventBatch{Events: []history.LoggedEvent{loggedEvent(13, "turn")}, Through: 20})
	require.NoError(t, err)
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(20), snap.LastSeq)
	assert.False(t, snap.SeqFinal, "a later batch that is not final clears Final")

	_, err = l.Events(ctx, "nope", 0, 0)
	require.ErrorIs(t, err, history.ErrNotFound)
	_, err = l.LogEvents(ctx, "nope", 1, history.EventBatch{Through: 1})
	require.ErrorIs(t, err, history.ErrNotFound)
}

// testEventLogInvalid: a batch whose numbers do not increase, or whose
// Through is below them or below the recorded one, or an event without a
// kind, fails with ErrInvalid and writes nothing.
func testEventLogInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	l := eventLog(t, s)
	v := create(t, s, "s")
	v, err := l.LogEvents(ctx, "s", v, history.EventBatch{Events: []history.LoggedEvent{loggedEvent(3, "turn")}, Through: 4})
	require.NoError(t, err)
	for name, b := range map[string]history.EventBatch{
		"not above the recorded through": {Events: []history.LoggedEvent{loggedEvent(4, "turn")}, Through: 5},
		"not increasing":                 {Events: []history.LoggedEvent{loggedEvent(6, "turn"), loggedEvent(6, "usage")}, Through: 6},
		"decreasing":                     {Events: []history.LoggedEvent{loggedEvent(7, "turn"), loggedEvent(6, "usage")}, Through: 7},
		"through below an event":         {Events: []history.LoggedEvent{loggedEvent(8, "turn")}, Through: 7},
		"through below the recorded":     {Through: 3},
		"no kind":                        {Events: []history.LoggedEvent{loggedEvent(8, "")}, Through: 8},
		"beyond int64":                   {Events: []history.LoggedEvent{loggedEvent(math.MaxUint64, "turn")}, Through: math.MaxUint64},
	} {
		_, err := l.LogEvents(ctx, "s", v, b)
		if !errors.Is(err, history.ErrInvalid) {
			t.Errorf("%s: got %v, want history.ErrInvalid", name, err)
		}
	}
	evs, err := l.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	equalEvents(t, []history.LoggedEvent{loggedEvent(3, "turn")}, evs, "a refused batch writes nothing")
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(4), snap.LastSeq)
	assert.Equal(t, v, snap.Version, "a refused batch leaves the version")
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
