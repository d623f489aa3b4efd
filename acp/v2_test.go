package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
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

const v2InitParams = `{"protocolVersion":2,"info":{"name":"v2-test","version":"0"},"capabilities":{}}`

// initV2 initializes c with v2.
func (c *hostileClient) initV2() {
	c.t.Helper()
	m := c.call("initialize", v2InitParams)
	require.Nil(c.t, m.Error, "v2 initialize")
	var r struct{ ProtocolVersion int }
	require.NoError(c.t, json.Unmarshal(m.Result, &r))
	require.Equal(c.t, 2, r.ProtocolVersion)
}

// notesSince returns the notifications after line seq.
func (c *hostileClient) notesSince(seq int) []hostileNote {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []hostileNote
	for _, n := range c.notes {
		if n.seq > seq {
			out = append(out, n)
		}
	}
	return out
}

// lastSeq is the number of lines read so far.
func (c *hostileClient) lastSeq() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}

// waitNote waits for a notification after seq that ok accepts.
func (c *hostileClient) waitNote(seq int, what string, ok func(hostileNote) bool) hostileNote {
	c.t.Helper()
	var found hostileNote
	if poll.Within(hostileWait, func() bool {
		for _, n := range c.notesSince(seq) {
			if ok(n) {
				found = n
				return true
			}
		}
		return false
	}) {
		return found
	}
	c.t.Fatalf("no %s arrived", what)
	return hostileNote{}
}

// field decodes the update of n into a map.
func field(t *testing.T, n hostileNote) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(n.update, &m), "update %s", n.update)
	return m
}

func isIdle(n hostileNote) bool {
	return n.kind == "state_update" && strings.Contains(string(n.update), `"state":"idle"`)
}

// newSessionV2 opens a v2 session and waits for its commands.
func (c *hostileClient) newSessionV2() string {
	c.t.Helper()
	seq := c.lastSeq()
	m := c.call("session/new", `{"cwd":"/project"}`)
	require.Nil(c.t, m.Error, "session/new")
	var r struct{ SessionID string }
	require.NoError(c.t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(c.t, r.SessionID)
	c.waitNote(seq, "available_commands_update", func(n hostileNote) bool { return n.kind == "available_commands_update" })
	return r.SessionID
}

// The negotiation table of the official SDK's protocol router.
func TestV2_Negotiation(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    acp.ServerOptions
		params  string
		version int    // the answered version; 0: an error
		code    int    // the error code
		data    string // the error data, when checked
	}{
		{"0", acp.ServerOptions{}, `{"protocolVersion":0}`, 0, schema.UnsupportedProtocolVersion, `{"requested":0,"supported":[1,2]}`},
		{"1", acp.ServerOptions{}, `{"protocolVersion":1,"clientCapabilities":{}}`, 1, 0, ""},
		{"2", acp.ServerOptions{}, v2InitParams, 2, 0, ""},
		{"3", acp.ServerOptions{}, `{"protocolVersion":3,"info":{"name":"x","version":"1"}}`, 2, 0, ""},
		{"99 with v1 params", acp.ServerOptions{}, `{"protocolVersion":99,"clientCapabilities":{}}`, 2, 0, ""},
		{"2 without info", acp.ServerOptions{}, `{"protocolVersion":2,"capabilities":{}}`, 0, jsonrpc.InvalidParams, ""},
		{"2 with v1 names", acp.ServerOptions{}, `{"protocolVersion":2,"clientInfo":{"name":"x","version":"1"},"clientCapabilities":{}}`, 0, jsonrpc.InvalidParams, ""},
		{"V1Only 2", acp.ServerOptions{V1Only: true}, v2InitParams, 1, 0, ""},
		{"V1Only 0", acp.ServerOptions{V1Only: true}, `{"protocolVersion":0}`, 1, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := hostileServe(t, hostileFake(), memstore.New(), tt.opts)
			m := c.call("initialize", tt.params)
			if tt.version == 0 {
				wantError(t, m, tt.code, tt.params)
				if tt.data != "" {
					assert.JSONEq(t, tt.data, string(m.Error.Data))
				}
				// A failed initialize leaves the connection open.
				c.initialize()
				return
			}
			require.Nil(t, m.Error, "%s", tt.params)
			var r map[string]any
			require.NoError(t, json.Unmarshal(m.Result, &r))
			assert.EqualValues(t, tt.version, r["protocolVersion"])
			if tt.version == 2 {
				assert.Contains(t, r, "info")
				assert.Equal(t, map[string]any{"prompt": map[string]any{"embeddedContext": map[string]any{}}, "delete": map[string]any{}, "fork": map[string]any{}, "systemPrompt": map[string]any{"mode": map[string]any{"override": map[string]any{}}}}, r["capabilities"].(map[string]any)["session"])
				assert.NotContains(t, r, "agentCapabilities")
			} else {
				assert.Contains(t, r, "agentCapabilities")
			}
		})
	}
}

// A v2 initialize with id null is refused with InvalidRequest (id null), and
// so is any later v2 request with id null; a v2 connection refuses a
// repeated initialize for v1, and has neither session/load nor
// authenticate.
func TestV2_RequestIDsAndMethods(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	c.send(`{"jsonrpc":"2.0","id":null,"method":"initialize","params":` + v2InitParams + `}`)
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "v2 initialize with id null")
	c.initV2()
	c.send(`{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/w"}}`)
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "v2 session/new with id null")
	c.send(`[` + hostileLine(json.RawMessage(`7`), "session/new", `{"cwd":"/w"}`) + `]`)
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "a JSON array")
	wantError(t, c.call("initialize", `{"protocolVersion":1}`), jsonrpc.InvalidRequest, "v1 initialize after v2")
	sid := c.newSessionV2()
	wantError(t, c.call("session/load", `{"sessionId":"`+sid+`","cwd":"/w","mcpServers":[]}`), jsonrpc.MethodNotFound, "session/load on v2")
	wantError(t, c.call("authenticate", `{"methodId":"m"}`), jsonrpc.MethodNotFound, "authenticate on v2")
	c.initV2() // a repeated v2 initialize is fine
}

// The v2 prompt lifecycle: user_message (its ID), state_update running, the
// {messageId} response, the chunks (each with its messageId), state_update
// idle end_turn; commands carry their types.
func TestV2_PromptLifecycle(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{ContextWindow: 1000})
	c.initV2()
	seq := c.lastSeq()
	sid := c.newSessionV2()
	cmds := c.waitNote(seq, "commands", func(n hostileNote) bool { return n.kind == "available_commands_update" })
	assert.JSONEq(t, `{"sessionUpdate":"available_commands_update","availableCommands":[{"type":"command","name":"compact",
		"description":"Compact the conversation: summarize the older half of the history to free context",
		"input":{"type":"text","hint":"optional instructions for the summary"}},
		{"type":"command","name":"uncompact","description":"Undo the last compaction: put its messages back into the active history"}]}`, string(cmds.update))

	fake.QueueTurn(providertest.Reply{Text: "Hello there", Deltas: []string{"Hello ", "there"}, Usage: provider.Usage{InputTokens: 7, OutputTokens: 3}})
	seq = c.lastSeq()
	m := c.call("session/prompt", promptParams(sid, "hi"))
	require.Nil(t, m.Error)
	var r struct{ MessageID string }
	require.NoError(t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(t, r.MessageID)
	idle := c.waitNote(seq, "idle", isIdle)
	assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`, string(idle.update))

	var before, after []string
	for _, n := range c.notesSince(seq) {
		if n.seq < m.seq {
			before = append(before, n.kind)
		} else {
			after = append(after, n.kind)
		}
		switch n.kind {
		case "user_message":
			assert.JSONEq(t, fmt.Sprintf(`{"sessionUpdate":"user_message","messageId":%q,"content":[{"type":"text","text":"hi"}]}`, r.MessageID), string(n.update))
		case "agent_message_chunk":
			assert.NotEmpty(t, field(t, n)["messageId"], "every chunk has its messageId")
		case "state_update":
			if n.seq < m.seq {
				assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"running"}`, string(n.update))
			}
		}
	}
	assert.Equal(t, []string{"user_message", "state_update"}, before, "before the receipt")
	assert.Equal(t, []string{"session_info_update", "agent_message_chunk", "agent_message_chunk", "usage_update", "state_update"}, after, "after the receipt")
}

// Tool calls are created by their first tool_call_update on v2.
func TestV2_ToolCalls(t *testing.T) {
	fake := providertest.New()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{{Name: "echo", Run: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}}
	c := hostileServe(t, fake, memstore.New(), opts)
	c.initV2()
	sid := c.newSessionV2()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "call_1", Name: "echo", Arguments: json.RawMessage(`{"x":1}`)}}},
		providertest.Reply{Text: "done"})
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "use the tool")).Error)
	c.waitNote(seq, "idle", isIdle)
	var tools []string
	for _, n := range c.notesSince(seq) {
		assert.NotEqual(t, "tool_call", n.kind, "v2 has no tool_call")
		if n.kind == "tool_call_update" {
			tools = append(tools, string(n.update))
		}
	}
	require.Len(t, tools, 2)
	assert.JSONEq(t, `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","kind":"other","status":"in_progress","title":"echo","name":"echo","rawInput":{"x":1},"capabilities":{"cancel":{}}}`, tools[0],
		"a running call may be cancelled (tool_call/cancel)")
	assert.Contains(t, tools[1], `"status":"completed"`)
	assert.Contains(t, tools[1], `"capabilities":null`, "a final call can no longer be cancelled")
}

// session/cancel on v2: the running turn ends idle cancelled, a held
// prompt is answered RequestCancelled.
func TestV2_Cancel(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	seq := c.lastSeq()
	first := c.call("session/prompt", promptParams(sid, "a long one"))
	require.Nil(t, first.Error, "the first prompt is inserted")
	held := c.request("session/prompt", promptParams(sid, "held"))
	require.NoError(t, fake.WaitCalls(t.Context(), 1))
	_, answered := c.tryResponse(held, 100*time.Millisecond)
	require.False(t, answered, "a held prompt has no receipt")
	c.notify("session/cancel", `{"sessionId":"`+sid+`"}`)
	wantError(t, c.response(held), jsonrpc.RequestCancelled, "the held prompt")
	idle := c.waitNote(seq, "idle", isIdle)
	assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}`, string(idle.update))
}

// A failed turn ends idle with stopReason error and the error.
func TestV2_TurnError(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	fake.QueueTurn(providertest.Reply{Err: errors.New("the model is down")})
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "fail")).Error)
	u := field(t, c.waitNote(seq, "idle", isIdle))
	assert.Equal(t, "error", u["stopReason"])
	e, _ := u["error"].(map[string]any)
	assert.EqualValues(t, jsonrpc.InternalError, e["code"])
	assert.Contains(t, e["message"], "the model is down")
}

// /compact on v2: inserted at once (a user message of its own), then the
// compaction entity (no capability needed, status always sent), the usage,
// and the idle state_update.
func TestV2_CompactPrompt(t *testing.T) {
	fake := hostileFake()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	for _, p := range []string{"one", "two"} {
		seq := c.lastSeq()
		require.Nil(t, c.call("session/prompt", promptParams(sid, p)).Error)
		c.waitNote(seq, "idle", isIdle)
	}
	seq := c.lastSeq()
	m := c.call("session/prompt", promptParams(sid, "/compact keep the names"))
	require.Nil(t, m.Error)
	var r struct{ MessageID string }
	require.NoError(t, json.Unmarshal(m.Result, &r))
	c.waitNote(seq, "idle", isIdle)
	var got []string
	var compactionID string
	for _, n := range c.notesSince(seq) {
		k := n.kind
		u := field(t, n)
		switch k {
		case "compaction_update":
			k += ":" + u["status"].(string)
			if compactionID == "" {
				compactionID = u["compactionId"].(string)
				assert.Equal(t, map[string]any{"sessionkit": map[string]any{"trigger": "manual"}}, u["_meta"])
			}
			assert.Equal(t, compactionID, u["compactionId"])
		case "user_message":
			assert.Equal(t, r.MessageID, u["messageId"])
		case "state_update":
			k += ":" + u["state"].(string)
			if u["state"] == "idle" {
				assert.Equal(t, "end_turn", u["stopReason"])
			}
		}
		if n.seq > m.seq && !slices.Contains(got, "response") {
			got = append(got, "response")
		}
		got = append(got, k)
	}
	assert.Equal(t, []string{"user_message", "state_update:running", "response", "compaction_update:in_progress",
		"compaction_summary_chunk", "compaction_update:completed", "usage_update", "state_update:idle"}, got)
}

// session/resume with replayFrom start in a fresh connection replays the
// session (each compaction once, materialized, at its position), then the
// context of its last response (usage_update), the current state_update,
// then the response; without replayFrom nothing is replayed, and the
// current state_update still comes before the response. session/list and
// session/close work on v2.
func TestV2_ResumeListClose(t *testing.T) {
	fake := hostileFake()
	store := memstore.New()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	for _, p := range []string{"one", "two", "/compact", "three"} {
		seq := c.lastSeq()
		require.Nil(t, c.call("session/prompt", promptParams(sid, p)).Error)
		c.waitNote(seq, "idle", isIdle)
	}
	var live map[string]any
	for _, n := range c.notesSince(0) {
		if u := field(t, n); n.kind == "compaction_update" && u["status"] == "completed" {
			live = u
		}
	}
	require.NotNil(t, live)
	c.close()

	c2 := hostileServe(t, fake, store, acp.ServerOptions{})
	c2.initV2()
	list := c2.call("session/list", `{}`)
	require.Nil(t, list.Error)
	assert.Contains(t, string(list.Result), sid)

	m := c2.call("session/resume", `{"sessionId":"`+sid+`","cwd":"/project","replayFrom":{"type":"start"}}`)
	require.Nil(t, m.Error, "resume with replay")
	var kinds []string
	var state, completed []map[string]any
	for _, n := range c2.notesSince(0) {
		if n.seq > m.seq {
			break
		}
		u := field(t, n)
		k := n.kind
		switch k {
		case "compaction_update":
			k += ":" + u["status"].(string)
			if u["status"] == "completed" {
				completed = append(completed, u)
			}
		case "state_update":
			state = append(state, u)
		}
		kinds = append(kinds, k)
	}
	assert.Equal(t, []string{"user_message", "session_info_update", "agent_message_chunk", "user_message", "agent_message_chunk",
		"compaction_update:completed",
		"user_message", "agent_message_chunk", "usage_update", "state_update"}, kinds, "the replay, then the context of its last response")
	require.Len(t, completed, 1, "each compaction exactly once")
	assert.Equal(t, live["summary"], completed[0]["summary"], "the replayed summary is the live one")
	assert.Equal(t, live["compactionId"], completed[0]["compactionId"])
	assert.Equal(t, []map[string]any{{"sessionUpdate": "state_update", "state": "idle"}}, state)

	// Resume without replay on an open session: nothing replayed, but the
	// current state before the response ("even without replay").
	isCommands := func(n hostileNote) bool { return n.kind == "available_commands_update" }
	c2.waitNote(m.seq, "the commands after the replay's response", isCommands)
	seq := c2.lastSeq()
	m = c2.call("session/resume", `{"sessionId":"`+sid+`","cwd":"/project"}`)
	require.Nil(t, m.Error)
	var before []map[string]any
	for _, n := range c2.notesSince(seq) {
		if n.seq < m.seq {
			before = append(before, field(t, n))
			continue
		}
		assert.Equal(t, "available_commands_update", n.kind, "nothing replayed")
	}
	assert.Equal(t, []map[string]any{{"sessionUpdate": "state_update", "state": "idle"}}, before, "the state snapshot, then the response")
	wantError(t, c2.call("session/resume", `{"sessionId":"`+sid+`","cwd":"/project","replayFrom":{"type":"_elsewhere"}}`), jsonrpc.InvalidParams, "an unsupported replayFrom")

	require.Nil(t, c2.call("session/close", `{"sessionId":"`+sid+`"}`).Error)
	wantError(t, c2.call("session/prompt", promptParams(sid, "after close")), jsonrpc.ResourceNotFound, "a closed session")
}

// _sessionkit/compact works on v2; session/cancel during a /compact ends
// the entity cancelled and the session idle cancelled.
func TestV2_ExtensionAndCancelledCompaction(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	fake.QueueTurn(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	for _, p := range []string{"one", "two"} {
		seq := c.lastSeq()
		require.Nil(t, c.call("session/prompt", promptParams(sid, p)).Error)
		c.waitNote(seq, "idle", isIdle)
	}
	fake.QueueSummary(providertest.Reply{Text: "SUMMARY"})
	seq := c.lastSeq()
	m := c.call("_sessionkit/compact", `{"sessionId":"`+sid+`"}`)
	require.Nil(t, m.Error)
	c.waitNote(seq, "compact_finished", func(n hostileNote) bool { return n.method == "_sessionkit/compact_finished" })
	var statuses []string
	for _, n := range c.notesSince(seq) {
		if n.kind == "compaction_update" {
			statuses = append(statuses, field(t, n)["status"].(string))
		}
		assert.NotEqual(t, "state_update", n.kind, "the extension is no prompt")
	}
	assert.Equal(t, []string{"in_progress", "completed"}, statuses)

	gate := make(chan struct{})
	defer close(gate)
	fake.QueueSummary(providertest.Reply{Text: "never", Gate: gate})
	seq = c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "/compact")).Error)
	c.waitNote(seq, "in_progress", func(n hostileNote) bool { return n.kind == "compaction_update" })
	c.notify("session/cancel", `{"sessionId":"`+sid+`"}`)
	idle := c.waitNote(seq, "idle", isIdle)
	assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}`, string(idle.update))
	statuses = nil
	for _, n := range c.notesSince(seq) {
		if n.kind == "compaction_update" {
			statuses = append(statuses, field(t, n)["status"].(string))
		}
	}
	assert.Equal(t, []string{"in_progress", "cancelled"}, statuses)
}

// Undo on v2: _sessionkit/uncompact is advertised and answered, then
// _sessionkit/uncompact_finished; /uncompact is a prompt of its own that
// ends idle; the undo is agent text.
func TestV2_Uncompact(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	init := c.call("initialize", `{"protocolVersion":2,"info":{"name":"t","version":"0"},"capabilities":{}}`)
	require.Nil(t, init.Error)
	assert.Contains(t, string(init.Result), `"uncompact":"_sessionkit/uncompact"`)
	sid := c.newSessionV2()
	fake.QueueTurn(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	for _, p := range []string{"one", "two"} {
		seq := c.lastSeq()
		require.Nil(t, c.call("session/prompt", promptParams(sid, p)).Error)
		c.waitNote(seq, "idle", isIdle)
	}
	fake.QueueSummary(providertest.Reply{Text: "S"}, providertest.Reply{Text: "S2"})
	seq := c.lastSeq()
	require.Nil(t, c.call("_sessionkit/compact", `{"sessionId":"`+sid+`"}`).Error)
	c.waitNote(seq, "compact_finished", func(n hostileNote) bool { return n.method == "_sessionkit/compact_finished" })

	seq = c.lastSeq()
	require.Nil(t, c.call("_sessionkit/uncompact", `{"sessionId":"`+sid+`"}`).Error)
	c.waitNote(seq, "uncompact_finished", func(n hostileNote) bool { return n.method == "_sessionkit/uncompact_finished" })

	require.Nil(t, c.call("_sessionkit/compact", `{"sessionId":"`+sid+`"}`).Error)
	seq = c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "/uncompact")).Error)
	idle := c.waitNote(seq, "idle", isIdle)
	assert.JSONEq(t, `{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`, string(idle.update))
	var undone bool
	for _, n := range c.notesSince(seq) {
		if n.kind == "agent_message_chunk" && strings.Contains(n.text, "Undid the last compaction") {
			undone = true
		}
	}
	assert.True(t, undone, "the undo is agent text")
}
