package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// editor is a client that answers the agent's requests: every message the
// agent sends (notification or request) is recorded in arrival order, and
// requests are answered by answer (from a goroutine of their own, so that
// an answer may wait).
type editor struct {
	t      *testing.T
	conn   *jsonrpc.Conn
	mu     sync.Mutex
	seen   []note
	answer func(method string, params json.RawMessage) (any, error)
	done   chan error
}

func serveEditor(t *testing.T, fake *providertest.Fake, opts acp.ServerOptions, answer func(string, json.RawMessage) (any, error)) *editor {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	opts.Session.Provider = fake
	opts.Session.Store = memstore.New()
	opts.Logger = zaptest.NewLogger(t)
	e := &editor{t: t, answer: answer, done: make(chan error, 1)}
	go func() {
		e.done <- acp.Serve(context.Background(), agentIn, agentOut, opts)
		_ = agentOut.Close()
	}()
	e.conn = jsonrpc.NewConn(clientIn, clientOut, jsonrpc.Options{OrderRequests: true, Handler: func(ctx context.Context, r *jsonrpc.Request) (any, error) {
		e.mu.Lock()
		e.seen = append(e.seen, note{r.Method, append(json.RawMessage(nil), r.Params...)})
		e.mu.Unlock()
		if r.IsNotification() {
			return nil, nil
		}
		resp := jsonrpc.Defer(ctx) // recorded in order; answered whenever answer returns
		go func() { _ = resp.Respond(e.answer(r.Method, r.Params)) }()
		return nil, nil
	}})
	t.Cleanup(func() {
		_ = e.conn.Close()
		require.NoError(t, e.conn.Wait())
		assert.NoError(t, <-e.done)
	})
	return e
}

func (e *editor) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.conn.Call(ctx, method, params, result)
}

// open initializes with caps (v1) and opens a session.
func (e *editor) open(caps string) string {
	e.t.Helper()
	require.NoError(e.t, e.call("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":`+caps+`}`), nil))
	var resp struct{ SessionID string }
	require.NoError(e.t, e.call("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{}}, &resp))
	return resp.SessionID
}

func (e *editor) prompt(sid, text string) string {
	e.t.Helper()
	var resp struct{ StopReason string }
	require.NoError(e.t, e.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &resp))
	return resp.StopReason
}

// trace is what the agent sent, one line an item: "update:<kind>:<toolCallId>"
// or the method of a request.
func (e *editor) trace() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, n := range e.seen {
		if n.method != "session/update" {
			out = append(out, n.method)
			continue
		}
		var p struct{ Update map[string]any }
		require.NoError(e.t, json.Unmarshal(n.params, &p))
		k := p.Update["sessionUpdate"].(string)
		if id, ok := p.Update["toolCallId"].(string); ok {
			k += ":" + id
		}
		if k == "tool_call_update:"+fmt.Sprint(p.Update["toolCallId"]) {
			k += ":" + fmt.Sprint(p.Update["status"])
		}
		out = append(out, "update:"+k)
	}
	return out
}

// notes returns what the agent sent so far.
func (e *editor) notes() []note {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]note(nil), e.seen...)
}

// requests returns the params of the requests with method.
func (e *editor) requests(method string) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []json.RawMessage
	for _, n := range e.seen {
		if n.method == method {
			out = append(out, n.params)
		}
	}
	return out
}

// clientTools is a Toolset whose one tool asks permission, reads a file and
// reports a terminal through the session's ToolClient, and a Describe that
// marks each call.
func clientTools(got chan<- *acp.ToolClient) func(acp.ToolSession) (acp.Toolset, error) {
	return func(ts acp.ToolSession) (acp.Toolset, error) {
		if got != nil {
			got <- ts.Client
		}
		return acp.Toolset{
			Tools: []session.Tool{{Name: "probe", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				out, err := ts.Client.RequestPermission(ctx, schema.ToolCallUpdate{Title: schema.Value("Probe")}, []schema.PermissionOption{
					{OptionID: "yes", Name: "Yes", Kind: schema.PermissionAllowOnce}, {OptionID: "no", Name: "No", Kind: schema.PermissionRejectOnce},
				})
				if err != nil {
					return "", err
				}
				if id, _ := out.Selected(); id != "yes" {
					return "declined (" + out.Outcome + ")", nil
				}
				text, err := ts.Client.ReadTextFile(ctx, "/project/a.txt", 0, 0)
				if err != nil {
					return "", err
				}
				if err := ts.Client.UpdateToolCall(ctx, schema.ToolCallUpdate{Status: schema.Value(schema.ToolCallInProgress),
					Content: schema.Value([]schema.ToolCallContent{{Terminal: &schema.ToolTerminal{TerminalID: "t1"}}})}); err != nil {
					return "", err
				}
				return "read " + text, nil
			}}},
			Describe: func(c history.ToolCall, result *history.Message) acp.ToolCallDisplay {
				d := acp.ToolCallDisplay{Title: "Probe " + c.ID, Kind: schema.ToolKindEdit,
					Locations: []schema.ToolCallLocation{{Path: "/project/a.txt"}},
					Content:   []schema.ToolCallContent{{Diff: &schema.ToolDiff{Path: "/project/a.txt", OldText: "a", NewText: "b"}}}}
				if result != nil && strings.HasPrefix(result.Text, "declined") {
					d.Status = schema.ToolCallFailed
				}
				return d
			},
		}, nil
	}
}

// The requests of a tool reach the client after the tool_call update of
// its call and before its result, in the order the tool made them, for
// every call of a turn; the calls are shown as Describe says.
func TestTools_RequestsFollowTheirToolCall(t *testing.T) {
	fake := providertest.New()
	const n = 12
	var calls []history.ToolCall
	for i := range n {
		calls = append(calls, history.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "probe", Arguments: json.RawMessage(`{}`)})
	}
	var replies []providertest.Reply
	for _, c := range calls {
		replies = append(replies, providertest.Reply{Text: "probing", ToolCalls: []history.ToolCall{c}})
	}
	fake.QueueTurn(append(replies, providertest.Reply{Text: "done"})...)
	e := serveEditor(t, fake, acp.ServerOptions{SessionTools: clientTools(nil)}, func(method string, _ json.RawMessage) (any, error) {
		switch method {
		case schema.MethodRequestPermission:
			return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "yes"}}, nil
		case schema.MethodReadTextFile:
			return map[string]any{"content": "A"}, nil
		}
		return nil, jsonrpc.MethodNotFoundError(method)
	})
	sid := e.open(`{"fs":{"readTextFile":true}}`)
	assert.Equal(t, "end_turn", e.prompt(sid, "go"))
	var want []string
	for _, c := range calls {
		want = append(want, "update:tool_call:"+c.ID, schema.MethodRequestPermission, schema.MethodReadTextFile,
			"update:tool_call_update:"+c.ID+":in_progress", "update:tool_call_update:"+c.ID+":completed")
	}
	var got []string
	for _, l := range e.trace() {
		if strings.Contains(l, ":c") || strings.Contains(l, "/") && !strings.HasPrefix(l, "update:") {
			got = append(got, l)
		}
	}
	assert.Equal(t, want, got)

	// The tool_call and the result as Describe shows them.
	var tc, done map[string]any
	for _, n := range e.notes() {
		var p struct{ Update map[string]any }
		if n.method == "session/update" && json.Unmarshal(n.params, &p) == nil && p.Update["toolCallId"] == "c0" {
			switch {
			case p.Update["sessionUpdate"] == "tool_call":
				tc = p.Update
			case p.Update["status"] == "completed":
				done = p.Update
			}
		}
	}
	assert.Equal(t, "Probe c0", tc["title"])
	assert.Equal(t, "edit", tc["kind"])
	assert.Equal(t, []any{map[string]any{"path": "/project/a.txt"}}, tc["locations"])
	assert.Equal(t, []any{map[string]any{"type": "diff", "path": "/project/a.txt", "oldText": "a", "newText": "b"}}, tc["content"])
	assert.Equal(t, []any{
		map[string]any{"type": "diff", "path": "/project/a.txt", "oldText": "a", "newText": "b"},
		map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "read A"}},
	}, done["content"], "the result: the display's content, then the text")
	var perm schema.RequestPermissionRequest
	require.NoError(t, json.Unmarshal(e.requests(schema.MethodRequestPermission)[0], &perm))
	assert.Equal(t, "c0", perm.ToolCall.ToolCallID, "the request names the call that ctx runs")
	assert.Equal(t, sid, perm.SessionID)
}

// A turn cancelled while a permission request is pending ends at once: the
// tool stops waiting, the owner goes on (the cancel is handled, the prompt
// answered cancelled), and the client's late answer ("cancelled", as ACP
// requires) is dropped. A client that cancels the request itself gives the
// tool the outcome cancelled.
func TestTools_CancelDuringPermission(t *testing.T) {
	fake := providertest.New()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "c1", Name: "probe"}}})
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := serveEditor(t, fake, acp.ServerOptions{SessionTools: clientTools(nil)}, func(method string, _ json.RawMessage) (any, error) {
		if method == schema.MethodRequestPermission {
			once.Do(func() {
				close(asked)
				<-release
			})
			return map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, nil
		}
		return nil, jsonrpc.MethodNotFoundError(method)
	})
	sid := e.open(`{}`)
	stop := make(chan string)
	go func() {
		var resp struct{ StopReason string }
		_ = e.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, &resp)
		stop <- resp.StopReason
	}()
	<-asked
	require.NoError(t, e.conn.Notify(context.Background(), "session/cancel", map[string]any{"sessionId": sid}))
	assert.Equal(t, "cancelled", <-stop, "the pending request does not hold the turn up")
	close(release)
	tr := e.trace()
	assert.Equal(t, "update:tool_call_update:c1:failed", tr[len(tr)-1], "the cancelled call's result: %v", tr)

	// The client cancels the request itself: the tool hears "cancelled".
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "c2", Name: "probe"}}}, providertest.Reply{Text: "after"})
	assert.Equal(t, "end_turn", e.prompt(sid, "again"))
	requests := fake.Requests()
	last := requests[len(requests)-1].Messages
	assert.Equal(t, "declined (cancelled)", last[len(last)-1].Text)
}

// The capabilities are the client's, from initialize; a v2 client has no
// fs or terminals, and its permission requests have the v2 shape (title,
// subject) with v2 diffs. After the session closes nothing is sent.
func TestTools_CapabilitiesAndV2(t *testing.T) {
	got := make(chan *acp.ToolClient, 1)
	e := serveEditor(t, providertest.New(), acp.ServerOptions{SessionTools: clientTools(got)}, nil)
	e.open(`{"fs":{"readTextFile":true,"writeTextFile":false},"terminal":true}`)
	tc := <-got
	assert.True(t, tc.CanReadFiles())
	assert.False(t, tc.CanWriteFiles())
	assert.True(t, tc.CanRunTerminals())
	assert.ErrorIs(t, tc.WriteTextFile(context.Background(), "/project/x", "x"), acp.ErrNoClient)

	fake := providertest.New()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "c1", Name: "probe"}}}, providertest.Reply{Text: "done"})
	v2 := serveEditor(t, fake, acp.ServerOptions{SessionTools: clientTools(got)}, func(method string, _ json.RawMessage) (any, error) {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "no"}}, nil
	})
	require.NoError(t, v2.call("initialize", json.RawMessage(`{"protocolVersion":2,"info":{"name":"t","version":"1"},"capabilities":{}}`), nil))
	var resp struct{ SessionID string }
	require.NoError(t, v2.call("session/new", map[string]any{"cwd": "/project"}, &resp))
	tc = <-got
	assert.False(t, tc.CanReadFiles() || tc.CanWriteFiles() || tc.CanRunTerminals(), "v2 has no fs or terminal methods")
	require.NoError(t, v2.call("session/prompt", map[string]any{"sessionId": resp.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "go"}}}, nil))
	poll.Until(t, 10*time.Second, func() bool { return len(v2.requests(schema.MethodRequestPermission)) == 1 }, "the permission request")
	var perm map[string]any
	require.NoError(t, json.Unmarshal(v2.requests(schema.MethodRequestPermission)[0], &perm))
	assert.Equal(t, "Probe", perm["title"])
	assert.Equal(t, map[string]any{"type": "tool_call", "toolCall": map[string]any{"toolCallId": "c1", "title": "Probe"}}, perm["subject"])
	poll.Until(t, 10*time.Second, func() bool {
		for _, l := range v2.trace() {
			if l == "update:tool_call_update:c1:failed" {
				return true
			}
		}
		return false
	}, "declined: failed, as Describe says")
	for _, n := range v2.notes() {
		if strings.Contains(string(n.params), `"diff"`) {
			assert.Contains(t, string(n.params), `"changes":[{"operation":"modify","path":"/project/a.txt"}]`)
			assert.Contains(t, string(n.params), `"format":"git_patch"`)
			assert.NotContains(t, string(n.params), `"oldText"`)
		}
	}

	require.NoError(t, v2.call("session/close", map[string]any{"sessionId": resp.SessionID}, nil))
	_, err := tc.RequestPermission(session.WithToolCallID(context.Background(), "c9"), schema.ToolCallUpdate{}, []schema.PermissionOption{{OptionID: "a", Name: "A", Kind: schema.PermissionAllowOnce}})
	assert.True(t, errors.Is(err, acp.ErrNoClient), "%v", err)
}
