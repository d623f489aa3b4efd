package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// replayKinds describes replayed events: "msg:<role>@<pos>",
// "compaction:<phase>@<pos>", "delta:<text>".
func replayKinds(evs []session.Event) []string {
	var out []string
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *session.MessageEvent:
			out = append(out, "msg:"+string(p.Message.Role)+"@"+itoa(p.Position))
		case *session.CompactionEvent:
			s := "compaction:" + string(p.Phase) + "@" + itoa(p.Position)
			if p.Phase == session.PhaseDelta {
				s += ":" + p.Delta
			}
			out = append(out, s)
		case *session.DeltaEvent:
			out = append(out, "delta:"+p.Text)
		}
	}
	return out
}

func itoa(n int64) string {
	if n < 0 {
		return "-"
	}
	return string(rune('0' + n%10)) // positions in these tests stay below 10
}

// A replayed compaction's Segment is the committed one as the record holds
// it: everything but what only the commit knows (Segment ID, usage,
// provider, context sizes) and the archived messages.
func TestReplay_CompactionSegmentFromRecord(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, "keep the names"))
	require.True(t, res.Compacted)

	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	fin, ok := rep.Events[len(rep.Events)-1].Payload.(*session.CompactionEvent)
	require.True(t, ok)
	require.NotNil(t, fin.Result.Segment)
	got, want := *fin.Result.Segment, *res.Segment
	assert.True(t, got.CreatedAt.Equal(want.CreatedAt), "CreatedAt %v, committed %v", got.CreatedAt, want.CreatedAt)
	assert.True(t, got.StartedAt.Equal(want.StartedAt), "StartedAt %v, committed %v", got.StartedAt, want.StartedAt)
	want = history.Segment{
		CompactID: want.CompactID, Trigger: want.Trigger, Summary: want.Summary, Instructions: want.Instructions,
		Position: want.Position, CreatedAt: got.CreatedAt, StartedAt: got.StartedAt,
	}
	assert.Equal(t, want, got)
	assert.Equal(t, history.TriggerManual, got.Trigger)
	assert.Equal(t, "keep the names", got.Instructions)
}

// Replay returns the stored timeline (messages and finished compactions at
// their positions) and a subscription that starts exactly after it.
func TestReplay_StoredTimelineThenLive(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2) // positions 0-3
	fake.QueueSummary(providertest.Reply{Text: "S"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted) // position 4

	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	assert.Equal(t, []string{"msg:user@0", "msg:assistant@1", "msg:user@2", "msg:assistant@3", "compaction:finished@4"}, replayKinds(rep.Events))
	assert.EqualValues(t, 5, rep.Next)
	assert.Empty(t, rep.Pending)
	// The title the first message gave the session comes right after it.
	require.Len(t, rep.Events, 6)
	title, ok := rep.Events[1].Payload.(*session.SettingsEvent)
	require.True(t, ok, "%T", rep.Events[1].Payload)
	assert.Equal(t, []string{"Title"}, title.Changed)
	fin := rep.Events[5].Payload.(*session.CompactionEvent)
	require.NotNil(t, fin.Result.Segment)
	assert.Equal(t, "S", fin.Result.Segment.Summary)
	assert.True(t, fin.Result.Compacted)

	// Live after the cut: the next prompt's messages, at the next positions.
	converse(t, s, fake, 1)
	var live []string
	for ev := range rep.Sub.Events() {
		if m, ok := ev.Payload.(*session.MessageEvent); ok {
			live = append(live, "msg:"+string(m.Message.Role)+"@"+itoa(m.Position))
			if len(live) == 2 {
				break
			}
		}
	}
	assert.Equal(t, []string{"msg:user@5", "msg:assistant@6"}, live)

	from, err := s.Replay(context.Background(), session.ReplayOptions{From: 3})
	require.NoError(t, err)
	defer from.Sub.Close()
	assert.Equal(t, []string{"msg:assistant@3", "compaction:finished@4", "msg:user@5", "msg:assistant@6"}, replayKinds(from.Events))

	_, err = s.Replay(context.Background(), session.ReplayOptions{From: -1})
	assert.ErrorIs(t, err, session.ErrInvalid)
}

// A compaction running at the cut is replayed as started, with the summary
// streamed so far; its end comes on the subscription, once.
func TestReplay_RunningCompaction(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	gate := make(chan struct{})
	fake.QueueSummary(providertest.Reply{Text: "so far, and the rest", Deltas: []string{"so far", ", and the rest"}, GateAfter: 1, Gate: gate})
	rec := record(t, s)
	h := mustCompact(t, s, "")
	rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseDelta {
				return true
			}
		}
		return false
	})
	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	assert.Equal(t, []string{"msg:user@0", "msg:assistant@1", "msg:user@2", "msg:assistant@3", "compaction:started@4", "compaction:delta@4:so far"}, replayKinds(rep.Events))
	assert.Equal(t, []string{h.ID()}, rep.Pending)
	close(gate)
	require.True(t, wait(t, h).Compacted)
	var live []session.Phase
	for ev := range rep.Sub.Events() {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok {
			live = append(live, c.Phase)
			if c.Phase == session.PhaseFinished {
				break
			}
		}
	}
	assert.Equal(t, []session.Phase{session.PhaseDelta, session.PhaseCommitting, session.PhaseFinished}, live, "the rest of the compaction, live")
}

// An assistant message streaming at the cut is replayed as one delta with
// its text so far, under the ID it will be committed with.
func TestReplay_StreamingMessage(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "Hello there", Deltas: []string{"Hello ", "there"}, GateAfter: 1, Gate: gate})
	rec := record(t, s)
	turn := mustPrompt(t, s, "hi")
	rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if _, ok := ev.Payload.(*session.DeltaEvent); ok {
				return true
			}
		}
		return false
	})
	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	assert.Equal(t, []string{"msg:user@0", "delta:Hello "}, replayKinds(rep.Events))
	assert.Equal(t, []string{turn.ID()}, rep.Pending)
	require.Len(t, rep.Events, 3, "the message, its title, the draft")
	draft := rep.Events[2].Payload.(*session.DeltaEvent)
	close(gate)
	res := wait(t, turn)
	require.NoError(t, res.Err)
	require.Len(t, res.Messages, 2)
	assert.Equal(t, res.Messages[1].ID, draft.MessageID, "the delta names the message it becomes")
	assert.Equal(t, history.RoleAssistant, res.Messages[1].Role)
}
