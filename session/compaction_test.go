package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

func summaryCalls(fake *providertest.Fake) []provider.Request {
	var out []provider.Request
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			out = append(out, r)
		}
	}
	return out
}

func purposes(fake *providertest.Fake) []string {
	var out []string
	for _, r := range fake.Requests() {
		out = append(out, string(r.Purpose))
	}
	return out
}

// TestCompact_2_6_IdleRunsAtOnceWithoutTurn: Compact on an idle session runs
// right away, makes exactly one (summary) model call and starts no turn.
func TestCompact_2_6_IdleRunsAtOnceWithoutTurn(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Text: "summary", Deltas: []string{"sum", "mary"}, Usage: provider.Usage{InputTokens: 40, OutputTokens: 2}})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	assert.True(t, res.Success)
	assert.True(t, res.Compacted)
	assert.Equal(t, []string{"turn", "turn", "summary"}, purposes(fake))
	evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) == 6 })
	for _, ev := range evs {
		_, isTurn := ev.Payload.(*session.TurnEvent)
		assert.False(t, isTurn, "a compaction never creates a turn")
	}
}

// TestCompact_4_2_NothingToCompact: k = 0 gives a successful
// nothing_to_compact with an explanatory completed action and no model call.
func TestCompact_4_2_NothingToCompact(t *testing.T) {
	for _, prompts := range []int{0, 1} {
		fake := providertest.New()
		s := newSession(t, fake, session.Config{})
		if prompts == 1 {
			// One user message only: the provider fails, n = 1.
			fake.QueueTurn(providertest.Reply{Err: errors.New("down")})
			wait(t, mustPrompt(t, s, "only me"))
		}
		rec := record(t, s)
		calls := len(fake.Requests())
		h := mustCompact(t, s, "")
		res := wait(t, h)
		assert.Equal(t, session.CompactResult{CompactID: h.ID(), Success: true, Reason: session.ReasonNothingToCompact, Trigger: session.TriggerManual}, res)
		assert.Len(t, fake.Requests(), calls, "no model call")
		evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) == 2 })
		assert.Equal(t, []session.Phase{session.PhaseQueued, session.PhaseFinished}, phases(evs, h.ID()))
		assert.Equal(t, []session.ActionStatus{session.ActionCompleted}, actions(evs))
		for _, ev := range evs {
			if a, ok := ev.Payload.(*session.ActionEvent); ok {
				assert.Contains(t, a.Text, "Nothing to compact")
				assert.Equal(t, h.ID(), a.CompactID)
			}
		}
		segs, err := s.Segments(ctxT(t))
		require.NoError(t, err)
		assert.Empty(t, segs)
		tl, err := s.Store().Timeline(ctxT(t), s.ID())
		require.NoError(t, err)
		last := tl[len(tl)-1]
		require.NotNil(t, last.Compaction)
		assert.Equal(t, history.StatusNothingToCompact, last.Compaction.Status)
	}
}

// TestCompact_4_3_PrefixIsOldestHalf: floor(n/2) oldest user and assistant
// messages and the tool results among them.
func TestCompact_4_3_PrefixIsOldestHalf(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{Text: "a1", ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}},
		providertest.Reply{Text: "a2"},
		providertest.Reply{Text: "a3"},
	)
	s := newSession(t, fake, session.Config{Tools: []session.Tool{echoTool()}})
	wait(t, mustPrompt(t, s, "u1"))
	wait(t, mustPrompt(t, s, "u2"))
	// Active: u1 a1(call) tool a2 u2 a3: n = 5, k = 2: prefix u1 a1 tool.
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	assert.Equal(t, []string{"user:u1", "assistant:a1", "tool:echo {}"}, texts(res.Segment.Messages))
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"assistant:a2", "user:u2", "assistant:a3"}, texts(active))
}

// TestCompact_4_4_ExactlyOneSummaryCall checks the summary request: one
// call, previous summary and transcript and instructions in, the session's
// system prompt and tools out.
func TestCompact_4_4_ExactlyOneSummaryCall(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{SystemPrompt: "SECRET SYSTEM PROMPT", Tools: []session.Tool{echoTool()}, CompactInstructions: "keep file names"})
	converse(t, s, fake, 4)
	fake.QueueSummary(providertest.Reply{Text: "first summary"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueSummary(providertest.Reply{Text: "second summary"})
	require.True(t, wait(t, mustCompact(t, s, "focus on tests")).Compacted)

	sums := summaryCalls(fake)
	require.Len(t, sums, 2, "exactly one summary call per compaction")
	for _, r := range sums {
		assert.Equal(t, compact.SystemPrompt(), r.System)
		assert.Empty(t, r.Tools)
		assert.Empty(t, r.Summary)
		require.Len(t, r.Messages, 1)
		assert.NotContains(t, r.Messages[0].Text, "SECRET SYSTEM PROMPT")
		assert.NotContains(t, r.Messages[0].Text, "echo")
		assert.Contains(t, r.Messages[0].Text, "keep file names")
	}
	first, second := sums[0].Messages[0].Text, sums[1].Messages[0].Text
	assert.Contains(t, first, "[user] prompt a\n[assistant] reply a\n[user] prompt b\n[assistant] reply b")
	assert.NotContains(t, first, "prompt c")
	assert.NotContains(t, first, "<previous-summary>")
	assert.Contains(t, second, "<previous-summary>\nfirst summary\n</previous-summary>")
	assert.Contains(t, second, "[user] prompt c")
	assert.Contains(t, second, "focus on tests")
	assert.NotContains(t, second, "prompt a")
}

// TestCompact_4_4_DeltasStream: summary deltas reach the timeline as they
// arrive.
func TestCompact_4_4_DeltasStream(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 1)
	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Deltas: []string{"Sum", "ma", "ry"}})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	require.True(t, res.Compacted)
	assert.Equal(t, "Summary", res.Segment.Summary)
	evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) == 7 })
	var deltas []string
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseDelta {
			deltas = append(deltas, c.Delta)
			assert.False(t, c.Durable())
		}
	}
	assert.Equal(t, []string{"Sum", "ma", "ry"}, deltas)
	assert.Equal(t, []session.Phase{session.PhaseQueued, session.PhaseStarted, session.PhaseDelta, session.PhaseDelta, session.PhaseDelta, session.PhaseCommitting, session.PhaseFinished}, phases(evs, h.ID()))
}

// TestCompact_4_5_EmptySummaryCommitsNothing: empty or whitespace summary
// and a provider error give compact_failed, no running action, history
// unchanged.
func TestCompact_4_5_EmptySummaryCommitsNothing(t *testing.T) {
	cases := map[string]providertest.Reply{
		"empty":      {Text: ""},
		"whitespace": {Text: " \n\t "},
		"error":      {Err: errors.New("summary model unavailable")},
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			fake := providertest.New()
			s := newSession(t, fake, session.Config{})
			converse(t, s, fake, 2)
			before, err := s.Active(ctxT(t))
			require.NoError(t, err)
			rec := record(t, s)
			fake.QueueSummary(reply)
			h := mustCompact(t, s, "")
			res := wait(t, h)
			assert.False(t, res.Success)
			assert.False(t, res.Compacted)
			assert.Equal(t, session.ReasonCompactFailed, res.Reason)
			assert.NotEmpty(t, res.Error)
			assert.False(t, res.Cancelled)
			assert.Nil(t, res.Segment)
			if name == "error" {
				assert.Contains(t, res.Error, "summary model unavailable")
			} else {
				assert.Contains(t, res.Error, compact.ErrEmptySummary.Error())
			}
			after, err := s.Active(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, texts(before), texts(after))
			sum, err := s.Summary(ctxT(t))
			require.NoError(t, err)
			assert.Empty(t, sum, "no fallback summary")
			segs, err := s.Segments(ctxT(t))
			require.NoError(t, err)
			assert.Empty(t, segs)
			evs := rec.until(t, func(evs []session.Event) bool {
				p := phases(evs, h.ID())
				return len(p) > 0 && p[len(p)-1] == session.PhaseFinished
			})
			assert.Empty(t, actions(evs), "the canonical commit never started")
			assert.NotContains(t, phases(evs, h.ID()), session.PhaseCommitting)
			tl, err := s.Store().Timeline(ctxT(t), s.ID())
			require.NoError(t, err)
			assert.Equal(t, history.StatusFailed, tl[len(tl)-1].Compaction.Status)
		})
	}
}

// TestCompact_4_6_CommitFailureFailedAction: a store whose commit fails gives
// running then failed actions, compact_failed, and unchanged history.
func TestCompact_4_6_CommitFailureFailedAction(t *testing.T) {
	fake := providertest.New()
	store := &faultStore{Store: memstore.New()}
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 2)
	before, err := s.Active(ctxT(t))
	require.NoError(t, err)
	store.set(func(f *faultStore) { f.failCommit = errDisk })
	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Text: "a fine summary"})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.False(t, res.Success)
	assert.Contains(t, res.Error, errDisk.Error())
	evs := rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionFailed}, actions(evs))
	after, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(after))
	snap, err := store.Load(ctxT(t), s.ID())
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(snap.Active), "memory equals the store")
	assert.Empty(t, snap.Summary)

	// The session keeps working, and the next compaction succeeds.
	store.set(func(f *faultStore) { f.failCommit = nil })
	fake.QueueSummary(providertest.Reply{Text: "second try"})
	assert.True(t, wait(t, mustCompact(t, s, "")).Compacted)
}

// TestCompact_4_6_Success: running then completed actions, the Segment in
// the result, Active and the retained summary replaced in one commit.
func TestCompact_4_6_Success(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 3)
	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Text: "  the retained summary \n", Usage: provider.Usage{InputTokens: 99, OutputTokens: 7}})
	h := mustCompact(t, s, "be short")
	res := wait(t, h)
	require.True(t, res.Compacted)
	assert.Equal(t, h.ID(), res.CompactID)
	assert.Equal(t, session.ReasonCompacted, res.Reason)
	assert.Equal(t, session.TriggerManual, res.Trigger)
	assert.Empty(t, res.Error)
	assert.Equal(t, provider.Usage{InputTokens: 99, OutputTokens: 7}, res.Usage)
	require.NotNil(t, res.Segment)
	assert.Equal(t, "the retained summary", res.Segment.Summary)
	assert.Equal(t, "be short", res.Segment.Instructions)
	assert.Equal(t, h.ID(), res.Segment.CompactID)
	// n = 6, k = 3.
	assert.Equal(t, []string{"user:prompt a", "assistant:reply a", "user:prompt b"}, texts(res.Segment.Messages))
	evs := rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionCompleted}, actions(evs))
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "the retained summary", sum)
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, res.Segment.ID, segs[0].ID)
}

// commitGate is a store whose CommitCompaction waits for release once it
// has been entered.
type commitGate struct {
	history.Store
	entered chan struct{}
	release chan struct{}
}

func (g *commitGate) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	close(g.entered)
	<-g.release
	return g.Store.CommitCompaction(ctx, id, v, c)
}

// TestCompact_4_6_RunningWhileCommitting: the running action and the
// committing phase are published before the canonical commit, while it is
// under way; the completed action after it.
func TestCompact_4_6_RunningWhileCommitting(t *testing.T) {
	fake := providertest.New()
	store := &commitGate{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	s := newSession(t, fake, session.Config{Store: store})
	release := sync.OnceFunc(func() { close(store.release) })
	t.Cleanup(release) // before the session closes: Close waits for the commit
	converse(t, s, fake, 2)
	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Text: "summary"})
	h := mustCompact(t, s, "")
	<-store.entered
	evs := rec.until(t, func(evs []session.Event) bool {
		p := phases(evs, h.ID())
		return len(p) > 0 && p[len(p)-1] == session.PhaseCommitting
	})
	assert.Equal(t, []session.ActionStatus{session.ActionRunning}, actions(evs))
	assert.Nil(t, h.Result())
	release()
	require.True(t, wait(t, h).Compacted)
	evs = rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionCompleted}, actions(evs))
}

// TestCompact_4_7_MidTurnAtCheckpoint: a compact queued during a turn runs at
// the next step checkpoint; calls go turn, summary, turn; the next request is
// built from the compacted history.
func TestCompact_4_7_MidTurnAtCheckpoint(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	s := newSession(t, fake, session.Config{SystemPrompt: "sys", Tools: []session.Tool{blockTool(started, release)}})
	converse(t, s, fake, 2)
	fake.QueueTurn(
		providertest.Reply{Text: "working", ToolCalls: []history.ToolCall{call("c1", "block", `{}`)}},
		providertest.Reply{Text: "finished"},
	)
	fake.QueueSummary(providertest.Reply{Text: "SUMMARY"})
	turn := mustPrompt(t, s, "do it")
	<-started
	h := mustCompact(t, s, "")
	assert.Nil(t, h.Result())
	close(release)
	res := wait(t, h)
	require.True(t, res.Compacted)
	tr := wait(t, turn)
	require.NoError(t, tr.Err)
	assert.Equal(t, []string{"turn", "turn", "turn", "summary", "turn"}, purposes(fake))

	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "sys", last.System)
	assert.Equal(t, "SUMMARY", last.Summary)
	// Active before: 4 + user, assistant(working, call), tool = 7, n = 6, k = 3.
	assert.Equal(t, []string{"assistant:reply b", "user:do it", "assistant:working", "tool:released"}, texts(last.Messages))
	// The assistant draft was closed before compaction: the later text is a
	// new message.
	assert.Equal(t, []string{"user:do it", "assistant:working", "tool:released", "assistant:finished"}, texts(tr.Messages))
	assert.NotEqual(t, tr.Messages[1].ID, tr.Messages[3].ID)
}

// TestCompact_2_5_QueuedInTurnEndingRunsAtTurnEnd: a compact queued during
// a turn that ends without another checkpoint runs at the end of that turn,
// without any further prompt, before the turn's Handle finishes.
func TestCompact_2_5_QueuedInTurnEndingRunsAtTurnEnd(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 1)
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "last step", Gate: gate})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	turn := mustPrompt(t, s, "final")
	require.NoError(t, fake.WaitCalls(ctxT(t), 2))
	h := mustCompact(t, s, "")
	close(gate)
	res := wait(t, h)
	assert.True(t, res.Compacted)
	tr := wait(t, turn)
	require.NoError(t, tr.Err)
	assert.Equal(t, []string{"turn", "turn", "summary"}, purposes(fake))
}

// TestCompact_2_2_QueueOrderWithSteerAndConfigure: a steer queued before a
// compact is applied before it; a configure queued after it, after it.
func TestCompact_2_2_QueueOrderWithSteerAndConfigure(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release)}})
	converse(t, s, fake, 1)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "block", `{}`)}}, providertest.Reply{Text: "end"})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	turn := mustPrompt(t, s, "go")
	<-started
	steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "steer first"})
	require.NoError(t, err)
	h := mustCompact(t, s, "")
	sys := "configured after"
	conf, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys})
	require.NoError(t, err)
	close(release)
	require.NoError(t, wait(t, turn).Err)
	require.NoError(t, wait(t, steer).Err)
	require.NoError(t, wait(t, conf).Err)
	res := wait(t, h)
	require.True(t, res.Compacted)
	// Active at the compaction: u a u a(call) tool steer: n = 5, k = 2.
	assert.Equal(t, []string{"user:prompt a", "assistant:reply a"}, texts(res.Segment.Messages))
	sums := summaryCalls(fake)
	require.Len(t, sums, 1)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "configured after", last.System)
	assert.Equal(t, []string{"user:go", "assistant:", "tool:released", "steer:steer first"}, texts(last.Messages))
}

// TestCompact_4_8_CancelBeforeCommit: Handle.Cancel during the summary call
// gives compact_failed with a cancellation and unchanged history; a queued
// compaction cancelled never runs.
func TestCompact_4_8_CancelBeforeCommit(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueSummary(providertest.Reply{Text: "never", Gate: gate})
	rec := record(t, s)
	h := mustCompact(t, s, "")
	queued := mustCompact(t, s, "")
	require.NoError(t, fake.WaitCalls(ctxT(t), 3))
	queued.Cancel()
	qres := wait(t, queued)
	assert.True(t, qres.Cancelled)
	assert.Equal(t, session.ReasonCompactFailed, qres.Reason)
	h.Cancel()
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.True(t, res.Cancelled)
	assert.Equal(t, session.ErrCancelled.Error(), res.Error)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Len(t, active, 4)
	evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) == 3 })
	assert.Empty(t, actions(evs))
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary))
	tl, err := s.Store().Timeline(ctxT(t), s.ID())
	require.NoError(t, err)
	assert.Equal(t, history.StatusCancelled, tl[len(tl)-1].Compaction.Status)
}

// TestCompact_4_8_CloseDuringCompaction: Close cancels a running compaction
// and finishes its Handle.
func TestCompact_4_8_CloseDuringCompaction(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueSummary(providertest.Reply{Text: "never", Gate: gate})
	h := mustCompact(t, s, "")
	require.NoError(t, fake.WaitCalls(ctxT(t), 3))
	require.NoError(t, s.Close())
	res := h.Result()
	require.NotNil(t, res, "finished by Close")
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.True(t, res.Cancelled)
	assert.Equal(t, session.ErrClosed.Error(), res.Error)
	snap, err := s.Store().Load(ctxT(t), s.ID())
	require.NoError(t, err)
	assert.Len(t, snap.Active, 4)
	assert.Empty(t, snap.Interrupted, "the cancellation was recorded")
}

// TestCompact_4_10_RequestAfterCompaction: system prompt, retained summary,
// then Active.
func TestCompact_4_10_RequestAfterCompaction(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{SystemPrompt: "sys"})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	wait(t, mustPrompt(t, s, "next"))
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "sys", last.System)
	assert.Equal(t, "S1", last.Summary)
	assert.Equal(t, []string{"user:prompt b", "assistant:reply b", "user:next"}, texts(last.Messages))
}

// TestCompact_5_5_InterruptedRecordedOnReopen: a compaction left in progress
// in the store is recorded as failed (interrupted) when the session reopens.
func TestCompact_5_5_InterruptedRecordedOnReopen(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "x", Store: store})
	converse(t, s, fake, 2)
	require.NoError(t, s.Close())
	snap, err := store.Load(ctxT(t), "x")
	require.NoError(t, err)
	_, err = store.BeginCompaction(ctxT(t), "x", snap.Version, history.CompactionRecord{CompactID: "lost", Trigger: "manual", Status: history.StatusInProgress})
	require.NoError(t, err)

	newSession(t, fake, session.Config{ID: "x", Store: store})
	tl, err := store.Timeline(ctxT(t), "x")
	require.NoError(t, err)
	c := tl[len(tl)-1].Compaction
	require.NotNil(t, c)
	assert.Equal(t, history.StatusFailed, c.Status)
	assert.Equal(t, history.InterruptedError, c.Error)
}

// TestAuto_3_TriggersOnceAndDoesNotLoop: reported usage over the threshold
// queues one automatic compaction at the next checkpoint; usage is stale
// after it, so it does not trigger again until a fresh report.
func TestAuto_3_TriggersOnceAndDoesNotLoop(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{AutoCompactTokens: 100, Tools: []session.Tool{echoTool()}})
	converse(t, s, fake, 2) // usage 25 then 25 (<100)
	rec := record(t, s)
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}, Usage: provider.Usage{InputTokens: 90, OutputTokens: 20}},
		providertest.Reply{Text: "done", Usage: provider.Usage{InputTokens: 40, OutputTokens: 10}},
	)
	fake.QueueSummary(providertest.Reply{Text: "AUTO"})
	tr := wait(t, mustPrompt(t, s, "big"))
	require.NoError(t, tr.Err)
	assert.Equal(t, []string{"turn", "turn", "turn", "summary", "turn"}, purposes(fake))
	evs := rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	var results []*session.CompactResult
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
			results = append(results, c.Result)
			assert.Equal(t, session.TriggerAuto, c.Trigger)
		}
	}
	require.Len(t, results, 1)
	assert.True(t, results[0].Compacted)
	assert.Equal(t, session.TriggerAuto, results[0].Trigger)
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, session.TriggerAuto, segs[0].Trigger)
	assert.Equal(t, "AUTO", fake.Requests()[4].Summary, "the next step uses the new summary")
}

// TestAuto_3_3_NoRetryUntilNewMessages: an automatic compaction that failed
// is not retried until messages are appended; nothing_to_compact likewise.
func TestAuto_3_3_NoRetryUntilNewMessages(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{AutoCompactTokens: 10})
	fake.QueueTurn(providertest.Reply{Text: "r", Usage: provider.Usage{InputTokens: 50, OutputTokens: 5}})
	fake.QueueSummary(providertest.Reply{Err: errors.New("no")})
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary))
	// A manual compaction does not clear the block, and idle time does not retry.
	fake.QueueSummary(providertest.Reply{Err: errors.New("no again")})
	wait(t, mustCompact(t, s, ""))
	assert.Equal(t, 2, fake.Calls(provider.PurposeSummary))
	// New messages and a fresh report: it runs again.
	fake.QueueTurn(providertest.Reply{Text: "r2", Usage: provider.Usage{InputTokens: 60, OutputTokens: 5}})
	fake.QueueSummary(providertest.Reply{Text: "ok"})
	require.NoError(t, wait(t, mustPrompt(t, s, "p2")).Err)
	assert.Equal(t, 3, fake.Calls(provider.PurposeSummary))
}

// TestAuto_3_4_ConfigureAndRatio: threshold 0 disables; Configure turns it
// on; a fraction of the context window works too.
func TestAuto_3_4_ConfigureAndRatio(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	fake.SetDefault(func(r *provider.Request) providertest.Reply {
		if r.Purpose == provider.PurposeSummary {
			return providertest.Reply{Text: "S"}
		}
		return providertest.Reply{Text: "r", Usage: provider.Usage{InputTokens: 500, OutputTokens: 10}}
	})
	for range 3 {
		require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	}
	assert.Zero(t, fake.Calls(provider.PurposeSummary), "threshold 0 is off")
	thr := 400
	h, err := s.Configure(context.Background(), session.ConfigureRequest{AutoCompactTokens: &thr})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary))

	off, window, ratio := 0, 1000, 0.9
	h, err = s.Configure(context.Background(), session.ConfigureRequest{AutoCompactTokens: &off, ContextWindow: &window, AutoCompactRatio: &ratio})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary), "510 < 900")
	ratio = 0.5
	h, err = s.Configure(context.Background(), session.ConfigureRequest{AutoCompactRatio: &ratio})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 2, fake.Calls(provider.PurposeSummary), "510 >= 500")
}

// TestCompact_4_6_CommitLandedButReportedFailed: a store that commits and
// then reports an error (a lost acknowledgement). The session reads the
// store back, sees the commit, and reports compacted; memory equals the
// store.
func TestCompact_4_6_CommitLandedButReportedFailed(t *testing.T) {
	fake := providertest.New()
	store := &faultStore{Store: memstore.New()}
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 2)
	store.set(func(f *faultStore) { f.failCommit, f.afterWrite = errDisk, true })
	fake.QueueSummary(providertest.Reply{Text: "landed"})
	res := wait(t, mustCompact(t, s, ""))
	assert.True(t, res.Compacted, res.Error)
	require.NotNil(t, res.Segment)
	assert.Equal(t, "landed", res.Segment.Summary)
	assert.Len(t, res.Segment.Messages, 2)
	sameAsStore(t, s)
	store.set(func(f *faultStore) { f.failCommit = nil })
	fake.QueueTurn(providertest.Reply{Text: "after"})
	require.NoError(t, wait(t, mustPrompt(t, s, "next")).Err)
	sameAsStore(t, s)
}

// TestStoreFaults_MemoryEqualsStore: appends and compaction records that
// fail before or after landing leave the session equal to its store.
func TestStoreFaults_MemoryEqualsStore(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := "before"
		if after {
			name = "after"
		}
		t.Run("append "+name, func(t *testing.T) {
			fake := providertest.New()
			store := &faultStore{Store: memstore.New()}
			s := newSession(t, fake, session.Config{Store: store})
			converse(t, s, fake, 1)
			store.set(func(f *faultStore) { f.failAppend, f.afterWrite = errDisk, after })
			fake.QueueTurn(providertest.Reply{Text: "r"})
			res := wait(t, mustPrompt(t, s, "p"))
			if after {
				assert.NoError(t, res.Err, "every append landed")
			} else {
				assert.ErrorIs(t, res.Err, errDisk)
			}
			sameAsStore(t, s)
			store.set(func(f *faultStore) { f.failAppend = nil })
			fake.QueueTurn(providertest.Reply{Text: "again"})
			require.NoError(t, wait(t, mustPrompt(t, s, "again")).Err)
			sameAsStore(t, s)
		})
		t.Run("begin "+name, func(t *testing.T) {
			fake := providertest.New()
			store := &faultStore{Store: memstore.New()}
			s := newSession(t, fake, session.Config{Store: store})
			converse(t, s, fake, 2)
			store.set(func(f *faultStore) { f.failBegin, f.afterWrite = errDisk, after })
			fake.QueueSummary(providertest.Reply{Text: "S"})
			res := wait(t, mustCompact(t, s, ""))
			if after {
				assert.True(t, res.Compacted, res.Error)
			} else {
				assert.Equal(t, session.ReasonCompactFailed, res.Reason)
				assert.Contains(t, res.Error, errDisk.Error())
				assert.Zero(t, fake.Calls(provider.PurposeSummary), "no summary call without the in-progress record")
			}
			sameAsStore(t, s)
		})
	}
}

// A long tool result is stored verbatim (Active, and the Segment a
// compaction archives it in); only the summary input cuts it, to
// compact.DefaultMaxToolOutput bytes.
func TestCompact_LongToolResultVerbatimCutOnlyInSummaryInput(t *testing.T) {
	long := strings.Repeat("0123456789", 5000) // 50,000 bytes
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "dump", `{}`)}},
		providertest.Reply{Text: "dumped"},
		providertest.Reply{Text: "two"},
	)
	fake.QueueSummary(providertest.Reply{Text: "the summary"})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{{Name: "dump", Run: func(context.Context, json.RawMessage) (string, error) { return long, nil }}}})
	wait(t, mustPrompt(t, s, "dump it"))
	wait(t, mustPrompt(t, s, "and then"))
	h, err := s.Compact(ctxT(t), session.CompactRequest{})
	require.NoError(t, err)
	<-h.Finished()
	require.True(t, h.Result().Compacted, h.Result().Error)
	require.NotNil(t, h.Result().Segment)
	var stored string
	for _, m := range h.Result().Segment.Messages {
		if m.Role == history.RoleTool {
			stored = m.Text
		}
	}
	assert.Equal(t, long, stored, "archived verbatim")
	var summaryInput string
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			summaryInput = r.Messages[0].Text
		}
	}
	require.NotEmpty(t, summaryInput)
	assert.NotContains(t, summaryInput, long)
	assert.Contains(t, summaryInput, long[:compact.DefaultMaxToolOutput-10], "the summary input keeps the output's beginning")
	assert.Less(t, len(summaryInput), compact.DefaultMaxToolOutput+2000, "and cuts the rest")
}
