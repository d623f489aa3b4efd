package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// overThreshold answers every turn request with usage above 100 tokens and
// every summary request with summary (a failure when summary is "").
func overThreshold(fake *providertest.Fake, summary func() providertest.Reply) {
	fake.SetDefault(func(r *provider.Request) providertest.Reply {
		if r.Purpose == provider.PurposeSummary {
			return summary()
		}
		return providertest.Reply{Text: "r", Usage: provider.Usage{InputTokens: 500, OutputTokens: 10}}
	})
}

func failing() providertest.Reply { return providertest.Reply{Err: errors.New("summarizer down")} }

func autoEvents(evs []session.Event) []session.AutoCompactEvent {
	var out []session.AutoCompactEvent
	for _, ev := range evs {
		if a, ok := ev.Payload.(*session.AutoCompactEvent); ok {
			out = append(out, *a)
		}
	}
	return out
}

// TestAuto_3_3_NoSecondAttemptInTheSameTurn: a turn of four steps, each
// reporting usage over the threshold, with a failing summarizer: the first
// automatic compaction fails and none runs again in that turn, although each
// step appends messages. The next turn tries again.
func TestAuto_3_3_NoSecondAttemptInTheSameTurn(t *testing.T) {
	fake := providertest.New()
	overThreshold(fake, failing)
	s := newSession(t, fake, session.Config{AutoCompactTokens: 100, Tools: []session.Tool{echoTool()}})
	converse(t, s, fake, 1)
	big := provider.Usage{InputTokens: 500, OutputTokens: 10}
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}, Usage: big},
		providertest.Reply{ToolCalls: []history.ToolCall{call("c2", "echo", `{}`)}, Usage: big},
		providertest.Reply{ToolCalls: []history.ToolCall{call("c3", "echo", `{}`)}, Usage: big},
		providertest.Reply{Text: "done", Usage: big},
	)
	require.NoError(t, wait(t, mustPrompt(t, s, "four steps")).Err)
	assert.Equal(t, 1, fake.Calls(provider.PurposeSummary), "one failed automatic compaction per turn")
	assert.Equal(t, []string{"turn", "turn", "summary", "turn", "turn", "turn"}, purposes(fake))

	require.NoError(t, wait(t, mustPrompt(t, s, "next turn")).Err)
	assert.Equal(t, 2, fake.Calls(provider.PurposeSummary), "a new turn tries again")
}

// TestAuto_3_3_SuspendedAfterThreeFailures: three failed automatic
// compactions in a row suspend automatic compaction, with an event that
// carries the last error; a manual compaction still runs, and its success
// resumes automatic compaction.
func TestAuto_3_3_SuspendedAfterThreeFailures(t *testing.T) {
	fake := providertest.New()
	overThreshold(fake, failing)
	s := newSession(t, fake, session.Config{AutoCompactTokens: 100})
	rec := record(t, s)
	for i := range 5 {
		require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
		assert.Equal(t, min(i+1, 3), fake.Calls(provider.PurposeSummary), "turn %d", i+1)
	}
	// The handle finishes before the recorder's goroutine has read every
	// event the turn published: wait for the suspension's.
	evs := autoEvents(rec.until(t, func(evs []session.Event) bool { return len(autoEvents(evs)) > 0 }))
	require.Len(t, evs, 1)
	assert.True(t, evs[0].Suspended)
	assert.Equal(t, 3, evs[0].Failures)
	assert.Contains(t, evs[0].Error, "summarizer down")

	// Manual Compact is never blocked; its success resumes.
	overThreshold(fake, func() providertest.Reply { return providertest.Reply{Text: "S"} })
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Equal(t, 4, fake.Calls(provider.PurposeSummary))
	evs = autoEvents(rec.until(t, func(evs []session.Event) bool { return len(autoEvents(evs)) == 2 }))
	assert.False(t, evs[1].Suspended, "resumed")
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 5, fake.Calls(provider.PurposeSummary), "automatic compaction runs again")
}

// TestAuto_3_3_ConfigureResumes: setting the threshold again with Configure
// ends a suspension; a Configure that leaves the threshold alone does not.
func TestAuto_3_3_ConfigureResumes(t *testing.T) {
	fake := providertest.New()
	overThreshold(fake, failing)
	s := newSession(t, fake, session.Config{AutoCompactTokens: 100})
	for range 4 {
		require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	}
	require.Equal(t, 3, fake.Calls(provider.PurposeSummary))

	steps := 10
	h, err := s.Configure(context.Background(), session.ConfigureRequest{MaxSteps: &steps})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 3, fake.Calls(provider.PurposeSummary), "still suspended")

	thr := 100
	h, err = s.Configure(context.Background(), session.ConfigureRequest{AutoCompactTokens: &thr})
	require.NoError(t, err)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, mustPrompt(t, s, "p")).Err)
	assert.Equal(t, 4, fake.Calls(provider.PurposeSummary), "resumed by the threshold")
}
