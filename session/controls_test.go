package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// The opt-in compaction controls (docs/design.md §3.5, §4.11).

// storedSegments reads the archive back from the store.
func storedSegments(t *testing.T, s *session.Session) []history.Segment {
	t.Helper()
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	return segs
}

// TestSummaryProvider_UsedAndRecorded: with Config.SummaryProvider the
// summary call goes to it, never to Provider, and the Segment records the
// provider and the model that made the summary (in the result and in the
// store).
func TestSummaryProvider_UsedAndRecorded(t *testing.T) {
	main := providertest.New()
	small := providertest.New()
	small.SetInfo(provider.Info{Name: "small", Model: "mini-1"})
	s := newSession(t, main, session.Config{SummaryProvider: small})
	converse(t, s, main, 2)
	small.QueueSummary(providertest.Reply{Text: "S1", Model: "mini-1-2026"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 0, main.Calls(provider.PurposeSummary), "the main provider makes no summary")
	assert.Equal(t, 1, small.Calls(provider.PurposeSummary))
	assert.Equal(t, 0, small.Calls(provider.PurposeTurn), "the summary provider makes no turn")
	assert.Equal(t, "small", res.Segment.SummaryProvider)
	assert.Equal(t, "mini-1-2026", res.Segment.SummaryModel, "the model the response reported wins")
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.Equal(t, "small", segs[0].SummaryProvider)
	assert.Equal(t, "mini-1-2026", segs[0].SummaryModel)
}

// TestSummaryProvider_DefaultIsProvider: without one, Provider makes the
// summary and is recorded, with its own model when the response names none.
func TestSummaryProvider_DefaultIsProvider(t *testing.T) {
	main := providertest.New()
	main.SetInfo(provider.Info{Name: "main", Model: "big-1"})
	s := newSession(t, main, session.Config{})
	converse(t, s, main, 2)
	main.QueueSummary(providertest.Reply{Text: "S1"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, "main", res.Segment.SummaryProvider)
	assert.Equal(t, "big-1", res.Segment.SummaryModel)
}

// TestSummaryProvider_Configure: Configure changes the summary provider
// for the compactions applied after it.
func TestSummaryProvider_Configure(t *testing.T) {
	main := providertest.New()
	first, second := providertest.New(), providertest.New()
	second.SetInfo(provider.Info{Name: "second"})
	s := newSession(t, main, session.Config{SummaryProvider: first})
	converse(t, s, main, 2)
	h, err := s.Configure(ctxT(t), session.ConfigureRequest{SummaryProvider: second})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	second.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 0, first.Calls(provider.PurposeSummary))
	assert.Equal(t, 1, second.Calls(provider.PurposeSummary))
	assert.Equal(t, "second", res.Segment.SummaryProvider)
}

// hooked opens a session with a BeforeCompact hook and two exchanges in
// Active.
func hooked(t *testing.T, hook func(context.Context, *session.PendingCompaction) error) (*session.Session, *providertest.Fake) {
	t.Helper()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{BeforeCompact: hook})
	converse(t, s, fake, 2)
	return s, fake
}

// assertUnchanged checks a compaction that failed changed nothing: no
// Segment, Active as before, no running action.
func assertUnchanged(t *testing.T, s *session.Session, before []history.Message, evs []session.Event) {
	t.Helper()
	after, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(after))
	assert.Empty(t, storedSegments(t, s))
	assert.NotContains(t, actions(evs), session.ActionRunning, "no running action")
	sameAsStore(t, s)
}

// failHooked runs a manual compaction on s that is expected to fail
// without touching history: it checks that nothing changed, no running
// action was published and no model call was made, and returns the result.
func failHooked(t *testing.T, s *session.Session, fake *providertest.Fake) session.CompactResult {
	t.Helper()
	before, err := s.Active(ctxT(t))
	require.NoError(t, err)
	rec := record(t, s)
	h := mustCompact(t, s, "")
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.False(t, res.Success)
	assert.Equal(t, 0, fake.Calls(provider.PurposeSummary), "no model call")
	evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) >= 3 })
	assertUnchanged(t, s, before, evs)
	return res
}

// TestBeforeCompact_Vetoes: a hook that returns an error vetoes the
// compaction: compact_failed with that error, history unchanged, no
// running action and no model call.
func TestBeforeCompact_Vetoes(t *testing.T) {
	errVeto := errors.New("not now: the user is typing")
	s, fake := hooked(t, func(context.Context, *session.PendingCompaction) error { return errVeto })
	res := failHooked(t, s, fake)
	assert.False(t, res.Cancelled)
	assert.Contains(t, res.Error, errVeto.Error())
}

// TestBeforeCompact_ReturnsError: the hook's error is the result's error,
// and the session goes on working: a later compaction without a veto
// compacts.
func TestBeforeCompact_ReturnsError(t *testing.T) {
	var veto atomic.Bool
	veto.Store(true)
	s, fake := hooked(t, func(context.Context, *session.PendingCompaction) error {
		if veto.Load() {
			return fmt.Errorf("quota of summaries used up")
		}
		return nil
	})
	res := wait(t, mustCompact(t, s, ""))
	require.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.Contains(t, res.Error, "quota of summaries used up")
	veto.Store(false)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res = wait(t, mustCompact(t, s, ""))
	assert.True(t, res.Compacted, res.Error)
}

// TestBeforeCompact_SuppliesSummary: a summary the hook supplies is
// committed exactly like a generated one, and no model call is made.
func TestBeforeCompact_SuppliesSummary(t *testing.T) {
	s, fake := hooked(t, func(_ context.Context, p *session.PendingCompaction) error {
		p.Summary = "  supplied by the application  "
		return nil
	})
	rec := record(t, s)
	h := mustCompact(t, s, "")
	res := wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 0, fake.Calls(provider.PurposeSummary), "no model call")
	assert.Equal(t, "supplied by the application", res.Segment.Summary)
	assert.Equal(t, session.HookSummaryProvider, res.Segment.SummaryProvider)
	assert.Equal(t, provider.Usage{}, res.Usage)
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "supplied by the application", summary)
	evs := rec.until(t, func(evs []session.Event) bool { return len(phases(evs, h.ID())) >= 4 })
	assert.Equal(t, []session.Phase{session.PhaseQueued, session.PhaseStarted, session.PhaseCommitting, session.PhaseFinished}, phases(evs, h.ID()))
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionCompleted}, actions(evs))
	sameAsStore(t, s)
}

// TestBeforeCompact_WhitespaceSummaryFails: a supplied summary of white
// space fails like an empty generated one.
func TestBeforeCompact_WhitespaceSummaryFails(t *testing.T) {
	s, fake := hooked(t, func(_ context.Context, p *session.PendingCompaction) error {
		p.Summary = " \n\t "
		return nil
	})
	res := failHooked(t, s, fake)
	assert.Contains(t, res.Error, compact.ErrEmptySummary.Error())
}

// TestBeforeCompact_ChangesInstructions: instructions the hook sets are the
// summary request's, and the Segment records them.
func TestBeforeCompact_ChangesInstructions(t *testing.T) {
	s, fake := hooked(t, func(_ context.Context, p *session.PendingCompaction) error {
		p.Instructions = "HOOK: keep the file names"
		return nil
	})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, "from the request"))
	require.True(t, res.Compacted, res.Error)
	reqs := summaryCalls(fake)
	require.Len(t, reqs, 1)
	input := reqs[0].Messages[0].Text
	assert.Contains(t, input, "HOOK: keep the file names")
	assert.NotContains(t, input, "from the request")
	assert.Equal(t, "HOOK: keep the file names", res.Segment.Instructions)
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.Equal(t, "HOOK: keep the file names", segs[0].Instructions)
}

// TestBeforeCompact_Panics: a panic in the hook is an error, and the
// session survives it.
func TestBeforeCompact_Panics(t *testing.T) {
	s, fake := hooked(t, func(context.Context, *session.PendingCompaction) error { panic("hook bug") })
	res := failHooked(t, s, fake)
	assert.Contains(t, res.Error, "hook bug")
	assert.Contains(t, res.Error, session.ErrHookPanicked.Error())
	converse(t, s, fake, 1) // still alive
}

// TestBeforeCompact_RunsInWorkerWithPlan: the hook gets the plan (the
// handle's ID, the trigger, the prefix to archive) and runs off the loop:
// while it blocks, the session still answers reads.
func TestBeforeCompact_RunsInWorkerWithPlan(t *testing.T) {
	entered, release := make(chan *session.PendingCompaction, 1), make(chan struct{})
	s, fake := hooked(t, func(_ context.Context, p *session.PendingCompaction) error {
		entered <- p
		<-release
		return nil
	})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	h := mustCompact(t, s, "the request's")
	var plan *session.PendingCompaction
	select {
	case plan = <-entered:
	case <-time.After(waitLimit):
		t.Fatal("the hook never ran")
	}
	// The loop answers while the hook blocks in the worker.
	rctx, cancel := context.WithTimeout(ctxT(t), 2*time.Second)
	defer cancel()
	active, err := s.Active(rctx)
	close(release)
	require.NoError(t, err, "the loop is not held up by the hook")
	assert.Len(t, active, 4)
	res := wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, h.ID(), plan.CompactID)
	assert.Equal(t, session.TriggerManual, plan.Trigger)
	assert.Equal(t, "the request's", plan.Instructions)
	assert.Equal(t, texts(res.Segment.Messages), texts(plan.Messages))
}

// TestBeforeCompact_CancelWhileInHook: cancelling the compaction cancels
// the hook's ctx; the result is a cancellation and nothing is committed.
func TestBeforeCompact_CancelWhileInHook(t *testing.T) {
	entered := make(chan struct{})
	s, fake := hooked(t, func(ctx context.Context, _ *session.PendingCompaction) error {
		close(entered)
		<-ctx.Done()
		return nil
	})
	h := mustCompact(t, s, "")
	<-entered
	h.Cancel()
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.True(t, res.Cancelled)
	assert.Equal(t, 0, fake.Calls(provider.PurposeSummary))
	assert.Empty(t, storedSegments(t, s))
}

// TestTokenAccounting: the result and the Segment carry the context before
// (the last provider-reported figure), the summary call's usage and an
// estimate of the context after.
func TestTokenAccounting(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{SystemPrompt: "be brief"})
	rec := record(t, s)
	converse(t, s, fake, 2) // the last turn reported 20 in, 5 out
	fake.QueueSummary(providertest.Reply{Text: "the summary", Usage: provider.Usage{InputTokens: 70, OutputTokens: 9}})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 25, res.ContextBefore)
	assert.Equal(t, provider.Usage{InputTokens: 70, OutputTokens: 9}, res.Usage)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	want := compact.EstimateTokens("be brief", 0) + compact.EstimateTokens("the summary", 0) + compact.EstimateMessages(active, 0)
	assert.Equal(t, want, res.ContextAfter)
	// The finished event carries the same figures: a client shows the
	// context after from it, with no estimate of its own.
	evs := rec.until(t, func(evs []session.Event) bool {
		return len(phases(evs, res.CompactID)) > 0 && phases(evs, res.CompactID)[len(phases(evs, res.CompactID))-1] == session.PhaseFinished
	})
	var finished *session.CompactionEvent
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
			finished = c
		}
	}
	require.NotNil(t, finished)
	assert.Equal(t, want, finished.Result.ContextAfter)
	assert.Equal(t, 25, finished.Result.ContextBefore)
	g := storedSegments(t, s)
	require.Len(t, g, 1)
	assert.Equal(t, 25, g[0].ContextBefore)
	assert.Equal(t, want, g[0].ContextAfter)
	assert.Equal(t, 70, g[0].InputTokens)
	assert.Equal(t, 9, g[0].OutputTokens)

	// After a compaction the figure is stale: a second one at once has no
	// ContextBefore.
	converse(t, s, fake, 0)
	fake.QueueSummary(providertest.Reply{Text: "again"})
	res = wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 0, res.ContextBefore, "no fresh provider figure")
}

// TestThrough_ToolCallsAtCut: Through archives up to and including the
// message, moved past the tool results that follow it.
func TestThrough_ToolCallsAtCut(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(
		providertest.Reply{Text: "a1", ToolCalls: []history.ToolCall{call("c1", "echo", `{"n":1}`), call("c2", "echo", `{"n":2}`)}},
		providertest.Reply{Text: "a2"},
		providertest.Reply{Text: "a3"},
	)
	s := newSession(t, fake, session.Config{Tools: []session.Tool{echoTool()}})
	wait(t, mustPrompt(t, s, "u1"))
	wait(t, mustPrompt(t, s, "u2"))
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	// u1 a1(calls) tool tool a2 u2 a3: through a1 takes both results.
	require.Equal(t, history.RoleAssistant, active[1].Role)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	h, err := s.Compact(ctxT(t), session.CompactRequest{Through: active[1].ID})
	require.NoError(t, err)
	res := wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, []string{"user:u1", "assistant:a1", `tool:echo {"n":1}`, `tool:echo {"n":2}`}, texts(res.Segment.Messages))
	left, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"assistant:a2", "user:u2", "assistant:a3"}, texts(left))

	// Through the newest message archives all of Active (more than half).
	fake.QueueSummary(providertest.Reply{Text: "S2"})
	h, err = s.Compact(ctxT(t), session.CompactRequest{Through: left[2].ID})
	require.NoError(t, err)
	res = wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.Len(t, res.Segment.Messages, 3)
	sameAsStore(t, s)
}

// TestThrough_UnknownIDRefused: an ID not in Active is refused at
// admission with ErrInvalid, and nothing is queued.
func TestThrough_UnknownIDRefused(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	rec := record(t, s)
	_, err := s.Compact(ctxT(t), session.CompactRequest{Through: "no-such-message"})
	require.ErrorIs(t, err, session.ErrInvalid)
	// A message that was archived is not in Active either.
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	_, err = s.Compact(ctxT(t), session.CompactRequest{Through: res.Segment.Messages[0].ID})
	require.ErrorIs(t, err, session.ErrInvalid)
	// The queue holds nothing: a prompt runs at once and the only
	// compaction events are those of the one compaction.
	converse(t, s, fake, 1)
	evs := rec.all()
	for _, ev := range evs {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok {
			assert.Equal(t, res.CompactID, c.CompactID)
		}
	}
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary))
}

// TestContextWindow_SummaryInputFits: a 1,000-message prefix with a small
// ContextWindow: the summary request fits within the window minus the
// summary's maximum output, it is still one call, every message is
// archived verbatim, and the result says how many were left out.
func TestContextWindow_SummaryInputFits(t *testing.T) {
	store := memstore.New()
	snap, err := store.Create(ctxT(t), history.NewSession{ID: "long"})
	require.NoError(t, err)
	var msgs []history.Message
	for i := range 2000 {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		msgs = append(msgs, history.Message{ID: fmt.Sprintf("m%04d", i), Role: role, Text: fmt.Sprintf("message %d: %s", i, strings.Repeat("word ", 20))})
	}
	_, err = store.Append(ctxT(t), "long", snap.Version, msgs)
	require.NoError(t, err)

	const window = 8000
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "long", Store: store, ContextWindow: window})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	reqs := summaryCalls(fake)
	require.Len(t, reqs, 1, "still exactly one model call")
	req := reqs[0]
	require.Positive(t, req.MaxTokens)
	size := compact.EstimateTokens(req.System, 0) + compact.EstimateMessages(req.Messages, 0)
	assert.LessOrEqual(t, size, window-req.MaxTokens, "the request fits")
	assert.Positive(t, res.LeftOut)
	assert.Less(t, res.LeftOut, 1000)
	input := req.Messages[0].Text
	assert.Contains(t, input, compact.LeftOutMarker(res.LeftOut))
	assert.Contains(t, input, "message 999:", "the newest messages are kept")
	assert.NotContains(t, input, "message 0:", "the oldest are left out")
	require.Len(t, res.Segment.Messages, 1000)
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.Equal(t, texts(msgs[:1000]), texts(segs[0].Messages), "every message archived verbatim")
}

// TestContextWindow_DefaultUnbounded: without a ContextWindow nothing is
// left out (the seeds' algorithm).
func TestContextWindow_DefaultUnbounded(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 4)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	assert.Zero(t, res.LeftOut)
	assert.Zero(t, summaryCalls(fake)[0].MaxTokens)
}
