package session_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestAutoCompact_CannotThrash: a context that no compaction gets under the
// threshold (the model reports 1000 tokens and 5 more at every step; the
// threshold is 500). Over 50 steps at most 2 automatic compactions run
// (the goal of issue 42): the first, then a hold until the context has
// grown by a quarter of the threshold past what that compaction left, then
// one more. The hold is reported once (AutoCompactEvent with Held), with
// its figures. A context under the threshold ends the hold: the next
// compaction that cannot help is reported again.
func TestAutoCompact_CannotThrash(t *testing.T) {
	const threshold = 500
	var step, base atomic.Int64
	base.Store(1000)
	fake := providertest.New()
	fake.SetDefault(func(req *provider.Request) providertest.Reply {
		if req.Purpose == provider.PurposeSummary {
			return providertest.Reply{Text: "a summary"}
		}
		n := step.Add(1)
		return providertest.Reply{Text: "ok", Usage: provider.Usage{InputTokens: int(base.Load() + 5*n)}}
	})
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: fake, Store: memstore.New(), AutoCompactTokens: threshold})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{Buffer: 100000})
	require.NoError(t, err)

	last := ""
	prompt := func() {
		t.Helper()
		h, err := s.Prompt(ctx, session.PromptRequest{Text: "go on"})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
		last = h.ID()
	}
	for range 50 {
		prompt()
	}
	autos, held := 0, []*session.AutoCompactEvent{}
	drain := func() { // up to the end of the last turn
		for ev := range sub.Events() {
			switch p := ev.Payload.(type) {
			case *session.CompactionEvent:
				if p.Trigger == session.TriggerAuto && p.Phase == session.PhaseFinished {
					autos++
				}
			case *session.AutoCompactEvent:
				if p.Held {
					held = append(held, p)
				}
			case *session.TurnEvent:
				if p.TurnID == last && p.Phase == session.TurnFinished {
					return
				}
			}
		}
		t.Fatalf("the subscription ended: %v", sub.Err())
	}
	drain()
	assert.Equal(t, 2, autos, "the first compaction, and one more after the context grew by the margin")
	assert.Equal(t, 2, fake.Calls(provider.PurposeSummary))
	require.Len(t, held, 1, "the hold is reported once")
	h := held[0]
	assert.Equal(t, 1005, h.ContextBefore, "the context that triggered the compaction")
	assert.Equal(t, 1010, h.ContextAfter, "the first context reported after it")
	assert.True(t, h.Grew)
	assert.Equal(t, threshold, h.Threshold)
	assert.Equal(t, 1010+threshold/4, h.ResumeAt)
	assert.NotEmpty(t, h.CompactID)

	// Under the threshold: the hold ends; above it again, one automatic
	// compaction that cannot help is reported again.
	base.Store(0)
	step.Store(0)
	prompt() // 5 tokens
	base.Store(2000)
	prompt() // above: a compaction
	prompt() // still above: held, reported
	prompt()
	drain()
	assert.Equal(t, 3, autos)
	assert.Len(t, held, 2)
}
