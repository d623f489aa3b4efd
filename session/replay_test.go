package session_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
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
		case *session.ThoughtDeltaEvent:
			out = append(out, "thought:"+p.Text)
		case *session.DeltaEvent:
			out = append(out, "delta:"+p.Text)
		}
	}
	return out
}

// hasDelta reports whether evs hold a DeltaEvent.
func hasDelta(evs []session.Event) bool {
	for _, ev := range evs {
		if _, ok := ev.Payload.(*session.DeltaEvent); ok {
			return true
		}
	}
	return false
}

func itoa(n int64) string {
	if n < 0 {
		return "-"
	}
	return string(rune('0' + n%10)) // positions in these tests stay below 10
}

// A replayed compaction's result is the committed one, as the event log
// holds it: its Segment as committed, without the archived messages (they
// are the replayed messages before it; Segments has them).
func TestReplay_CompactionAsCommitted(t *testing.T) {
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
	got.CreatedAt, got.StartedAt = want.CreatedAt, want.StartedAt
	assert.Empty(t, got.Messages, "the archived messages are not carried again")
	want.Messages = nil
	assert.Equal(t, want, got)
	require.NotEmpty(t, res.Segment.Messages, "the published result keeps them")
	assert.NotEmpty(t, got.ID)
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
	assert.Equal(t, rep.Events[len(rep.Events)-1].Seq, rep.Through, "the cut is the last event's number: nothing was published after it")
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

	// After the sequence number of the message at position 2.
	from, err := s.Replay(context.Background(), session.ReplayOptions{After: rep.Events[3].Seq})
	require.NoError(t, err)
	defer from.Sub.Close()
	assert.Equal(t, []string{"msg:assistant@3", "compaction:finished@4", "msg:user@5", "msg:assistant@6"}, replayKinds(from.Events))

	_, err = s.Replay(context.Background(), session.ReplayOptions{After: math.MaxUint64})
	assert.ErrorIs(t, err, session.ErrInvalid)
	_, err = s.Replay(context.Background(), session.ReplayOptions{Buffer: -1})
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
	rec.until(t, hasDelta)
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

// An assistant message streaming at the cut whose reasoning streamed
// first is replayed with its reasoning so far, then its text so far, both
// under the ID it will be committed with.
func TestReplay_StreamingThoughts(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	gate := make(chan struct{})
	thoughts := []history.Thought{{Text: "Two and two ", Signature: "s"}, {Redacted: "x"}, {Text: "make four."}}
	fake.QueueTurn(providertest.Reply{Deltas: []string{"It is ", "4."}, Thoughts: thoughts, GateAfter: 1, Gate: gate})
	rec := record(t, s)
	turn := mustPrompt(t, s, "2+2?")
	rec.until(t, hasDelta)
	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	assert.Equal(t, []string{"msg:user@0", "thought:Two and two make four.", "delta:It is "}, replayKinds(rep.Events))
	close(gate)
	res := wait(t, turn)
	require.NoError(t, res.Err)
	require.Len(t, res.Messages, 2)
	require.Len(t, rep.Events, 4, "the message, its title, the reasoning, the text")
	assert.Equal(t, res.Messages[1].ID, rep.Events[2].Payload.(*session.ThoughtDeltaEvent).MessageID)

	// Once the message is committed, nothing of it is a draft any more.
	again, err := s.Replay(context.Background(), session.ReplayOptions{After: rep.Through})
	require.NoError(t, err)
	defer again.Sub.Close()
	assert.Equal(t, []string{"msg:assistant@1"}, replayKinds(again.Events))
}

// What a session keeps of a reasoning being streamed, for a Replay, is
// bounded as the text is: its first MaxDraft bytes.
func TestReplay_StreamingThoughtsBounded(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	gate := make(chan struct{})
	piece := strings.Repeat("r", 32<<10)
	thoughts := make([]history.Thought, 2*session.MaxDraft/len(piece)+1)
	for i := range thoughts {
		thoughts[i].Text = piece
	}
	fake.QueueTurn(providertest.Reply{Deltas: []string{"a", "b"}, Thoughts: thoughts, GateAfter: 1, Gate: gate})
	rec := record(t, s)
	turn := mustPrompt(t, s, "think")
	rec.until(t, hasDelta)
	rep, err := s.Replay(context.Background(), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	close(gate)
	require.NoError(t, wait(t, turn).Err)
	var kept *session.ThoughtDeltaEvent
	for _, ev := range rep.Events {
		if p, ok := ev.Payload.(*session.ThoughtDeltaEvent); ok {
			kept = p
		}
	}
	require.NotNil(t, kept)
	assert.Equal(t, strings.Repeat("r", session.MaxDraft), kept.Text, "the first MaxDraft bytes")
}

// TestReplay_SessionsStoredBeforeTheLogCovered: a session whose store
// file kept no coverage of its log (written before it did, so its column
// reads 0), one whose log is gone altogether (stored before the log
// existed), are replayed whole after their next open: every entry once, at
// its position, the compaction with its Segment.
func TestReplay_SessionsStoredBeforeTheLogCovered(t *testing.T) {
	for name, undo := range map[string]string{
		"log without coverage": `UPDATE sessions SET log_covers = 0`,
		"no log":               `DELETE FROM events; UPDATE sessions SET log_covers = 0`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			st, err := sqlite.Open(path)
			require.NoError(t, err)
			fake := providertest.New()
			s := newSession(t, fake, session.Config{Store: st})
			converse(t, s, fake, 2)
			fake.QueueSummary(providertest.Reply{Text: "S"})
			require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
			converse(t, s, fake, 1)
			id := s.ID()
			require.NoError(t, s.Close())
			require.NoError(t, st.Close())

			db, err := sql.Open("sqlite", path)
			require.NoError(t, err)
			_, err = db.Exec(undo)
			require.NoError(t, err)
			require.NoError(t, db.Close())

			want := []string{"msg:user@0", "msg:assistant@1", "msg:user@2", "msg:assistant@3", "compaction:finished@4", "msg:user@5", "msg:assistant@6"}
			for round := range 2 { // the second open finds the log complete
				st, err = sqlite.Open(path)
				require.NoError(t, err)
				s, err := session.Open(ctxT(t), session.Config{ID: id, Provider: fake, Store: st})
				require.NoError(t, err)
				rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
				require.NoError(t, err)
				rep.Sub.Close()
				assert.Equal(t, want, replayKinds(rep.Events), "open %d", round)
				fin := rep.Events[5].Payload.(*session.CompactionEvent)
				require.NotNil(t, fin.Result.Segment)
				assert.Equal(t, "S", fin.Result.Segment.Summary)
				assert.NotEmpty(t, fin.Result.Segment.ID, "the Segment as stored")
				assert.Empty(t, fin.Result.Segment.Messages, "without its archived messages")
				title, ok := rep.Events[1].Payload.(*session.SettingsEvent)
				require.True(t, ok, "the title right after the first message: %T", rep.Events[1].Payload)
				assert.Equal(t, []string{"Title"}, title.Changed)
				settings, _ := settingsEvents(rep.Events)
				assert.Len(t, settings, 1, "open %d: the title once", round)
				assert.Len(t, rep.Events, 8, "open %d: seven entries and the title", round)
				require.NoError(t, s.Close())
				snap, err := st.Load(ctxT(t), id)
				require.NoError(t, err)
				assert.EqualValues(t, 7, snap.LogCovers, "open %d: the log covers the timeline", round)
				require.NoError(t, st.Close())
			}
		})
	}
}

// failingLog is a store whose event log refuses every batch, so that a
// session keeps every durable event in memory, unlogged.
type failingLog struct{ *memstore.Store }

func (failingLog) LogEvents(context.Context, string, history.EventBatch) error {
	return errors.New("the log is down")
}

// TestReplay_UnloggedCompactionWithoutArchive: a compaction that only
// memory holds (its batch was not logged) is replayed as the log would
// give it: its Segment without the archived messages, the published event
// left as it is.
func TestReplay_UnloggedCompactionWithoutArchive(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: failingLog{memstore.New()}})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	fin, ok := rep.Events[len(rep.Events)-1].Payload.(*session.CompactionEvent)
	require.True(t, ok)
	require.NotNil(t, fin.Result.Segment)
	assert.Equal(t, res.Segment.ID, fin.Result.Segment.ID)
	assert.Empty(t, fin.Result.Segment.Messages, "without the archived messages")
	assert.NotEmpty(t, res.Segment.Messages, "the published result keeps them")
}

// Replay carries the context the provider last reported, which the event
// log does not hold: a subscriber that continues from the log learns it
// there. A compaction makes it stale until the next turn response: then
// it is the session's estimate (CompactResult.ContextAfter), marked as
// one.
func TestReplay_ContextTokens(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	n, est := contextOf(t, s)
	assert.Zero(t, n, "no response yet")
	assert.False(t, est)
	contextSteps(t, fake, func() *session.Session { return s }, func() (int, bool) { return contextOf(t, s) })
}

// contextOf is what Replay reports of s's context: ContextTokens and
// ContextEstimated.
func contextOf(t *testing.T, s *session.Session) (int, bool) {
	t.Helper()
	rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
	require.NoError(t, err)
	rep.Sub.Close()
	return rep.ContextTokens, rep.ContextEstimated
}

// contextSteps runs a conversation, a turn, a compaction and another turn
// on the session cur returns, and checks after each step what at reports
// (contextOf): the turn's figure, the compaction's estimate, the next
// turn's figure.
func contextSteps(t *testing.T, fake *providertest.Fake, cur func() *session.Session, at func() (int, bool)) {
	t.Helper()
	converse(t, cur(), fake, 2)
	fake.QueueTurn(providertest.Reply{Text: "sized", Usage: provider.Usage{InputTokens: 700, OutputTokens: 42}})
	wait(t, mustPrompt(t, cur(), "how big?"))
	n, est := at()
	assert.Equal(t, 742, n)
	assert.False(t, est)
	fake.QueueSummary(providertest.Reply{Text: "S", Usage: provider.Usage{InputTokens: 5000, OutputTokens: 3}})
	res := wait(t, mustCompact(t, cur(), ""))
	require.True(t, res.Compacted)
	require.Positive(t, res.ContextAfter)
	n, est = at()
	assert.Equal(t, res.ContextAfter, n, "stale after the compaction: the session's estimate")
	assert.True(t, est)
	fake.QueueTurn(providertest.Reply{Text: "again", Usage: provider.Usage{InputTokens: 300, OutputTokens: 1}})
	wait(t, mustPrompt(t, cur(), "and now?"))
	n, est = at()
	assert.Equal(t, 301, n)
	assert.False(t, est)
}

// TestReplay_OldMessageReferences: a log written before message
// references took their compact form (internal/logref) holds them as
// JSON, and replays the same: each message at its position with the Seq,
// time and turn it was logged with, beside references of the new form.
func TestReplay_OldMessageReferences(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	snap, err := store.Create(ctx, history.NewSession{ID: "old"})
	require.NoError(t, err)
	msgs := []history.Message{
		{ID: "u 1", Role: history.RoleUser, Text: "question"},
		{ID: "a1", Role: history.RoleAssistant, Text: "answer"},
		{ID: "u2", Role: history.RoleUser, Text: "next"},
	}
	_, err = store.Append(ctx, "old", snap.Version, msgs)
	require.NoError(t, err)
	at := time.Unix(1_700_000_000, 0)
	require.NoError(t, store.LogEvents(ctx, "old", history.EventBatch{Events: []history.LoggedEvent{
		{Seq: 1, Time: at, Kind: "message", Data: []byte(`{"position":0,"id":"u 1","turn_id":"t1"}`)},
		{Seq: 2, Time: at.Add(time.Second), Kind: "message", Data: []byte(`{"position":1,"id":"a1","turn_id":"t1"}`)},
		{Seq: 3, Time: at.Add(2 * time.Second), Kind: "message", Data: []byte(`2 2 u2t2`)},
	}, Through: 3, Covers: 3}))
	s, err := session.Open(ctx, session.Config{ID: "old", Provider: providertest.New(), Store: store})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	rep, err := s.Replay(ctx, session.ReplayOptions{})
	require.NoError(t, err)
	rep.Sub.Close()
	require.Len(t, rep.Events, 3)
	for i, ev := range rep.Events {
		m, ok := ev.Payload.(*session.MessageEvent)
		require.True(t, ok, "event %d: %T", i, ev.Payload)
		assert.Equal(t, msgs[i].ID, m.Message.ID)
		assert.Equal(t, msgs[i].Text, m.Message.Text)
		assert.Equal(t, int64(i), m.Position)
		assert.Equal(t, uint64(i+1), ev.Seq)
		assert.True(t, at.Add(time.Duration(i)*time.Second).Equal(ev.Time), "event %d time %v", i, ev.Time)
		assert.Equal(t, []string{"t1", "t1", "t2"}[i], m.TurnID)
	}
}

// TestReplay_ContextTokensAfterReopen: a session opened again (in every
// store) reports the context of its last turn response, from its usage
// ledger; after a compaction that came right after it, the compaction's
// estimate; after a turn after that, the turn's again. A fork's ledger is
// its own: it reports none until its first response.
func TestReplay_ContextTokensAfterReopen(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := newStore()
			fake := providertest.New()
			s := newSession(t, fake, session.Config{Store: store})
			t.Cleanup(func() { _ = s.Close() })
			id := s.ID()
			contextSteps(t, fake, func() *session.Session { return s }, func() (int, bool) {
				t.Helper()
				require.NoError(t, s.Close())
				var err error
				s, err = session.Open(ctxT(t), session.Config{ID: id, Provider: fake, Store: store})
				require.NoError(t, err)
				return contextOf(t, s)
			})

			f, err := session.Fork(ctxT(t), store, session.ForkRequest{From: id})
			require.NoError(t, err)
			fs, err := session.Open(ctxT(t), session.Config{ID: f.ID, Provider: fake, Store: store})
			require.NoError(t, err)
			t.Cleanup(func() { _ = fs.Close() })
			n, _ := contextOf(t, fs)
			assert.Zero(t, n, "a fork's ledger is its own")
		})
	}
}
