package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// leanClient is a JSON-RPC client that keeps nothing of what the agent
// sends but the responses it waits for, so that the heap a test measures is
// the agent's.
type leanClient struct {
	conn   *jsonrpc.Conn
	served chan error
}

// leanServe starts acp.Serve over pipes with opts (a fake provider and a
// memstore unless opts names them) and connects a leanClient; cleanup closes
// the connection and checks that Serve returned nil.
func leanServe(tb testing.TB, opts acp.ServerOptions) *leanClient {
	tb.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	if opts.Session.Provider == nil {
		opts.Session.Provider = providertest.New()
	}
	if opts.Session.Store == nil {
		opts.Session.Store = memstore.New()
	}
	if t, ok := tb.(*testing.T); ok && opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	}
	c := &leanClient{served: make(chan error, 1)}
	go func() {
		c.served <- acp.Serve(context.Background(), agentIn, agentOut, opts)
		_ = agentOut.Close()
	}()
	c.conn = jsonrpc.NewConn(clientIn, clientOut, jsonrpc.Options{})
	tb.Cleanup(func() {
		_ = c.conn.Close()
		_ = c.conn.Wait()
		select {
		case err := <-c.served:
			assert.NoError(tb, err)
		case <-time.After(30 * time.Second):
			tb.Error("Serve did not return after the client closed")
		}
	})
	return c
}

// call sends a request with raw params and decodes its result into result
// (nil: none); an error response is returned as a *jsonrpc.Error.
func (c *leanClient) call(method, params string, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.conn.Call(ctx, method, json.RawMessage(params), result)
}

// newSession sends a session/new and returns the new session's ID, or the
// error it was answered with.
func (c *leanClient) newSession() (string, error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err := c.call("session/new", `{"cwd":"/project","mcpServers":[]}`, &r)
	return r.SessionID, err
}

// tooMany reports whether err is the answer to a session beyond the
// connection's limit, and checks what it says.
func tooMany(t *testing.T, err error, limit int) bool {
	t.Helper()
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return false
	}
	assert.Equal(t, jsonrpc.InternalError, e.Code)
	assert.Contains(t, e.Message, "too many sessions")
	assert.Contains(t, e.Message, "session/close")
	var data struct {
		Sessionkit struct {
			MaxSessions int `json:"maxSessions"`
		} `json:"sessionkit"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &data), "data %s", e.Data)
	assert.Equal(t, limit, data.Sessionkit.MaxSessions)
	return strings.Contains(e.Message, "too many sessions")
}

// 3,000 session/new on one connection: the first DefaultMaxSessions are
// opened, every later one is refused with the error that says so, and a
// closed session frees its slot. The test stops at the first session
// accepted past the limit, so an agent without one fails it quickly.
func TestServe_MaxSessionsRefusesSessionsPastTheLimit(t *testing.T) {
	c := leanServe(t, acp.ServerOptions{})
	require.NoError(t, c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, nil))
	var opened []string
	for i := range 3000 {
		id, err := c.newSession()
		if i < acp.DefaultMaxSessions {
			require.NoError(t, err, "session %d is within the limit", i+1)
			opened = append(opened, id)
			continue
		}
		require.Error(t, err, "session %d is past the limit of %d and was opened", i+1, acp.DefaultMaxSessions)
		require.True(t, tooMany(t, err, acp.DefaultMaxSessions), "session %d: %v", i+1, err)
	}
	require.NoError(t, c.call("session/close", `{"sessionId":"`+opened[0]+`"}`, nil))
	_, err := c.newSession()
	require.NoError(t, err, "a closed session frees its slot")
	_, err = c.newSession()
	assert.True(t, tooMany(t, err, acp.DefaultMaxSessions), "and only that one: %v", err)
}

// session/load and session/resume count as session/new does, in v1 and v2:
// with the connection full, opening a stored session is refused, attaching
// to one open on the connection is not; one that fails to open (unknown)
// takes no slot.
func TestServe_MaxSessionsCountsLoadAndResume(t *testing.T) {
	store := memstore.New()
	// Two sessions in the store, made by an earlier connection.
	var stored []string
	{
		c := leanServe(t, acp.ServerOptions{Session: session.Config{Store: store}})
		require.NoError(t, c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, nil))
		for range 2 {
			id, err := c.newSession()
			require.NoError(t, err)
			stored = append(stored, id)
		}
	}
	const limit = 2
	for _, tt := range []struct {
		name, init string
		open       []string // methods that open stored[1] on a full connection
	}{
		{"v1", `{"protocolVersion":1,"clientCapabilities":{}}`, []string{"session/load", "session/resume"}},
		{"v2", `{"protocolVersion":2,"info":{"name":"t","version":"0"},"capabilities":{}}`, []string{"session/resume", "session/resume+replay"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := leanServe(t, acp.ServerOptions{Session: session.Config{Store: store}, MaxSessions: limit})
			require.NoError(t, c.call("initialize", tt.init, nil))
			params := func(id string, replay bool) string {
				p := `{"sessionId":"` + id + `","cwd":"/project","mcpServers":[]`
				if replay {
					p += `,"replayFrom":{"type":"start"}`
				}
				return p + `}`
			}
			method := func(m string) (string, bool) { return strings.CutSuffix(m, "+replay") }
			m0, replay0 := method(tt.open[0])
			for range limit + 1 {
				err := c.call(m0, params("no-such-session", replay0), nil)
				var e *jsonrpc.Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, jsonrpc.ResourceNotFound, e.Code, "a session that does not open takes no slot: %v", err)
			}
			require.NoError(t, c.call(m0, params(stored[0], replay0), nil), "one stored session")
			_, err := c.newSession()
			require.NoError(t, err, "and one new: the connection is full")
			for _, m := range tt.open {
				name, replay := method(m)
				err := c.call(name, params(stored[1], replay), nil)
				require.Error(t, err, "%s of a stored session on a full connection", m)
				assert.True(t, tooMany(t, err, limit), "%s: %v", m, err)
				assert.NoError(t, c.call(name, params(stored[0], replay), nil), "%s of a session open here takes no slot", m)
			}
			_, err = c.newSession()
			assert.True(t, tooMany(t, err, limit), "session/new: %v", err)
			require.NoError(t, c.call("session/close", `{"sessionId":"`+stored[0]+`"}`, nil))
			assert.NoError(t, c.call(m0, params(stored[1], replay0), nil), "the closed session's slot is free")
		})
	}
}

// idleSessionHeap opens n sessions on c and returns the heap they hold,
// per session, measured after a GC before and after.
func idleSessionHeap(tb testing.TB, c *leanClient, n int) float64 {
	tb.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ids := make([]string, 0, n)
	for range n {
		id, err := c.newSession()
		if err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ids)
	return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
}

// An idle ACP session holds at most 64 KiB of heap: 200 of them, measured
// with runtime.ReadMemStats after a GC. This bounds memory, not time.
func TestServe_IdleSessionHeapIsBounded(t *testing.T) {
	const n = 200
	c := leanServe(t, acp.ServerOptions{MaxSessions: n})
	require.NoError(t, c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`, nil))
	perSession := idleSessionHeap(t, c, n)
	t.Logf("%.0f heap bytes per idle ACP session", perSession)
	assert.Less(t, perSession, float64(64<<10), "heap per idle ACP session")
}

// BenchmarkIdleSessions reports the heap held by each of 1,000 idle ACP
// sessions opened on one connection (in-memory store), and the goroutines
// per session. Run it with -benchtime=1x.
func BenchmarkIdleSessions(b *testing.B) {
	const n = 1000
	for b.Loop() {
		b.StopTimer()
		c := leanServe(b, acp.ServerOptions{MaxSessions: n})
		if err := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, nil); err != nil {
			b.Fatal(err)
		}
		goroutines := runtime.NumGoroutine()
		b.StartTimer()
		perSession := idleSessionHeap(b, c, n)
		b.StopTimer()
		b.ReportMetric(perSession, "bytes/session")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/n, "goroutines/session")
		_ = c.conn.Close()
		b.StartTimer()
	}
}
