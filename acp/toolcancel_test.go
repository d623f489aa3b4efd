package acp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// waitTool blocks until its context ends and reports why.
func waitTool(name string, started chan<- string) session.Tool {
	return session.Tool{Name: name, Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
		started <- session.ToolCallID(ctx)
		<-ctx.Done()
		return "", context.Cause(ctx)
	}}
}

// toolUpdates returns the tool_call_update updates of call id after seq.
func toolUpdates(t *testing.T, c *hostileClient, seq int, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, n := range c.notesSince(seq) {
		if n.kind == "tool_call_update" && strings.Contains(string(n.update), `"toolCallId":"`+id+`"`) {
			out = append(out, field(t, n))
		}
	}
	return out
}

// TestToolCallCancel_V2: tool_call/cancel cancels the running call it names
// and nothing else: it is answered {}, the call's final tool_call_update
// is status cancelled and clears its cancel capability, its result tells
// the model it was cancelled, and the turn goes on to the model's next
// answer and ends end_turn. Cancelling it again, an unknown call, an empty
// ID and an unknown session are errors; the session works on.
func TestToolCallCancel_V2(t *testing.T) {
	fake := hostileFake()
	started := make(chan string, 1)
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{waitTool("wait", started)}
	c := hostileServe(t, fake, memstore.New(), opts)
	c.initV2()
	sid := c.newSessionV2()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "call_w", Name: "wait", Arguments: json.RawMessage(`{}`)}}},
		providertest.Reply{Text: "the turn went on"})
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "wait for it")).Error)
	require.Equal(t, "call_w", <-started)
	c.waitNote(seq, "the tool call", func(n hostileNote) bool { return n.kind == "tool_call_update" })
	created := toolUpdates(t, c, seq, "call_w")
	require.NotEmpty(t, created)
	assert.Equal(t, map[string]any{"cancel": map[string]any{}}, created[0]["capabilities"], "a running call advertises cancel")

	resp := c.call("tool_call/cancel", `{"sessionId":"`+sid+`","toolCallId":"call_w"}`)
	require.Nil(t, resp.Error, "tool_call/cancel")
	assert.JSONEq(t, `{}`, string(resp.Result))
	idle := c.waitNote(seq, "idle", isIdle)
	assert.Contains(t, string(idle.update), `"stopReason":"end_turn"`, "the turn goes on and ends normally")
	ups := toolUpdates(t, c, seq, "call_w")
	last := ups[len(ups)-1]
	assert.Equal(t, "cancelled", last["status"])
	assert.Contains(t, last, "capabilities")
	assert.Nil(t, last["capabilities"], "a final call can no longer be cancelled")
	assert.Contains(t, string(mustJSON(t, last["content"])), session.ToolCallCancelledText)
	assert.Contains(t, agentText(c, seq), "the turn went on")
	reqs := fake.Requests()
	lastMsgs := reqs[len(reqs)-1].Messages
	assert.True(t, strings.HasPrefix(lastMsgs[len(lastMsgs)-1].Text, session.ToolCallCancelledText), "the model reads that the call was cancelled")

	for _, tt := range []struct{ name, params string }{
		{"again, once final", `{"sessionId":"` + sid + `","toolCallId":"call_w"}`},
		{"unknown call", `{"sessionId":"` + sid + `","toolCallId":"nope"}`},
		{"empty call ID", `{"sessionId":"` + sid + `","toolCallId":""}`},
		{"no call ID", `{"sessionId":"` + sid + `"}`},
		{"call ID a number", `{"sessionId":"` + sid + `","toolCallId":5}`},
	} {
		wantError(t, c.call("tool_call/cancel", tt.params), jsonrpc.InvalidParams, tt.name)
	}
	wantError(t, c.call("tool_call/cancel", `{"sessionId":"nope","toolCallId":"call_w"}`), jsonrpc.ResourceNotFound, "unknown session")
	c.worksV2(sid)
}

// TestToolCallCancel_V1: v1 has no tool_call/cancel (method not found),
// and its tool calls carry no capabilities.
func TestToolCallCancel_V1(t *testing.T) {
	fake := hostileFake()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{{Name: "echo", Run: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}}
	c := hostileServe(t, fake, memstore.New(), opts)
	c.initialize()
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "call_e", Name: "echo", Arguments: json.RawMessage(`{}`)}}},
		providertest.Reply{Text: "done"})
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "echo")).Error)
	for _, n := range c.notesSince(seq) {
		assert.NotContains(t, string(n.update), "capabilities", "v1 tool calls have no capabilities")
	}
	wantError(t, c.call("tool_call/cancel", `{"sessionId":"`+sid+`","toolCallId":"call_e"}`), jsonrpc.MethodNotFound, "v1")
}

// TestToolCallCancel_PendingPermission: a call waiting for the user's
// permission is cancelled on the wire as the v2 schema says: the agent
// sends $/cancel_request for the permission request, the tool stops waiting
// (it is told the ctx error), the client's late "cancelled" answer is
// dropped, and the turn goes on. session/cancel cancels a pending
// permission request the same way.
func TestToolCallCancel_PendingPermission(t *testing.T) {
	for _, how := range []string{"tool_call/cancel", "session/cancel"} {
		t.Run(how, func(t *testing.T) {
			fake := hostileFake()
			permErr := make(chan error, 1)
			opts := acp.ServerOptions{SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
				return acp.Toolset{Tools: []session.Tool{{Name: "ask", Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
					_, err := ts.Client.RequestPermission(ctx, schema.ToolCallUpdate{}, []schema.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: schema.PermissionAllowOnce}})
					permErr <- err
					return "", err
				}}}}, nil
			}}
			c := hostileServe(t, fake, memstore.New(), opts)
			c.initV2()
			sid := c.newSessionV2()
			fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "call_a", Name: "ask", Arguments: json.RawMessage(`{}`)}}},
				providertest.Reply{Text: "went on"})
			seq := c.lastSeq()
			require.Nil(t, c.call("session/prompt", promptParams(sid, "ask me")).Error)
			perm := c.waitNote(seq, "the permission request", func(n hostileNote) bool { return n.method == "session/request_permission" })
			require.NotEmpty(t, perm.id)
			if how == "tool_call/cancel" {
				require.Nil(t, c.call("tool_call/cancel", `{"sessionId":"`+sid+`","toolCallId":"call_a"}`).Error)
			} else {
				c.notify("session/cancel", `{"sessionId":"`+sid+`"}`)
			}
			cancel := c.waitNote(perm.seq, "$/cancel_request", func(n hostileNote) bool { return n.method == "$/cancel_request" })
			assert.JSONEq(t, `{"requestId":`+string(perm.id)+`}`, string(cancel.params))
			require.ErrorIs(t, <-permErr, context.Canceled, "the tool stops waiting")
			// The client answers the cancelled request as the schema says; the
			// agent drops that answer.
			c.send(`{"jsonrpc":"2.0","id":` + string(perm.id) + `,"result":{"outcome":{"outcome":"cancelled"}}}`)
			idle := c.waitNote(seq, "idle", isIdle)
			if how == "tool_call/cancel" {
				assert.Contains(t, string(idle.update), `"stopReason":"end_turn"`, "the turn goes on")
				ups := toolUpdates(t, c, seq, "call_a")
				assert.Equal(t, "cancelled", ups[len(ups)-1]["status"])
			} else {
				assert.Contains(t, string(idle.update), `"stopReason":"cancelled"`)
			}
			c.worksV2(sid)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}
