package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// requestText is everything a request sends, for "does it mention" checks.
func requestText(r *provider.Request) string {
	parts := []string{r.System, r.Summary}
	for _, m := range r.Messages {
		parts = append(parts, m.Text)
	}
	return strings.Join(parts, "\n")
}

// TestQueue_2_2_SteerCompactConfigureOrder: during a turn, a steer, a
// compact and a configure are queued in that order while a tool runs. At
// the checkpoint the steer is committed first, so it is in Active when the
// compaction's plan is made and counts in n; the configure applies after
// the commit: not to the summary request, but to the next turn request.
func TestQueue_2_2_SteerCompactConfigureOrder(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}), make(chan struct{})
	s := newSession(t, fake, session.Config{SystemPrompt: "before", Tools: []session.Tool{blockTool(started, release)}})
	converse(t, s, fake, 1) // u, a
	idle, err := s.Steer(context.Background(), session.SteerRequest{Text: "idle steer"})
	require.NoError(t, err)
	require.NoError(t, wait(t, idle).Err) // counted: 3
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("b1", "block", `{}`)}}, // prompt 4, assistant 5
		providertest.Reply{Text: "after the checkpoint"},
	)
	fake.QueueSummary(providertest.Reply{Text: "S"})
	turn := mustPrompt(t, s, "work")
	<-started

	steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "queued steer"}) // 6
	require.NoError(t, err)
	comp := mustCompact(t, s, "")
	sys, instr := "after", "MENTION-AFTER-COMMIT"
	conf, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys, CompactInstructions: &instr})
	require.NoError(t, err)
	close(release)

	res := wait(t, comp)
	require.True(t, res.Compacted, res.Error)
	require.NoError(t, wait(t, turn).Err)
	require.NoError(t, wait(t, steer).Err)
	require.NoError(t, wait(t, conf).Err)

	// n = 6 with the steer, k = 3: the prefix is u, a and the idle steer.
	// (Without it, n = 5 and k = 2.)
	assert.Equal(t, []string{"user:prompt a", "assistant:reply a", "steer:idle steer"}, texts(res.Segment.Messages))
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"user:work", "assistant:", "tool:released", "steer:queued steer", "assistant:after the checkpoint"}, texts(active))

	reqs := fake.Requests()
	require.Equal(t, []string{"turn", "turn", "summary", "turn"}, purposes(fake))
	assert.NotContains(t, requestText(&reqs[2]), instr, "the configure queued after the compact does not reach the summary request")
	assert.Equal(t, "before", reqs[1].System)
	assert.Equal(t, "after", reqs[3].System, "it applies to the request after the commit")
	assert.Equal(t, "S", reqs[3].Summary)
}

// TestCompact_2_2_SteerDuringSummaryCall: a steer sent while a compaction's
// summary call is in flight waits behind the compaction: it is not in the
// Segment, and it is the last message of Active afterwards.
func TestCompact_2_2_SteerDuringSummaryCall(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	gate := make(chan struct{})
	fake.QueueSummary(providertest.Reply{Text: "S", Gate: gate})
	comp := mustCompact(t, s, "")
	require.NoError(t, fake.WaitCalls(ctxT(t), 3))

	steer, err := s.Steer(context.Background(), session.SteerRequest{Text: "while summarizing"})
	require.NoError(t, err)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Len(t, active, 4, "the steer waits behind the compaction")
	assert.Nil(t, steer.Result())
	close(gate)

	res := wait(t, comp)
	require.True(t, res.Compacted, res.Error)
	sr := wait(t, steer)
	require.NoError(t, sr.Err)
	assert.Equal(t, []string{"user:prompt a", "assistant:reply a"}, texts(res.Segment.Messages))
	active, err = s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"user:prompt b", "assistant:reply b", "steer:while summarizing"}, texts(active))
	assert.Equal(t, sr.Message.ID, active[len(active)-1].ID)
}

// gateStore holds every CommitCompaction until the test releases it.
type gateStore struct {
	history.Store
	committing chan struct{} // receives when a commit has started
	release    chan struct{}
}

func (g *gateStore) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	g.committing <- struct{}{}
	<-g.release
	return g.Store.CommitCompaction(ctx, id, v, c)
}

// TestCompact_4_8_CancelDuringCommit: Cancel, Interrupt and Close while the
// commit transaction runs do not tear it: it finishes, the result is
// compacted, and the store holds the new summary.
func TestCompact_4_8_CancelDuringCommit(t *testing.T) {
	for _, how := range []string{"cancel", "interrupt", "close"} {
		t.Run(how, func(t *testing.T) {
			fake := providertest.New()
			store := &gateStore{Store: memstore.New(), committing: make(chan struct{}), release: make(chan struct{})}
			s := newSession(t, fake, session.Config{Store: store})
			converse(t, s, fake, 2)
			fake.QueueSummary(providertest.Reply{Text: "committed summary"})
			comp := mustCompact(t, s, "")
			<-store.committing

			var closed sync.WaitGroup
			switch how {
			case "cancel":
				comp.Cancel()
			case "interrupt":
				s.Interrupt()
			case "close":
				closed.Go(func() { _ = s.Close() })
			}
			close(store.release)
			res := wait(t, comp)
			closed.Wait()
			assert.True(t, res.Compacted, res.Error)
			assert.False(t, res.Cancelled)
			assert.Equal(t, session.ReasonCompacted, res.Reason)
			snap, err := store.Load(ctxT(t), s.ID())
			require.NoError(t, err)
			assert.Equal(t, "committed summary", snap.Summary)
			assert.Equal(t, []string{"user:prompt b", "assistant:reply b"}, texts(snap.Active))
		})
	}
}
