package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestCancelToolCall_OneCallStopsAndTheTurnGoesOn: CancelToolCall ends the
// context of the call it names, and of no other; the cancelled call's
// result says so; a call waiting behind it does not run when cancelled,
// the other runs; the turn goes on to its next step and ends normally.
func TestCancelToolCall_OneCallStopsAndTheTurnGoesOn(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release), echoTool()}})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("b1", "block", `{}`), call("e1", "echo", `{}`), call("b2", "block", `{}`)}},
		providertest.Reply{Text: "went on"},
	)
	turn := mustPrompt(t, s, "work")
	<-started // b1 runs

	// b2 waits behind b1: cancelled, it never starts.
	require.NoError(t, s.CancelToolCall(ctxT(t), "b2"))
	require.NoError(t, s.CancelToolCall(ctxT(t), "b1"))
	res := wait(t, turn)
	require.NoError(t, res.Err, "the turn goes on after a cancelled tool call")

	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	results := map[string]string{}
	for _, m := range active {
		if m.Role == history.RoleTool {
			results[m.ToolCallID] = m.Text
		}
	}
	assert.True(t, strings.HasPrefix(results["b1"], session.ToolCallCancelledText), results["b1"])
	assert.Contains(t, results["b1"], "block was stopped")
	assert.True(t, strings.HasPrefix(results["b2"], session.ToolCallCancelledText), results["b2"])
	assert.Contains(t, results["b2"], "did not run")
	assert.Equal(t, `echo {}`, results["e1"], "the call between them ran")
	assert.Equal(t, "went on", active[len(active)-1].Text, "the model was asked again and answered")
	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages
	assert.True(t, strings.HasPrefix(last[len(last)-1].Text, session.ToolCallCancelledText), "the model reads that the call was cancelled")

	// Now the calls have results: cancelling again is ErrNoToolCall, as is
	// an unknown ID and a cancel outside a turn.
	assert.ErrorIs(t, s.CancelToolCall(ctxT(t), "b1"), session.ErrNoToolCall)
	assert.ErrorIs(t, s.CancelToolCall(ctxT(t), "nope"), session.ErrNoToolCall)
}

// TestCancelToolCall_CauseIsCancelled: the tool's context ends with a cause
// that wraps session.ErrCancelled, and only the named call's context ends.
func TestCancelToolCall_CauseIsCancelled(t *testing.T) {
	fake := providertest.New()
	causes := make(chan error, 1)
	started := make(chan struct{})
	watch := session.Tool{Name: "watch", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return "partial output", ctx.Err()
	}}
	s := newSession(t, fake, session.Config{Tools: []session.Tool{watch}})
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("w1", "watch", `{}`)}}, providertest.Reply{Text: "ok"})
	turn := mustPrompt(t, s, "go")
	<-started
	require.NoError(t, s.CancelToolCall(ctxT(t), "w1"))
	cause := <-causes
	assert.ErrorIs(t, cause, session.ErrCancelled)
	require.NoError(t, wait(t, turn).Err)
}

// TestCancelToolCall_Closed: a closed session answers ErrClosed.
func TestCancelToolCall_Closed(t *testing.T) {
	s := newSession(t, providertest.New(), session.Config{})
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.CancelToolCall(ctxT(t), "x"), session.ErrClosed)
}

// retrying is a provider that fails its first attempt the way a rate
// limit does, reports the retry, and then answers.
type retrying struct{ *providertest.Fake }

func (r retrying) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	provider.ReportRetry(ctx, provider.Retry{Retry: 1, MaxRetries: 3, Wait: 7 * time.Second, RateLimited: true, Err: errors.New("HTTP 429: slow down")})
	return r.Fake.Complete(ctx, req, onDelta)
}

// TestRetryEvent: a provider's retry of a turn request is published as a
// RetryEvent of the turn, live only, before the answer.
func TestRetryEvent(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, retrying{fake}, session.Config{})
	rec := record(t, s)
	fake.QueueTurn(providertest.Reply{Text: "hi"})
	h := mustPrompt(t, s, "hello")
	require.NoError(t, wait(t, h).Err)
	evs := rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if te, ok := ev.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
				return true
			}
		}
		return false
	})
	var got *session.RetryEvent
	sawMessage := false
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *session.RetryEvent:
			got = p
			assert.False(t, sawMessage, "the retry comes before the answer")
			assert.False(t, p.Durable())
		case *session.MessageEvent:
			if p.Message.Role == history.RoleAssistant {
				sawMessage = true
			}
		}
	}
	require.NotNil(t, got)
	assert.Equal(t, session.RetryEvent{TurnID: h.ID(), Retry: 1, MaxRetries: 3, Wait: 7 * time.Second, RateLimited: true, Error: "HTTP 429: slow down"}, *got)
}

// TestRetryEvent_SummaryCall: a retry of a compaction's summary call is
// published as a RetryEvent naming the compaction, before its end.
func TestRetryEvent_SummaryCall(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{SummaryProvider: retrying{fake}})
	rec := record(t, s)
	fake.QueueTurn(providertest.Reply{Text: "a1"})
	require.NoError(t, wait(t, mustPrompt(t, s, "u1")).Err)
	fake.QueueTurn(providertest.Reply{Text: "a2"})
	require.NoError(t, wait(t, mustPrompt(t, s, "u2")).Err)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	h := mustCompact(t, s, "")
	require.True(t, wait(t, h).Compacted)
	evs := rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if ce, ok := ev.Payload.(*session.CompactionEvent); ok && ce.Phase == session.PhaseFinished {
				return true
			}
		}
		return false
	})
	var got *session.RetryEvent
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *session.RetryEvent:
			got = p
		case *session.CompactionEvent:
			if p.Phase == session.PhaseFinished {
				require.NotNil(t, got, "the retry comes before the compaction's end")
			}
		}
	}
	require.NotNil(t, got)
	assert.Equal(t, session.RetryEvent{CompactID: h.ID(), Retry: 1, MaxRetries: 3, Wait: 7 * time.Second, RateLimited: true, Error: "HTTP 429: slow down"}, *got)
}

// TestCancelToolCall_FinishedCallKeepsItsResult: a call that has returned
// is over, though its result may not be committed yet: cancelling it is
// ErrNoToolCall, and its result is its own. The call after it, running
// while the cancel comes, is what the cancel may still reach.
func TestCancelToolCall_FinishedCallKeepsItsResult(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release), echoTool()}})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("e1", "echo", `{}`), call("b1", "block", `{}`)}},
		providertest.Reply{Text: "done"},
	)
	turn := mustPrompt(t, s, "work")
	<-started // e1 has returned; b1 runs
	assert.ErrorIs(t, s.CancelToolCall(ctxT(t), "e1"), session.ErrNoToolCall, "e1 returned already")
	close(release)
	require.NoError(t, wait(t, turn).Err)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	for _, m := range active {
		if m.Role == history.RoleTool && m.ToolCallID == "e1" {
			assert.Equal(t, "echo {}", m.Text, "its own result")
		}
	}
}
