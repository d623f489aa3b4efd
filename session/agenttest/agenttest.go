// Package agenttest is the behavioural suite that every session.Agent runs:
// a local session.Session and a remote session over ACP must behave the
// same for the compaction contract (docs/design.md §4, §8).
//
//	func TestAgent(t *testing.T) {
//		agenttest.Run(t, agenttest.Harness{
//			New: func(t *testing.T, p provider.Provider) session.Agent { ... },
//		})
//	}
package agenttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// Harness makes agents for the suite.
type Harness struct {
	// New returns an agent whose model is p, with no history. The harness
	// closes it (t.Cleanup).
	New func(t *testing.T, p provider.Provider) session.Agent
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"IdleCompact", testIdleCompact},
		{"CompactDuringTurn", testCompactDuringTurn},
		{"NothingToCompact", testNothingToCompact},
		{"FailedSummary", testFailedSummary},
		{"InvalidPrompt", testInvalidPrompt},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, h) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wait[R any](t *testing.T, h *session.Handle[R]) R {
	t.Helper()
	r, err := h.Wait(ctxT(t))
	require.NoError(t, err, "handle %s did not finish", h.ID())
	return r
}

// compactNow compacts a and waits for the result.
func compactNow(t *testing.T, a session.Agent) session.CompactResult {
	t.Helper()
	c, err := a.Compact(context.Background(), session.CompactRequest{})
	require.NoError(t, err)
	return wait(t, c)
}

// converse makes n turns answered by the fake.
func converse(t *testing.T, a session.Agent, fake *providertest.Fake, n int) {
	t.Helper()
	for i := range n {
		fake.QueueTurn(providertest.Reply{Text: "reply", Usage: provider.Usage{InputTokens: 10 * (i + 1), OutputTokens: 2}})
		h, err := a.Prompt(context.Background(), session.PromptRequest{Text: "prompt"})
		require.NoError(t, err)
		require.NoError(t, wait(t, h).Err)
	}
}

func summaryCalls(fake *providertest.Fake) int { return fake.Calls(provider.PurposeSummary) }

func testIdleCompact(t *testing.T, h Harness) {
	fake := providertest.New()
	a := h.New(t, fake)
	converse(t, a, fake, 2)
	sub, err := a.Subscribe(context.Background(), session.SubscribeOptions{})
	require.NoError(t, err)
	defer sub.Close()
	fake.QueueSummary(providertest.Reply{Text: "the summary", Deltas: []string{"the ", "summary"}})
	c, err := a.Compact(context.Background(), session.CompactRequest{Instructions: "be brief"})
	require.NoError(t, err)
	require.NotEmpty(t, c.ID())
	res := wait(t, c)
	assert.Equal(t, c.ID(), res.CompactID)
	assert.True(t, res.Success)
	assert.True(t, res.Compacted)
	assert.Equal(t, session.ReasonCompacted, res.Reason)
	assert.Empty(t, res.Error)
	assert.Equal(t, session.TriggerManual, res.Trigger)
	require.NotNil(t, res.Segment)
	assert.Equal(t, "the summary", res.Segment.Summary)
	assert.Len(t, res.Segment.Messages, 2)
	assert.Equal(t, 1, summaryCalls(fake), "exactly one summary call")
	assert.Equal(t, 3, len(fake.Requests()), "no turn request")

	// The timeline shows the compaction start and finish.
	var phases []session.Phase
	deadline := time.After(10 * time.Second)
	for len(phases) == 0 || phases[len(phases)-1] != session.PhaseFinished {
		select {
		case ev, ok := <-sub.Events():
			require.True(t, ok, "subscription ended: %v", sub.Err())
			if ce, ok := ev.Payload.(*session.CompactionEvent); ok && ce.Phase != session.PhaseDelta && ce.Phase != session.PhaseQueued && ce.Phase != session.PhaseCommitting {
				phases = append(phases, ce.Phase)
				if ce.Phase == session.PhaseFinished {
					assert.True(t, ce.Result.Compacted)
				}
			}
		case <-deadline:
			t.Fatalf("no finished event; got %v", phases)
		}
	}
	assert.Equal(t, []session.Phase{session.PhaseStarted, session.PhaseFinished}, phases)
}

func testCompactDuringTurn(t *testing.T, h Harness) {
	fake := providertest.New()
	a := h.New(t, fake)
	converse(t, a, fake, 1)
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "slow", Gate: gate})
	fake.QueueSummary(providertest.Reply{Text: "S"})
	turn, err := a.Prompt(context.Background(), session.PromptRequest{Text: "long"})
	require.NoError(t, err)
	require.NoError(t, fake.WaitCalls(ctxT(t), 2))
	c, err := a.Compact(context.Background(), session.CompactRequest{})
	require.NoError(t, err)
	assert.Nil(t, c.Result(), "queued until the turn reaches a checkpoint or ends")
	close(gate)
	res := wait(t, c)
	assert.True(t, res.Compacted)
	require.NoError(t, wait(t, turn).Err)
	var order []provider.Purpose
	for _, r := range fake.Requests() {
		order = append(order, r.Purpose)
	}
	assert.Equal(t, []provider.Purpose{provider.PurposeTurn, provider.PurposeTurn, provider.PurposeSummary}, order)
	assert.Len(t, res.Segment.Messages, 2, "n = 4, k = 2")
}

func testNothingToCompact(t *testing.T, h Harness) {
	fake := providertest.New()
	a := h.New(t, fake)
	res := compactNow(t, a)
	assert.True(t, res.Success)
	assert.False(t, res.Compacted)
	assert.Equal(t, session.ReasonNothingToCompact, res.Reason)
	assert.Nil(t, res.Segment)
	assert.Empty(t, fake.Requests(), "no model call")
}

func testFailedSummary(t *testing.T, h Harness) {
	fake := providertest.New()
	a := h.New(t, fake)
	converse(t, a, fake, 2)
	fake.QueueSummary(providertest.Reply{Err: errors.New("summary model down")})
	res := compactNow(t, a)
	assert.False(t, res.Success)
	assert.False(t, res.Compacted)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.Contains(t, res.Error, "summary model down")
	assert.Nil(t, res.Segment)
	// History is unchanged: the next compaction archives the same prefix.
	fake.QueueSummary(providertest.Reply{Text: "S"})
	res = compactNow(t, a)
	require.True(t, res.Compacted)
	assert.Len(t, res.Segment.Messages, 2)
}

func testInvalidPrompt(t *testing.T, h Harness) {
	a := h.New(t, providertest.New())
	_, err := a.Prompt(context.Background(), session.PromptRequest{Text: " "})
	assert.ErrorIs(t, err, session.ErrInvalid)
}
