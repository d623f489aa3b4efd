package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// A client that writes its requests and closes its end at once (a shell
// pipe) gets every answer: the EOF ends the input, not what was read.
func TestServe_EOFAnswersEveryRequestReadBefore(t *testing.T) {
	c := hostileServe(t, providertest.New(), memstore.New(), acp.ServerOptions{})
	initID := c.request("initialize", `{"protocolVersion":1}`)
	newID := c.request("session/new", `{"cwd":"/project","mcpServers":[]}`)
	c.close() // the agent's stdin ends; Serve returns nil
	m := c.response(initID)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"protocolVersion":1`)
	m = c.response(newID)
	require.Nil(t, m.Error, "session/new")
	assert.Contains(t, string(m.Result), `"sessionId"`)
}

// A prompt read before the EOF is answered when its turn ends: the EOF
// does not cancel the turn.
func TestServe_EOFLetsARunningTurnFinish(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "the answer", Gate: gate})
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	id := c.request("session/prompt", promptParams(sid, "question"))
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	require.NoError(t, fake.WaitCalls(ctx, 1))
	require.NoError(t, c.in.Close())
	close(gate)
	assert.Equal(t, "end_turn", stopReason(c.response(id)))
}

// A turn still running DrainTimeout after the EOF is cancelled: its
// prompt is answered with stopReason cancelled, and Serve returns.
func TestServe_DrainTimeoutCancelsTheTurn(t *testing.T) {
	fake := providertest.New()
	never := make(chan struct{})
	defer close(never)
	fake.QueueTurn(providertest.Reply{Deltas: []string{"half ", "never"}, Gate: never, GateAfter: 1})
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{DrainTimeout: 50 * time.Millisecond})
	c.initialize()
	sid := c.newSession()
	id := c.request("session/prompt", promptParams(sid, "question"))
	ctx, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	require.NoError(t, fake.WaitCalls(ctx, 1))
	c.close()
	assert.Equal(t, "cancelled", stopReason(c.response(id)))
}

// A negative DrainTimeout is an error of Serve.
func TestServe_NegativeDrainTimeout(t *testing.T) {
	err := acp.Serve(context.Background(), strings.NewReader(""), io.Discard, acp.ServerOptions{
		Session: session.Config{Provider: providertest.New()}, DrainTimeout: -time.Second,
	})
	assert.ErrorContains(t, err, "DrainTimeout")
}

// stuckStore is a store whose Append, once held is closed, waits for
// release whatever its ctx says: a store that does not answer.
type stuckStore struct {
	history.Store
	held, release chan struct{}
}

func (s stuckStore) Append(ctx context.Context, id string, version uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	select {
	case <-s.held:
		<-s.release
	default:
	}
	return s.Store.Append(ctx, id, version, msgs, usage...)
}

// When ctx is done while the store does not answer, every running turn
// is cancelled all the same (each tool's context ends, though the results
// of the cancelled calls cannot be written), and Serve returns nil once
// the store lets go.
func TestServe_CtxDoneWithTheStoreStuck(t *testing.T) {
	const sessions = 4
	store := stuckStore{Store: memstore.New(), held: make(chan struct{}), release: make(chan struct{})}
	started := make(chan struct{})
	cancelled := make(chan struct{}, sessions)
	watch := session.Tool{Name: "watch", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return "", ctx.Err()
	}}
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply {
		return providertest.Reply{ToolCalls: []history.ToolCall{{ID: "w", Name: "watch", Arguments: json.RawMessage(`{}`)}}}
	})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	c := hostileServeCtx(t, ctx, fake, store, acp.ServerOptions{Session: session.Config{Tools: []session.Tool{watch}}})
	c.initialize()
	for i := range sessions {
		c.request("session/prompt", promptParams(c.newSession(), "go"))
		select {
		case <-started:
		case <-time.After(hostileWait):
			t.Fatalf("the tool of session %d did not start", i)
		}
	}

	close(store.held) // the tool results cannot be written
	stop()
	for i := range sessions {
		select {
		case <-cancelled:
		case <-time.After(hostileWait):
			t.Fatalf("%d of %d running tools' contexts ended", i, sessions)
		}
	}
	close(store.release)
	c.close()
}
