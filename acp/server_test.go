package acp_test

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

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

// client is a raw ACP client over pipes, recording every notification.
type client struct {
	t     *testing.T
	conn  *jsonrpc.Conn
	mu    sync.Mutex
	notes []note
	done  chan error
}

type note struct {
	method string
	params json.RawMessage
}

// serve starts an agent on store and fake and connects a client to it.
func serve(t *testing.T, fake provider.Provider, store history.Store, opts acp.ServerOptions) *client {
	t.Helper()
	return serveReader(t, fake, store, opts, nil)
}

// serveReader is serve with the client reading the agent's output through
// wrap (nil: directly).
func serveReader(t *testing.T, fake provider.Provider, store history.Store, opts acp.ServerOptions, wrap func(io.Reader) io.Reader) *client {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	pipeIn, agentOut := io.Pipe()
	var clientIn io.Reader = pipeIn
	if wrap != nil {
		clientIn = struct {
			io.Reader
			io.Closer
		}{wrap(pipeIn), pipeIn}
	}
	opts.Session.Provider = fake
	opts.Session.Store = store
	opts.Logger = zaptest.NewLogger(t)
	c := &client{t: t, done: make(chan error, 1)}
	go func() {
		c.done <- acp.Serve(context.Background(), agentIn, agentOut, opts)
		_ = agentOut.Close()
	}()
	c.conn = jsonrpc.NewConn(clientIn, clientOut, jsonrpc.Options{Handler: func(_ context.Context, r *jsonrpc.Request) (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.notes = append(c.notes, note{r.Method, append(json.RawMessage(nil), r.Params...)})
		return nil, nil
	}})
	t.Cleanup(func() {
		_ = c.conn.Close()
		require.NoError(t, c.conn.Wait())
		select {
		case err := <-c.done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the client closed")
		}
	})
	return c
}

func (c *client) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.conn.Call(ctx, method, params, result)
}

func (c *client) mustCall(method string, params, result any) {
	c.t.Helper()
	require.NoError(c.t, c.call(method, params, result))
}

func (c *client) initialize(caps string) {
	c.t.Helper()
	var resp map[string]any
	c.mustCall("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":`+caps+`}`), &resp)
	assert.EqualValues(c.t, 1, resp["protocolVersion"])
}

func (c *client) newSession() string {
	c.t.Helper()
	var resp struct{ SessionID string }
	c.mustCall("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{}}, &resp)
	require.NotEmpty(c.t, resp.SessionID)
	c.waitFor("available_commands_update")
	return resp.SessionID
}

// waitFor waits until a session/update of the given kind has arrived.
func (c *client) waitFor(kind string) {
	c.t.Helper()
	if poll.Within(10*time.Second, func() bool {
		c.mu.Lock()
		notes := append([]note(nil), c.notes...)
		c.mu.Unlock()
		for _, u := range updates(c.t, notes) {
			if u["sessionUpdate"] == kind {
				return true
			}
		}
		return false
	}) {
		return
	}
	c.t.Fatalf("no %s arrived", kind)
}

func (c *client) prompt(sid, text string) string {
	c.t.Helper()
	var resp struct{ StopReason string }
	c.mustCall("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &resp)
	return resp.StopReason
}

// promptAsync sends a session/prompt from another goroutine and returns a
// function that waits for its stop reason on the test's goroutine. The
// call itself never fails the test (FailNow off the test's goroutine would
// leave the test waiting forever); the wait does, naming the error. The
// call may take as long as the test makes it wait (a client that stops
// reading, gates), so it is bounded by the test's context, not by call's
// 10 s.
func (c *client) promptAsync(sid, text string) func() string {
	type result struct {
		StopReason string
		err        error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = c.conn.Call(c.t.Context(), "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &r)
		done <- r
	}()
	return func() string {
		c.t.Helper()
		r := <-done
		require.NoError(c.t, r.err, "session/prompt %q", text)
		return r.StopReason
	}
}

// take returns and forgets the notifications received so far.
func (c *client) take() []note {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.notes
	c.notes = nil
	return out
}

// updates returns the session/update payloads of notes, as generic maps.
func updates(t *testing.T, notes []note) []map[string]any {
	var out []map[string]any
	for _, n := range notes {
		if n.method != "session/update" {
			continue
		}
		var p struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
		require.NoError(t, json.Unmarshal(n.params, &p))
		out = append(out, p.Update)
	}
	return out
}

func kinds(ups []map[string]any) []string {
	var out []string
	for _, u := range ups {
		k := u["sessionUpdate"].(string)
		if k == "compaction_update" {
			k += ":" + u["status"].(string)
		}
		out = append(out, k)
	}
	return out
}

func compactionUpdates(ups []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range ups {
		if k := u["sessionUpdate"]; k == "compaction_update" || k == "compaction_summary_chunk" {
			out = append(out, u)
		}
	}
	return out
}

// conversation makes two turns so that a compaction has something to do.
func conversation(t *testing.T, c *client, fake *providertest.Fake, sid string) {
	fake.QueueTurn(providertest.Reply{Text: "one", Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}},
		providertest.Reply{Text: "two", Usage: provider.Usage{InputTokens: 20, OutputTokens: 2}})
	assert.Equal(t, "end_turn", c.prompt(sid, "first"))
	assert.Equal(t, "end_turn", c.prompt(sid, "second"))
	c.take()
}

func TestServe_PromptStreamsBeforeResponse(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{ContextWindow: 1000})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{Text: "Hello there", Deltas: []string{"Hello ", "there"}, Usage: provider.Usage{InputTokens: 7, OutputTokens: 3}})
	assert.Equal(t, "end_turn", c.prompt(sid, "hi"))
	ups := updates(t, c.take())
	assert.Equal(t, []string{"available_commands_update", "session_info_update", "agent_message_chunk", "agent_message_chunk", "usage_update"}, kinds(ups))
	cmds := ups[0]["availableCommands"].([]any)
	assert.Equal(t, "compact", cmds[0].(map[string]any)["name"])
	assert.Equal(t, "hi", ups[1]["title"], "the session is titled after its first prompt")
	assert.NotEmpty(t, ups[1]["updatedAt"])
	assert.Equal(t, map[string]any{"type": "text", "text": "Hello "}, ups[2]["content"])
	assert.Equal(t, ups[2]["messageId"], ups[3]["messageId"], "one message, one messageId")
	assert.NotEmpty(t, ups[2]["messageId"])
	assert.EqualValues(t, 10, ups[4]["used"])
	assert.EqualValues(t, 1000, ups[4]["size"])
	for _, n := range c.notes {
		assert.Equal(t, "session/update", n.method)
	}
}

func TestServe_CompactCommandCapable(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Deltas: []string{"## Sum", "mary"}})
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact keep names"))
	ups := updates(t, c.take())
	assert.Equal(t, []string{"compaction_update:in_progress", "compaction_summary_chunk", "compaction_summary_chunk", "compaction_update:completed", "usage_update"}, kinds(ups))
	id := ups[0]["compactionId"]
	for _, u := range ups[:4] {
		assert.Equal(t, id, u["compactionId"])
	}
	assert.NotContains(t, ups[0], "summary", "in_progress leaves the summary untouched")
	assert.NotContains(t, ups[0], "error")
	assert.Equal(t, map[string]any{"type": "text", "text": "## Sum"}, ups[1]["content"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "## Summary"}}, ups[3]["summary"])
	assert.NotContains(t, ups[3], "error")
	assert.Contains(t, fake.Requests()[2].Messages[0].Text, "keep names")
}

func TestServe_CapabilityGating(t *testing.T) {
	for name, caps := range map[string]string{
		"absent session":    `{}`,
		"null session":      `{"session":null}`,
		"absent compaction": `{"session":{}}`,
		"null compaction":   `{"session":{"compaction":null}}`,
		"true":              `{"session":{"compaction":true}}`,
		"array":             `{"session":{"compaction":[]}}`,
		"string":            `{"session":{"compaction":"yes"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			fake := providertest.New()
			c := serve(t, fake, memstore.New(), acp.ServerOptions{})
			c.initialize(caps)
			sid := c.newSession()
			conversation(t, c, fake, sid)
			fake.QueueSummary(providertest.Reply{Text: "S"})
			assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
			ups := updates(t, c.take())
			assert.Empty(t, compactionUpdates(ups))
			var text string
			for _, u := range ups {
				if u["sessionUpdate"] == "agent_message_chunk" {
					text += u["content"].(map[string]any)["text"].(string)
				}
			}
			assert.Contains(t, text, "Compacting the conversation")
			assert.Contains(t, text, "Compacted the conversation: 2 earlier messages were summarized.")
		})
	}
}

func TestServe_NothingToCompactIsText(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	c.take()
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	ups := updates(t, c.take())
	require.Equal(t, []string{"agent_message_chunk"}, kinds(ups))
	assert.Contains(t, ups[0]["content"].(map[string]any)["text"], "Nothing to compact")
	assert.Zero(t, fake.Calls(provider.PurposeSummary))
}

func TestServe_FailedSummary(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Deltas: []string{"partial"}, Err: assert.AnError})
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	ups := compactionUpdates(updates(t, c.take()))
	require.Len(t, ups, 3)
	last := ups[2]
	assert.Equal(t, "failed", last["status"])
	assert.Contains(t, last, "summary")
	assert.Nil(t, last["summary"], "summary null: nothing was retained")
	assert.Contains(t, last["error"], assert.AnError.Error())
}

func TestServe_CancelDuringCompaction(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueSummary(providertest.Reply{Text: "never", Gate: gate})
	stop := c.promptAsync(sid, "/compact")
	require.NoError(t, fake.WaitCalls(context.Background(), 3))
	require.NoError(t, c.conn.Notify(context.Background(), "session/cancel", map[string]any{"sessionId": sid}))
	assert.Equal(t, "cancelled", stop())
	ups := compactionUpdates(updates(t, c.take()))
	assert.Equal(t, []string{"compaction_update:in_progress", "compaction_update:cancelled"}, kinds(ups))
	assert.Nil(t, ups[1]["summary"])
	assert.Contains(t, ups[1], "summary")
}

func TestServe_AutoCompactionMidTurn(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{Session: session.Config{
		AutoCompactTokens: 100,
		Tools:             []session.Tool{{Name: "echo", Run: func(_ context.Context, a json.RawMessage) (string, error) { return "echoed", nil }}},
	}})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueTurn(
		providertest.Reply{Text: "calling", ToolCalls: []history.ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{}`)}}, Usage: provider.Usage{InputTokens: 200, OutputTokens: 5}},
		providertest.Reply{Text: "done", Usage: provider.Usage{InputTokens: 50, OutputTokens: 5}},
	)
	fake.QueueSummary(providertest.Reply{Text: "AUTO SUMMARY"})
	assert.Equal(t, "end_turn", c.prompt(sid, "go"))
	assert.Equal(t, []string{
		"agent_message_chunk", "tool_call", "usage_update", "tool_call_update",
		"compaction_update:in_progress", "compaction_summary_chunk", "compaction_update:completed", "usage_update",
		"agent_message_chunk", "usage_update",
	}, kinds(updates(t, c.take())))
}

func TestServe_LoadReplaysInNewProcess(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	c := serve(t, fake, store, acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Text: "THE SUMMARY"})
	c.prompt(sid, "/compact")
	live := compactionUpdates(updates(t, c.take()))
	liveID := live[0]["compactionId"]
	require.NoError(t, c.conn.Close())

	for range 2 { // replaying twice gives the same result
		c2 := serve(t, providertest.New(), store, acp.ServerOptions{})
		c2.initialize(`{"session":{"compaction":{}}}`)
		var resp map[string]any
		c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, &resp)
		c2.waitFor("available_commands_update")
		ups := updates(t, c2.take())
		// The compaction ran after the four messages; it stays at that
		// position. The context it left (the session's estimate) follows
		// the replay. The commands come after the load response.
		require.Equal(t, []string{"user_message_chunk", "session_info_update", "agent_message_chunk", "user_message_chunk", "agent_message_chunk", "compaction_update:completed", "usage_update", "available_commands_update"}, kinds(ups))
		comp := ups[5]
		assert.Equal(t, liveID, comp["compactionId"])
		assert.Equal(t, []any{map[string]any{"type": "text", "text": "THE SUMMARY"}}, comp["summary"])
	}

	// Without the capability: no compaction update on replay either.
	c3 := serve(t, providertest.New(), store, acp.ServerOptions{})
	c3.initialize(`{"session":null}`)
	c3.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	ups := updates(t, c3.take())
	assert.Empty(t, compactionUpdates(ups))
}

func TestServe_ExtensionCompact(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Text: "EXT"})
	var acc schema.CompactAccepted
	c.mustCall("_sessionkit/compact", map[string]any{"sessionId": sid, "instructions": "x"}, &acc)
	require.NotEmpty(t, acc.CompactID)
	var fin *schema.CompactFinishedParams
	poll.Within(10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.notes {
			if n.method == "_sessionkit/compact_finished" {
				fin = &schema.CompactFinishedParams{}
				require.NoError(t, json.Unmarshal(n.params, fin))
			}
		}
		return fin != nil
	})
	require.NotNil(t, fin)
	assert.Equal(t, acc.CompactID, fin.CompactID)
	assert.True(t, fin.Result.Compacted)
	res := acp.CompactResultOf(&fin.Result)
	require.NotNil(t, res.Segment)
	assert.Equal(t, "EXT", res.Segment.Summary)
	assert.Equal(t, []string{"user", "assistant"}, []string{string(res.Segment.Messages[0].Role), string(res.Segment.Messages[1].Role)})
	assert.Equal(t, "first", res.Segment.Messages[0].Text)
}

func TestServe_OmitSummaries(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{OmitSummaries: true})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Deltas: []string{"secret ", "context"}})
	c.prompt(sid, "/compact")
	ups := compactionUpdates(updates(t, c.take()))
	assert.Equal(t, []string{"compaction_update:in_progress", "compaction_update:completed"}, kinds(ups))
	assert.NotContains(t, ups[1], "summary")
}

func TestServe_BadInput(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	code := func(err error) int {
		var e *jsonrpc.Error
		require.ErrorAs(t, err, &e)
		return e.Code
	}
	assert.Equal(t, jsonrpc.InvalidRequest, code(c.call("session/new", map[string]any{"cwd": "/"}, nil)), "before initialize")
	c.initialize(`{}`)
	assert.Equal(t, jsonrpc.MethodNotFound, code(c.call("session/fly", map[string]any{}, nil)))
	assert.Equal(t, jsonrpc.InvalidParams, code(c.call("session/new", map[string]any{"cwd": 5}, nil)))
	assert.Equal(t, jsonrpc.InvalidParams, code(c.call("session/new", map[string]any{"cwd": ""}, nil)))
	assert.Equal(t, jsonrpc.ResourceNotFound, code(c.call("session/prompt", map[string]any{"sessionId": "nope", "prompt": []any{}}, nil)))
	assert.Equal(t, jsonrpc.ResourceNotFound, code(c.call("session/load", map[string]any{"sessionId": "nope", "cwd": "/", "mcpServers": []any{}}, nil)))
	sid := c.newSession()
	assert.Equal(t, jsonrpc.InvalidParams, code(c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{}}, nil)))
	assert.Equal(t, jsonrpc.InvalidParams, code(c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": "text"}, nil)))
	assert.Equal(t, jsonrpc.InvalidParams, code(c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "image", "data": "AA==", "mimeType": "image/png"}}}, nil)))
	// The connection and the session still work.
	fake.QueueTurn(providertest.Reply{Text: "fine"})
	assert.Equal(t, "end_turn", c.prompt(sid, "still there?"))
}
