package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// full asserts that every kind of command is refused with ErrQueueFull.
func full(t *testing.T, s *session.Session) {
	t.Helper()
	ctx := context.Background()
	steps := 3
	_, err := s.Prompt(ctx, session.PromptRequest{Text: "no room"})
	assert.ErrorIs(t, err, session.ErrQueueFull, "prompt")
	_, err = s.Steer(ctx, session.SteerRequest{Text: "no room"})
	assert.ErrorIs(t, err, session.ErrQueueFull, "steer")
	_, err = s.Configure(ctx, session.ConfigureRequest{MaxSteps: &steps})
	assert.ErrorIs(t, err, session.ErrQueueFull, "configure")
	_, err = s.Compact(ctx, session.CompactRequest{})
	assert.ErrorIs(t, err, session.ErrQueueFull, "compact")
	_, err = s.Uncompact(ctx, session.UncompactRequest{})
	assert.ErrorIs(t, err, session.ErrQueueFull, "uncompact")
}

// TestQueueFull_FreedOnFinishCancelInterruptClose: Config.MaxQueue bounds
// the queued commands (the running one is not queued); a command that
// leaves the queue, by starting, by Handle.Cancel or by Interrupt, makes
// room for exactly one more, and a refused admission takes none. Close
// finishes the queued ones with ErrClosed.
func TestQueueFull_FreedOnFinishCancelInterruptClose(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "slow", Gate: gate})
	s := newSession(t, fake, session.Config{MaxQueue: 2})
	first := mustPrompt(t, s, "one")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))

	two := mustPrompt(t, s, "two")
	comp := mustCompact(t, s, "")
	full(t, s)
	full(t, s) // refusals took no room

	// Cancel frees one place.
	two.Cancel()
	assert.ErrorIs(t, wait(t, two).Err, session.ErrCancelled)
	steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "steer"})
	require.NoError(t, err)
	full(t, s)

	// Interrupt removes the queued compaction and cancels the turn; the
	// steer stays and runs as the turn ends: the queue is empty.
	s.Interrupt()
	assert.True(t, wait(t, comp).Cancelled)
	assert.ErrorIs(t, wait(t, first).Err, session.ErrCancelled)
	require.NoError(t, wait(t, steer).Err)

	// Finishing frees: a new turn runs, two commands fit again.
	gate2 := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "slow again", Gate: gate2})
	third := mustPrompt(t, s, "three")
	require.NoError(t, fake.WaitCalls(ctxT(t), 2))
	four := mustPrompt(t, s, "four")
	five := mustPrompt(t, s, "five")
	full(t, s)
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	close(gate2)
	require.NoError(t, wait(t, third).Err)
	require.NoError(t, wait(t, four).Err)
	require.NoError(t, wait(t, five).Err)

	// Close finishes the queued commands with ErrClosed.
	gate3 := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "held", Gate: gate3})
	six := mustPrompt(t, s, "six")
	require.NoError(t, fake.WaitCalls(ctxT(t), 5))
	seven := mustPrompt(t, s, "seven")
	eight := mustCompact(t, s, "")
	full(t, s)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// The queued commands finish as the loop takes the Close, while six
	// is still held: only then may six end (released earlier, six could
	// end before the Close arrived, and the queued compaction would run
	// at the turn's end as it should).
	assert.ErrorIs(t, wait(t, seven).Err, session.ErrClosed)
	assert.Equal(t, session.ReasonCompactFailed, wait(t, eight).Reason)
	close(gate3)
	require.NoError(t, <-closed)
	wait(t, six)
	_, err = s.Prompt(context.Background(), session.PromptRequest{Text: "late"})
	assert.ErrorIs(t, err, session.ErrClosed, "a closed session says closed, not full")
}
