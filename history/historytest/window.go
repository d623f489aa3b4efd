package historytest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// window runs one window read that must succeed.
func window(t *testing.T, s history.Store, id, around string, before, after int) []history.WindowMessage {
	t.Helper()
	w, err := s.Window(context.Background(), id, history.WindowQuery{Around: around, Before: before, After: after})
	require.NoError(t, err, "window around %s (%d, %d)", around, before, after)
	return w
}

// windowMessages are the messages of a window, in order.
func windowMessages(w []history.WindowMessage) []history.Message {
	out := make([]history.Message, len(w))
	for i := range w {
		out[i] = w[i].Message
	}
	return out
}

// placedSession stores the session the window cases read: ten messages
// with a configuration record among them (positions are not the
// messages' numbers), a tool result whose call is two messages back, and
// three compactions of which the second is undone: c1 archives u0..t2,
// c3 (the third Segment) m3..m6, m7..m9 are Active. It returns the
// messages in order.
func placedSession(t *testing.T, s history.Store, id string) []history.Message {
	ctx := context.Background()
	call := text("a1", 1, "Let me read the file.")
	call.ToolCalls = []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"ledger.go"}`)}}
	msgs := []history.Message{
		text("u0", 0, "Read ledger.go"), call,
		{ID: "t2", Role: history.RoleTool, ToolCallID: "c1", Text: "package ledger", CreatedAt: t0},
	}
	for i := 3; i < 10; i++ {
		msgs = append(msgs, text(fmt.Sprintf("m%d", i), i, fmt.Sprintf("message %d", i)))
	}
	v := create(t, s, id)
	v = appendMsgs(t, s, id, v, msgs[:2])
	v = appendMsgs(t, s, id, v, msgs[2:3])
	v, _, err := s.RecordConfig(ctx, id, v, history.ConfigChange{Config: json.RawMessage(`{"k":2}`), Data: json.RawMessage(`{}`), At: t0})
	require.NoError(t, err)
	v = appendMsgs(t, s, id, v, msgs[3:])
	v, _ = compact(t, s, id, v, "c1", 3, "S1")
	v, _ = compact(t, s, id, v, "c2", 2, "S2")
	v, _, err = s.Uncompact(ctx, id, v, history.Uncompaction{ID: "undo", At: t0.Add(time.Hour)})
	require.NoError(t, err)
	compact(t, s, id, v, "c3", 4, "S3")
	return msgs
}

// testWindow: a window read returns the message and its neighbours,
// archived and Active alike, verbatim and in timeline order, fewer at the
// ends of the history; each says which Segment and which compaction
// archived it, and a tool result names its tool although the call lies
// outside the window. The newest of two messages with one ID is meant.
func testWindow(t *testing.T, h Harness) {
	s := h.New(t)
	msgs := placedSession(t, s, "s")
	s = h.reopen(t, s)

	w := window(t, s, "s", "m5", 2, 2)
	EqualMessages(t, msgs[3:8], windowMessages(w))
	for i, want := range []struct {
		seg string
		num int
	}{{"seg-c3", 3}, {"seg-c3", 3}, {"seg-c3", 3}, {"seg-c3", 3}, {"", 0}} {
		assert.Equal(t, want.seg, w[i].SegmentID, "the Segment of %s", w[i].Message.ID)
		assert.Equal(t, want.num, w[i].Compaction, "the compaction of %s", w[i].Message.ID)
	}
	for i := 1; i < len(w); i++ {
		assert.Greater(t, w[i].Position, w[i-1].Position, "timeline order")
	}

	w = window(t, s, "s", "t2", 0, 0)
	require.Len(t, w, 1)
	EqualMessages(t, msgs[2:3], windowMessages(w))
	assert.Equal(t, "read_file", w[0].ToolName, "the call is outside the window")
	assert.Equal(t, "seg-c1", w[0].SegmentID)
	assert.Equal(t, 1, w[0].Compaction)
	assert.Equal(t, int64(2), w[0].Position)
	assert.Equal(t, int64(4), window(t, s, "s", "m3", 0, 0)[0].Position, "the configuration record took position 3")

	EqualMessages(t, msgs[:2], windowMessages(window(t, s, "s", "u0", 5, 1)))
	EqualMessages(t, msgs[8:], windowMessages(window(t, s, "s", "m9", 1, 5)))
	EqualMessages(t, msgs, windowMessages(window(t, s, "s", "m5", history.MaxWindow, history.MaxWindow)))
	assert.Empty(t, window(t, s, "s", "u0", 0, 0)[0].ToolName, "a user message answers no tool")

	v, err := s.Load(context.Background(), "s")
	require.NoError(t, err)
	again := text("m5", 10, "a later message with the same ID")
	appendMsgs(t, s, "s", v.Version, []history.Message{again})
	w = window(t, s, "s", "m5", 1, 1)
	EqualMessages(t, []history.Message{msgs[9], again}, windowMessages(w))
}

// testWindowPlaces: for every message of the timeline, the window of just
// that message holds it at its timeline position, archived exactly when
// the timeline says so, with the number of its Segment in Segments.
func testWindowPlaces(t *testing.T, h Harness) {
	s := h.New(t)
	placedSession(t, s, "s")
	tl, err := s.Timeline(context.Background(), "s")
	require.NoError(t, err)
	seen := 0
	for _, e := range tl {
		if e.Message == nil {
			continue
		}
		seen++
		w := window(t, s, "s", e.Message.ID, 0, 0)
		require.Len(t, w, 1)
		EqualMessages(t, []history.Message{*e.Message}, windowMessages(w))
		assert.Equal(t, e.Position, w[0].Position, "the position of %s", e.Message.ID)
		assert.Equal(t, e.Archived, w[0].SegmentID != "", "whether %s is archived", e.Message.ID)
		assert.Equal(t, compactionOf(t, s, "s", w[0].SegmentID), w[0].Compaction, "the compaction of %s", e.Message.ID)
	}
	assert.Equal(t, 10, seen)
}

// testWindowInvalid: an unknown session is ErrNotFound; a message the
// session does not hold (another session's included) is ErrInvalid and
// ErrUnknownMessage; an empty Around or a Before or After outside
// 0..MaxWindow is ErrInvalid.
func testWindowInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	placedSession(t, s, "s")
	v := create(t, s, "other")
	appendMsgs(t, s, "other", v, []history.Message{text("o0", 0, "elsewhere")})

	_, err := s.Window(ctx, "missing", history.WindowQuery{Around: "m5"})
	assert.ErrorIs(t, err, history.ErrNotFound, "unknown session")
	for _, around := range []string{"nope", "o0", "M5", "m5 "} {
		_, err = s.Window(ctx, "s", history.WindowQuery{Around: around, Before: 1, After: 1})
		assert.ErrorIs(t, err, history.ErrInvalid, "message %q", around)
		assert.ErrorIs(t, err, history.ErrUnknownMessage, "message %q", around)
		assert.ErrorContains(t, err, fmt.Sprintf("%q", around), "the error names the message")
	}
	for _, q := range []history.WindowQuery{
		{},
		{Around: "m5", Before: -1},
		{Around: "m5", After: -1},
		{Around: "m5", Before: history.MaxWindow + 1},
		{Around: "m5", After: history.MaxWindow + 1},
	} {
		_, err = s.Window(ctx, "s", q)
		assert.ErrorIs(t, err, history.ErrInvalid, "%+v", q)
		assert.NotErrorIs(t, err, history.ErrUnknownMessage, "%+v", q)
	}
}
