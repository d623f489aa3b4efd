package acp_test

// Regression tests of the ACP session's one-writer design (docs/design.md §7.9),
// each through the wire: the defects the earlier design (a forwarder
// coordinated with the prompt handlers by signal maps and 5-second timers)
// had.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// A prompt after a failed prompt is answered at once: an error response is
// written by the session's writer like any other, so nothing waits for a
// signal that an error response never gave. The clock is synctest's: a
// timer anywhere on the path would show as elapsed time.
func TestServe_PromptAfterFailedPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := providertest.New()
		c := serve(t, fake, memstore.New(), acp.ServerOptions{})
		c.initialize(`{"session":{"compaction":{}}}`)
		sid := c.newSession()
		fake.QueueTurn(
			providertest.Reply{Err: errors.New("401 unauthorized")},
			providertest.Reply{Text: "second", Usage: provider.Usage{InputTokens: 5, OutputTokens: 1}},
			providertest.Reply{Text: "third", Usage: provider.Usage{InputTokens: 6, OutputTokens: 1}},
		)
		start := time.Now()
		err := c.call("session/prompt", promptOf(sid, "first"), nil)
		var rpc *jsonrpc.Error
		require.ErrorAs(t, err, &rpc)
		assert.Equal(t, -32603, rpc.Code)
		assert.Equal(t, "end_turn", c.prompt(sid, "second"))
		assert.Equal(t, "end_turn", c.prompt(sid, "third"))
		assert.Zero(t, time.Since(start), "time passed between the answers: something waited on a timer")
		texts := agentTexts(updates(t, c.take()))
		assert.Equal(t, []string{"second", "third"}, texts, "each turn's text, before its response")
	})
}

// session/load of a session whose compaction is running, on the same
// connection: the replay shows it in progress with the summary so far, and
// the live stream then ends it: exactly one terminal status for its ID.
func TestServe_LoadDuringRunningCompaction(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	gate := make(chan struct{})
	fake.QueueSummary(providertest.Reply{Text: "the summary", Deltas: []string{"the ", "summary"}, Gate: gate})
	compacted := c.promptAsync(sid, "/compact")
	c.waitFor("compaction_update")
	require.NoError(t, fake.WaitCalls(t.Context(), 3)) // the summary call is running
	c.take()
	var load map[string]any
	c.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, &load)
	replayed := compactionUpdates(updates(t, c.take()))
	close(gate)
	assert.Equal(t, "end_turn", compacted())
	live := compactionUpdates(updates(t, c.take()))

	require.NotEmpty(t, replayed)
	id := replayed[0]["compactionId"]
	assert.Equal(t, "in_progress", replayed[0]["status"], "a running compaction is replayed in progress")
	terminals := 0
	for _, u := range append(replayed, live...) {
		assert.Equal(t, id, u["compactionId"])
		if s, _ := u["status"].(string); s != "" && s != "in_progress" {
			terminals++
			assert.Equal(t, "completed", s)
			assert.Equal(t, []any{map[string]any{"type": "text", "text": "the summary"}}, u["summary"])
		}
	}
	assert.Equal(t, 1, terminals, "terminal statuses for one compaction: %v then %v", replayed, live)
}

// gatedReader is the client's end of the agent's output; while paused it
// reads nothing, so the agent's writes block.
type gatedReader struct {
	r    io.Reader
	mu   sync.Mutex
	open chan struct{}
}

func newGatedReader(r io.Reader) *gatedReader {
	g := &gatedReader{r: r, open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
	return g.r.Read(p)
}

func (g *gatedReader) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

func (g *gatedReader) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.open)
}

// A client that stops reading while a turn streams a long reply and a
// compaction runs at its end, then reads again, receives every message and
// the compaction's terminal update: nothing durable is lost, however far
// behind it fell (the session retains only 8 events for resubscribers here).
func TestServe_LaggingClientLosesNothing(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	var gate *gatedReader
	c := serveReader(t, fake, store, acp.ServerOptions{Session: sessionConfigEvents(8)}, func(r io.Reader) io.Reader {
		gate = newGatedReader(r)
		return gate
	})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)

	deltas := make([]string, 30000)
	for i := range deltas {
		deltas[i] = "x"
	}
	release := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: strings.Join(deltas, ""), Deltas: deltas, Gate: release})
	summary := make([]string, 3000)
	for i := range summary {
		summary[i] = "s"
	}
	fake.QueueSummary(providertest.Reply{Text: strings.Join(summary, ""), Deltas: summary})
	gate.pause()
	long := c.promptAsync(sid, "a long answer, please")
	require.NoError(t, fake.WaitCalls(t.Context(), 3))
	compact := make(chan error, 1)
	go func() {
		var acc schema.CompactAccepted
		// Its answer waits in the paused pipe too: bounded by the test.
		compact <- c.conn.Call(t.Context(), schema.MethodCompact, map[string]any{"sessionId": sid}, &acc)
	}()
	close(release)
	require.NoError(t, fake.WaitCalls(t.Context(), 4)) // the summary call: the turn is over
	waitCommitted(t, store, sid, 1)
	// More turns after the compaction, still unread: the compaction's end is
	// far behind what the session retains for resubscribers.
	const later = 4
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "later"} })
	more := make([]func() string, later)
	for i := range later {
		more[i] = c.promptAsync(sid, fmt.Sprintf("later %d", i))
	}
	require.NoError(t, fake.WaitCalls(t.Context(), 4+later))
	// Everything happened while the client did not read; now it reads.
	gate.resume()
	assert.Equal(t, "end_turn", long())
	require.NoError(t, <-compact)
	for _, wait := range more {
		assert.Equal(t, "end_turn", wait())
	}
	c.waitFor("usage_update")

	ups := updates(t, c.take())
	var (
		text      strings.Builder
		statuses  []string
		summaries []any
	)
	for _, u := range ups {
		switch u["sessionUpdate"] {
		case "agent_message_chunk":
			text.WriteString(u["content"].(map[string]any)["text"].(string))
		case "compaction_update":
			statuses = append(statuses, u["status"].(string))
			if u["status"] == "completed" {
				summaries = append(summaries, u["summary"])
			}
		}
	}
	assert.Equal(t, strings.Join(deltas, "")+strings.Repeat("later", later), text.String(), "the long reply, whole and once, and the later ones")
	assert.Equal(t, []string{"in_progress", "completed"}, statuses, "the compaction's start and its one terminal update")
	assert.Equal(t, []any{[]any{map[string]any{"type": "text", "text": strings.Join(summary, "")}}}, summaries)
}

// waitCommitted waits until the store holds n Segments of sid.
func waitCommitted(t *testing.T, store history.Store, sid string, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() bool {
		segs, err := store.Segments(t.Context(), sid)
		require.NoError(t, err)
		return len(segs) >= n
	}, "a compaction committed")
}

func promptOf(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// agentTexts joins consecutive agent_message_chunks into one text each.
func agentTexts(ups []map[string]any) []string {
	var out []string
	joining := false
	for _, u := range ups {
		if u["sessionUpdate"] != "agent_message_chunk" {
			joining = false
			continue
		}
		t := u["content"].(map[string]any)["text"].(string)
		if joining {
			out[len(out)-1] += t
		} else {
			out = append(out, t)
		}
		joining = true
	}
	return out
}

func sessionConfigEvents(n int) session.Config { return session.Config{EventHistory: n} }

// An owner whose own subscription overflows (here its buffer holds one
// event, so it falls behind the session all the time) continues from the
// store with a Replay: the client still gets every message whole and once,
// and the compaction's start and end.
func TestServe_OwnerFallsBehindTheSession(t *testing.T) {
	defer acp.SetSubscriptionBuffer(1)()
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	deltas := make([]string, 3000)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("w%d ", i)
	}
	fake.QueueTurn(providertest.Reply{Text: strings.Join(deltas, ""), Deltas: deltas})
	assert.Equal(t, "end_turn", c.prompt(sid, "a long answer, please"))
	summary := make([]string, 500)
	for i := range summary {
		summary[i] = fmt.Sprintf("s%d ", i)
	}
	fake.QueueSummary(providertest.Reply{Text: strings.Join(summary, ""), Deltas: summary})
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	// A turn after the compaction whose usage event the owner may miss
	// while it continues from the log: the context it reports still
	// reaches the client.
	fake.QueueTurn(providertest.Reply{Text: strings.Join(deltas, ""), Deltas: deltas, Usage: provider.Usage{InputTokens: 4321, OutputTokens: 99}})
	assert.Equal(t, "end_turn", c.prompt(sid, "again"))
	ups := updates(t, c.take())
	assert.Equal(t, []string{strings.Join(deltas, ""), strings.Join(deltas, "")}, agentTexts(ups), "the long replies, whole and once")
	var (
		statuses []string
		chunks   strings.Builder
		used     any
	)
	for _, u := range ups {
		switch u["sessionUpdate"] {
		case "compaction_update":
			statuses = append(statuses, u["status"].(string))
			if u["status"] == "in_progress" {
				assert.Nil(t, u["summary"], "the summary so far as a replacement")
			}
		case "compaction_summary_chunk":
			chunks.WriteString(u["content"].(map[string]any)["text"].(string))
		case "usage_update":
			used = u["used"]
		}
	}
	assert.Equal(t, []string{"in_progress", "completed"}, statuses, "the compaction's start and its one terminal update")
	assert.True(t, strings.HasPrefix(strings.Join(summary, ""), chunks.String()), "summary chunks, each part once: %.200q", chunks.String())
	assert.EqualValues(t, 4321+99, used, "the context of the last turn")
}
