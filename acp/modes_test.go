package acp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// modeOptions offer two modes and two models; the tools of each session
// report their ToolClient and the MCP servers named.
func modeOptions(got chan<- acp.ToolSession) acp.ServerOptions {
	return acp.ServerOptions{
		Modes:  []schema.SessionMode{{ID: "careful", Name: "Careful"}, {ID: "bold", Name: "Bold", Description: "asks nothing"}},
		Models: []acp.Model{{ID: "small"}, {ID: "large", Name: "Large"}},
		SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
			if got != nil {
				got <- ts
			}
			return acp.Toolset{}, nil
		},
	}
}

const wantOptionsV1 = `[
	{"type":"select","id":"mode","name":"Mode","category":"mode","currentValue":%q,"options":[{"value":"careful","name":"Careful"},{"value":"bold","name":"Bold","description":"asks nothing"}]},
	{"type":"select","id":"model","name":"Model","category":"model","currentValue":%q,"options":[{"value":"small","name":"small"},{"value":"large","name":"Large"}]}]`

// rpcCode is the code of the JSON-RPC error err.
func rpcCode(t *testing.T, err error) int {
	t.Helper()
	var e *jsonrpc.Error
	require.ErrorAs(t, err, &e)
	return e.Code
}

func jsonf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// v1: the response that opens a session has its modes and config
// options; session/set_mode and session/set_config_option change them
// (current_mode_update and config_option_update tell the client), refuse
// what is not offered with invalid params and change nothing then, and
// the session's tools read the mode at once.
func TestModes_V1(t *testing.T) {
	got := make(chan acp.ToolSession, 1)
	c := serve(t, providertest.New(), memstore.New(), modeOptions(got))
	var init struct {
		AgentCapabilities struct {
			McpCapabilities map[string]any `json:"mcpCapabilities"`
		} `json:"agentCapabilities"`
	}
	c.mustCall("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{}}`), &init)
	assert.Equal(t, false, init.AgentCapabilities.McpCapabilities["http"], "no McpHTTP: http is not advertised")
	var resp map[string]json.RawMessage
	c.mustCall("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{}}, &resp)
	var sid string
	require.NoError(t, json.Unmarshal(resp["sessionId"], &sid))
	assert.JSONEq(t, `{"currentModeId":"careful","availableModes":[{"id":"careful","name":"Careful"},{"id":"bold","name":"Bold","description":"asks nothing"}]}`, string(resp["modes"]))
	assert.JSONEq(t, jsonf(wantOptionsV1, "careful", "small"), string(resp["configOptions"]))
	ts := <-got
	assert.Equal(t, "careful", ts.Client.Mode())
	c.waitFor("available_commands_update")
	c.take()

	// Not offered: refused, nothing changes, nothing is sent.
	for _, bad := range []struct {
		method string
		params map[string]any
	}{
		{"session/set_mode", map[string]any{"sessionId": sid, "modeId": "reckless"}},
		{"session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "reckless"}},
		{"session/set_config_option", map[string]any{"sessionId": sid, "configId": "temperature", "value": "hot"}},
		{"session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "type": "boolean", "value": true}},
		{"session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": 7}},
		{"session/set_config_option", map[string]any{"sessionId": sid, "configId": "model"}},
		{"session/set_mode", map[string]any{"sessionId": sid}},
	} {
		assert.Equal(t, jsonrpc.InvalidParams, rpcCode(t, c.call(bad.method, bad.params, nil)), "%s %v", bad.method, bad.params)
	}
	assert.Equal(t, "careful", ts.Client.Mode())

	var empty map[string]any
	c.mustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "bold"}, &empty)
	assert.Empty(t, empty)
	assert.Equal(t, "bold", ts.Client.Mode(), "the tools read the new mode at their next call")
	c.waitFor("config_option_update")
	ups := updates(t, c.take())
	require.Equal(t, []string{"current_mode_update", "config_option_update"}, kinds(ups))
	assert.Equal(t, "bold", ups[0]["currentModeId"])
	b, _ := json.Marshal(ups[1]["configOptions"])
	assert.JSONEq(t, jsonf(wantOptionsV1, "bold", "small"), string(b))

	var set struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	c.mustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "large"}, &set)
	assert.JSONEq(t, jsonf(wantOptionsV1, "bold", "large"), string(set.ConfigOptions))
	c.mustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "careful"}, &set)
	assert.JSONEq(t, jsonf(wantOptionsV1, "careful", "large"), string(set.ConfigOptions))
	assert.Equal(t, "careful", ts.Client.Mode())
	c.waitFor("current_mode_update")

	// Attached again on this connection: the response says what it is now.
	var load map[string]json.RawMessage
	c.mustCall("session/resume", map[string]any{"sessionId": sid, "cwd": "/project"}, &load)
	assert.JSONEq(t, jsonf(wantOptionsV1, "careful", "large"), string(load["configOptions"]))
	assert.Contains(t, string(load["modes"]), `"currentModeId":"careful"`)
}

// v2: config options with "configId", set with "type":"id" (a request
// without it is refused), config_option_update in v2's shape; v2 has no
// session/set_mode.
func TestModes_V2(t *testing.T) {
	c := serve(t, providertest.New(), memstore.New(), modeOptions(nil))
	c.mustCall("initialize", json.RawMessage(`{"protocolVersion":2,"info":{"name":"t","version":"1"},"capabilities":{}}`), nil)
	var resp map[string]json.RawMessage
	c.mustCall("session/new", map[string]any{"cwd": "/project"}, &resp)
	var sid string
	require.NoError(t, json.Unmarshal(resp["sessionId"], &sid))
	wantV2 := `[
		{"type":"select","configId":"mode","name":"Mode","category":"mode","currentValue":%q,"options":[{"value":"careful","name":"Careful"},{"value":"bold","name":"Bold","description":"asks nothing"}]},
		{"type":"select","configId":"model","name":"Model","category":"model","currentValue":%q,"options":[{"value":"small","name":"small"},{"value":"large","name":"Large"}]}]`
	assert.JSONEq(t, jsonf(wantV2, "careful", "small"), string(resp["configOptions"]))
	assert.NotContains(t, resp, "modes", "v2 has no modes")
	c.waitFor("available_commands_update")
	c.take()

	assert.Equal(t, jsonrpc.InvalidParams, rpcCode(t, c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "value": "bold"}, nil)), "v2 needs the type")
	assert.Equal(t, jsonrpc.MethodNotFound, rpcCode(t, c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "bold"}, nil)))
	var set struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	c.mustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "mode", "type": "id", "value": "bold"}, &set)
	assert.JSONEq(t, jsonf(wantV2, "bold", "small"), string(set.ConfigOptions))
	c.waitFor("config_option_update")
	assert.Equal(t, []string{"config_option_update"}, kinds(updates(t, c.take())), "no current_mode_update on v2")
}

// serveMcp serves modeOptions with McpHTTP; the channel gets each
// session's ToolSession.
func serveMcp(t *testing.T) (chan acp.ToolSession, *client) {
	got := make(chan acp.ToolSession, 4)
	opts := modeOptions(got)
	opts.McpHTTP = true
	return got, serve(t, providertest.New(), memstore.New(), opts)
}

// The MCP servers a client names reach the session's tools: v1 stdio and,
// with McpHTTP (advertised then), http; sse, or http without McpHTTP, is
// refused with invalid params. v2 servers carry their type; a transport
// v2 does not define is refused.
func TestMcp_ServersReachTheTools(t *testing.T) {
	stdio := map[string]any{"name": "files", "command": "/bin/mcp-files", "args": []string{"--ro"}, "env": []any{map[string]any{"name": "K", "value": "v"}}}
	httpServer := map[string]any{"type": "http", "name": "issues", "url": "https://issues.example/mcp", "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer t"}}}
	sse := map[string]any{"type": "sse", "name": "old", "url": "https://old.example/sse", "headers": []any{}}
	wantStdio := schema.McpServer{Name: "files", Command: "/bin/mcp-files", Args: []string{"--ro"}, Env: []schema.EnvVariable{{Name: "K", Value: "v"}}}
	wantHTTP := schema.McpServer{Type: "http", Name: "issues", URL: "https://issues.example/mcp", Headers: []schema.HTTPHeader{{Name: "Authorization", Value: "Bearer t"}}}

	t.Run("v1", func(t *testing.T) {
		got, c := serveMcp(t)
		var init struct {
			AgentCapabilities struct {
				McpCapabilities map[string]any `json:"mcpCapabilities"`
			} `json:"agentCapabilities"`
		}
		c.mustCall("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{}}`), &init)
		assert.Equal(t, true, init.AgentCapabilities.McpCapabilities["http"])
		c.mustCall("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{stdio, httpServer}}, nil)
		assert.Equal(t, []schema.McpServer{wantStdio, wantHTTP}, (<-got).McpServers)
		assert.Equal(t, jsonrpc.InvalidParams, rpcCode(t, c.call("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{stdio, sse}}, nil)))
		assert.Empty(t, got, "a refused session/new starts no tools")

		plain := serve(t, providertest.New(), memstore.New(), modeOptions(got))
		plain.initialize(`{}`)
		assert.Equal(t, jsonrpc.InvalidParams, rpcCode(t, plain.call("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{httpServer}}, nil)), "http is not advertised")
	})
	t.Run("v2", func(t *testing.T) {
		got, c := serveMcp(t)
		var init struct {
			Capabilities struct {
				Session struct {
					Mcp json.RawMessage `json:"mcp"`
				} `json:"session"`
			} `json:"capabilities"`
		}
		c.mustCall("initialize", json.RawMessage(`{"protocolVersion":2,"info":{"name":"t","version":"1"},"capabilities":{}}`), &init)
		assert.JSONEq(t, `{"stdio":{},"http":{}}`, string(init.Capabilities.Session.Mcp))
		stdioV2 := map[string]any{"type": "stdio", "name": "files", "command": "/bin/mcp-files", "args": []string{"--ro"}, "env": []any{map[string]any{"name": "K", "value": "v"}}}
		c.mustCall("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{stdioV2, httpServer}}, nil)
		assert.Equal(t, []schema.McpServer{wantStdio, wantHTTP}, (<-got).McpServers)
		for _, bad := range []any{
			[]any{map[string]any{"type": "_custom", "name": "x"}},
			[]any{stdio}, // v1's shape: no type
			[]any{map[string]any{"type": "stdio", "name": "x"}},
			"files",
		} {
			assert.Equal(t, jsonrpc.InvalidParams, rpcCode(t, c.call("session/new", map[string]any{"cwd": "/project", "mcpServers": bad}, nil)), "%v", bad)
		}
		assert.Empty(t, got)
	})
}

// Toolset.Close ends the session's tools once when the session ends:
// session/close, and the end of the connection; Notices are told the user
// after the response that opens the session (ToolClient.Notice while it
// opens), and later; a v1 client without session.notices gets them as
// agent text.
func TestMcp_CloseAndNotices(t *testing.T) {
	var mu sync.Mutex
	closed := map[string]int{}
	clients := make(chan *acp.ToolClient, 3)
	opts := acp.ServerOptions{SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
		clients <- ts.Client
		name := ts.Cwd
		if err := ts.Client.Notice(t.Context(), schema.Notice{Severity: schema.NoticeError, Title: "An MCP server is not available", Description: name}); err != nil {
			return acp.Toolset{}, err
		}
		return acp.Toolset{
			Close: func() { mu.Lock(); closed[name]++; mu.Unlock() },
		}, nil
	}}
	c := serve(t, providertest.New(), memstore.New(), opts)
	c.initialize(`{}`)
	var a, b struct{ SessionID string }
	c.mustCall("session/new", map[string]any{"cwd": "/a", "mcpServers": []any{}}, &a)
	ca := <-clients
	c.mustCall("session/new", map[string]any{"cwd": "/b", "mcpServers": []any{}}, &b)
	<-clients
	require.NoError(t, ca.Notice(t.Context(), schema.Notice{Severity: schema.NoticeError, Title: "An MCP server stopped", Description: "x"}))
	var seen []string
	require.True(t, poll.Within(10*time.Second, func() bool {
		for _, u := range updates(t, c.take()) {
			if u["sessionUpdate"] == "agent_message_chunk" {
				seen = append(seen, strings.TrimSpace(u["content"].(map[string]any)["text"].(string)))
			}
		}
		return len(seen) >= 3
	}), "told: %q", seen)
	assert.ElementsMatch(t, []string{"An MCP server is not available: /a", "An MCP server is not available: /b", "An MCP server stopped: x"}, seen)
	c.mustCall("session/close", map[string]any{"sessionId": a.SessionID}, nil)
	mu.Lock()
	assert.Equal(t, map[string]int{"/a": 1}, closed, "closed with its session, before the response")
	mu.Unlock()
	// A session that does not open ends its tools at once.
	assert.Equal(t, jsonrpc.ResourceNotFound, rpcCode(t, c.call("session/load", map[string]any{"sessionId": "nope", "cwd": "/c", "mcpServers": []any{}}, nil)))
	<-clients
	mu.Lock()
	assert.Equal(t, 1, closed["/c"], "the tools of a session that did not open")
	mu.Unlock()
	assert.ErrorIs(t, ca.Notice(t.Context(), schema.Notice{Severity: schema.NoticeError, Title: "late"}), acp.ErrNoClient)
	_ = c.conn.Close()
	<-c.conn.Done()
	require.True(t, poll.Within(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return closed["/b"] == 1
	}), "the connection's end ends the tools of its sessions")
	mu.Lock()
	assert.Equal(t, 1, closed["/a"], "once")
	mu.Unlock()
}

// The mode and model are session settings: a model change is the model of
// the next provider request, and a session opened again, in another
// process on the same store, keeps its mode and model.
func TestModes_StoredAndSentToTheProvider(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	c := serve(t, fake, store, modeOptions(nil))
	c.initialize(`{}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	assert.Equal(t, "end_turn", c.prompt(sid, "first"))
	reqs := fake.Requests()
	assert.Equal(t, "small", reqs[len(reqs)-1].Model, "the first model offered")
	c.mustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "large"}, nil)
	c.mustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "bold"}, nil)
	assert.Equal(t, "end_turn", c.prompt(sid, "second"))
	reqs = fake.Requests()
	assert.Equal(t, "large", reqs[len(reqs)-1].Model, "the next request asks for the model chosen")
	c.mustCall("session/close", map[string]any{"sessionId": sid}, nil)

	got := make(chan acp.ToolSession, 1)
	again := serve(t, fake, store, modeOptions(got))
	again.initialize(`{}`)
	var load map[string]json.RawMessage
	again.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, &load)
	assert.JSONEq(t, jsonf(wantOptionsV1, "bold", "large"), string(load["configOptions"]))
	assert.Contains(t, string(load["modes"]), `"currentModeId":"bold"`)
	assert.Equal(t, "bold", (<-got).Client.Mode(), "the tools read the stored mode")
	// The replay shows each change where it was made, as it was: the model,
	// then the mode, after the first turn and before the second.
	var shown []string
	for _, u := range updates(t, again.take()) {
		switch u["sessionUpdate"] {
		case "current_mode_update":
			shown = append(shown, fmt.Sprint("mode ", u["currentModeId"]))
		case "config_option_update":
			for _, o := range u["configOptions"].([]any) {
				o := o.(map[string]any)
				shown = append(shown, fmt.Sprint(o["id"], "=", o["currentValue"]))
			}
		case "agent_message_chunk":
			shown = append(shown, "text")
		}
	}
	assert.Equal(t, []string{"text", "mode=careful", "model=large", "mode bold", "mode=bold", "model=large", "text"}, compactTexts(shown))
}

// compactTexts folds runs of "text" into one.
func compactTexts(in []string) []string {
	var out []string
	for _, s := range in {
		if s == "text" && len(out) > 0 && out[len(out)-1] == "text" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// A mode change during a turn is taken at the turn's next step checkpoint
// (session.Configure): the turn's reply comes first, then the mode's
// updates, and set_mode is answered after them.
func TestModes_ChangeDuringATurn(t *testing.T) {
	fake := providertest.New()
	got := make(chan acp.ToolSession, 1)
	c := serve(t, fake, memstore.New(), modeOptions(got))
	c.initialize(`{}`)
	sid := c.newSession()
	ts := <-got
	c.take()
	release := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "the reply", Gate: release})
	turn := c.promptAsync(sid, "go")
	require.NoError(t, fake.WaitCalls(t.Context(), 1))
	set := make(chan error, 1)
	require.NoError(t, c.conn.Send(t.Context(), "session/set_mode", map[string]any{"sessionId": sid, "modeId": "bold"}, func(_ json.RawMessage, err error) { set <- err }))
	// The connection runs handlers one at a time, in order: once a later
	// request is answered, set_mode's handler has queued the change.
	c.mustCall("session/list", map[string]any{}, nil)
	assert.Equal(t, "careful", ts.Client.Mode(), "not taken while the step runs")
	close(release)
	assert.Equal(t, "end_turn", turn())
	require.NoError(t, <-set)
	assert.Equal(t, "bold", ts.Client.Mode())
	c.waitFor("config_option_update")
	ks := kinds(updates(t, c.take()))
	reply := slicesIndex(ks, "agent_message_chunk")
	mode := slicesIndex(ks, "current_mode_update")
	require.GreaterOrEqual(t, reply, 0, "%v", ks)
	assert.Greater(t, mode, reply, "the mode changes after the step that was running: %v", ks)
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
