package acp_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/session"
)

// fallbackAgentScript is a third-party ACP agent written with the official
// TypeScript SDK that offers compaction only as the /compact command.
const fallbackAgentScript = "interop/fallback-agent.mjs"

// requireNodeInterop skips the test when node or the interop dependencies are
// missing, unless CI is set: CI installs them (make test runs npm ci first),
// so there a missing one is a failure.
func requireNodeInterop(t *testing.T) {
	t.Helper()
	var missing string
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on the PATH"
	} else if _, err := os.Stat("interop/node_modules/@agentclientprotocol/sdk/package.json"); err != nil {
		missing = "acp/interop/node_modules is missing (run: make interop-deps)"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must provide it", missing)
	}
	t.Skipf("%s: skipping the fallback test against the Node.js ACP agent", missing)
}

// lockedBuffer collects the agent's stderr (written by exec's copy goroutine).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// nextCompaction returns the next CompactionEvent, skipping other events.
func nextCompaction(t *testing.T, sub *session.Subscription) *session.CompactionEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.Events():
			require.True(t, ok, "the subscription ended: %v", sub.Err())
			if ce, ok := ev.Payload.(*session.CompactionEvent); ok {
				return ce
			}
		case <-timeout:
			t.Fatal("no CompactionEvent within 10s")
			return nil
		}
	}
}

func TestRemote_FallbackAgainstNodeAgent(t *testing.T) {
	requireNodeInterop(t)
	ctx := context.Background()
	stderr := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent stderr:\n%s", stderr.String())
		}
	})

	// The agent sends available_commands_update right after the session/new
	// response; the client must not lose it (Client.route keeps updates for a
	// session until NewSession has registered it).
	args := []string{fallbackAgentScript}
	c, err := acp.Start(ctx, "node", args, acp.ClientOptions{Stderr: stderr, Logger: zaptest.NewLogger(t)})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c.Close()
		}
	})
	_, hasExt := c.AgentInfo().AgentCapabilities.Meta[schema.MetaKey]
	require.False(t, hasExt, "the agent must not offer the _sessionkit extension")

	rs, err := c.NewSession(ctx, t.TempDir())
	require.NoError(t, err)
	sub, err := rs.Subscribe(ctx, session.SubscribeOptions{})
	require.NoError(t, err)
	poll.Until(t, 10*time.Second, func() bool { return len(rs.Commands()) > 0 }, "an available_commands_update")
	require.Equal(t, []string{"compact"}, commandNames(rs.Commands()))

	// (a) Nothing to compact on a new session: agent text, no entity.
	h, err := rs.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	res := wait(t, h)
	assert.Equal(t, session.CompactResult{CompactID: h.ID(), Success: true, Reason: session.ReasonNothingToCompact, Trigger: session.TriggerManual}, res)

	// (b) Two prompts, then a compaction that completes.
	for _, text := range []string{"first", "second"} {
		turn, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
		require.NoError(t, err)
		tr := wait(t, turn)
		require.NoError(t, tr.Err)
		require.Len(t, tr.Messages, 2)
		assert.Equal(t, history.RoleUser, tr.Messages[0].Role)
		assert.Equal(t, text, tr.Messages[0].Text)
		assert.Equal(t, history.RoleAssistant, tr.Messages[1].Role)
		assert.Equal(t, "echo: "+text, tr.Messages[1].Text)
	}
	const summary = "Earlier: first | second"
	h, err = rs.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, h.ID())
	res = wait(t, h)
	assert.Equal(t, h.ID(), res.CompactID)
	assert.True(t, res.Success)
	assert.True(t, res.Compacted)
	assert.Equal(t, session.ReasonCompacted, res.Reason)
	assert.Equal(t, session.TriggerManual, res.Trigger)
	assert.Empty(t, res.Error)
	if assert.NotNil(t, res.Segment) {
		assert.Equal(t, summary, res.Segment.Summary)
		assert.Equal(t, h.ID(), res.Segment.CompactID)
	}

	// (e) The subscription saw that compaction (and none for (a)): started,
	// the two summary deltas, finished. The events carry the agent's
	// compaction ID.
	started := nextCompaction(t, sub)
	require.Equal(t, session.PhaseStarted, started.Phase)
	agentID := started.CompactID
	require.NotEmpty(t, agentID)
	var deltas string
	for range 2 {
		d := nextCompaction(t, sub)
		require.Equal(t, session.PhaseDelta, d.Phase)
		assert.Equal(t, agentID, d.CompactID)
		deltas += d.Delta
	}
	assert.Equal(t, summary, deltas)
	finished := nextCompaction(t, sub)
	require.Equal(t, session.PhaseFinished, finished.Phase)
	assert.Equal(t, agentID, finished.CompactID)
	require.NotNil(t, finished.Result)
	assert.Equal(t, session.ReasonCompacted, finished.Result.Reason)
	require.NotNil(t, finished.Result.Segment)
	assert.Equal(t, summary, finished.Result.Segment.Summary)

	// (c) A failed compaction.
	h, err = rs.Compact(ctx, session.CompactRequest{Instructions: "fail"})
	require.NoError(t, err)
	res = wait(t, h)
	assert.Equal(t, session.CompactResult{CompactID: h.ID(), Reason: session.ReasonCompactFailed, Error: "summary model unavailable", Trigger: session.TriggerManual}, res)
	ev := nextCompaction(t, sub)
	require.Equal(t, session.PhaseStarted, ev.Phase)
	failedID := ev.CompactID
	assert.NotEqual(t, agentID, failedID, "compaction IDs are never reused")
	ev = nextCompaction(t, sub)
	require.Equal(t, session.PhaseFinished, ev.Phase)
	assert.Equal(t, failedID, ev.CompactID)
	assert.Equal(t, "summary model unavailable", ev.Result.Error)

	// (d) A slow compaction cancelled once it has started: the Handle is
	// returned at once (the agent would take 10 s).
	begin := time.Now()
	h, err = rs.Compact(ctx, session.CompactRequest{Instructions: "slow"})
	require.NoError(t, err)
	assert.Nil(t, h.Result(), "the Handle finished before the agent did")
	ev = nextCompaction(t, sub)
	require.Equal(t, session.PhaseStarted, ev.Phase)
	slowID := ev.CompactID
	h.Cancel()
	res = wait(t, h)
	assert.Less(t, time.Since(begin), 5*time.Second, "the cancel did not stop the slow compaction")
	assert.Equal(t, session.CompactResult{CompactID: h.ID(), Reason: session.ReasonCompactFailed, Error: session.ErrCancelled.Error(), Trigger: session.TriggerManual, Cancelled: true}, res)
	ev = nextCompaction(t, sub)
	require.Equal(t, session.PhaseFinished, ev.Phase)
	assert.Equal(t, slowID, ev.CompactID)
	assert.True(t, ev.Result.Cancelled)

	// The session is still usable after the cancelled compaction.
	turn, err := rs.Prompt(ctx, session.PromptRequest{Text: "third"})
	require.NoError(t, err)
	tr := wait(t, turn)
	require.NoError(t, tr.Err)
	assert.Equal(t, "echo: third", tr.Messages[len(tr.Messages)-1].Text)

	// (f) Client.Close ends the node process: it exits on EOF, well before
	// Start's 5 s kill, and is gone afterwards.
	m := regexp.MustCompile(`started, pid (\d+)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, "the agent did not log its pid")
	pid, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	sub.Close()
	require.NoError(t, rs.Close())
	begin = time.Now()
	closed = true
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(begin), 4*time.Second, "the agent did not exit on EOF")
	select {
	case <-c.Done():
	default:
		t.Error("the connection is not done after Close")
	}
	if p, err := os.FindProcess(pid); err == nil { // Unix: always; then Signal tells
		assert.Error(t, p.Signal(syscall.Signal(0)), "the agent process %d is still running", pid)
	}
}

func commandNames(cs []schema.AvailableCommand) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
