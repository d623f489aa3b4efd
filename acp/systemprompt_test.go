package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

const (
	initV1 = `{"protocolVersion":1,"clientCapabilities":{}}`
	initV2 = `{"protocolVersion":2,"info":{"name":"t","version":"0"},"capabilities":{}}`
)

// lastSystem waits for the fake's nth request and returns its system prompt.
func lastSystem(t *testing.T, fake *providertest.Fake, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, fake.WaitCalls(ctx, n))
	reqs := fake.Requests()
	return reqs[n-1].System
}

// TestSystemPrompt_Advertised: initialize advertises the client's system
// prompt with override, on v1 (sessionCapabilities) and v2 (session).
func TestSystemPrompt_Advertised(t *testing.T) {
	for _, tc := range []struct{ name, init, path string }{
		{"v1", initV1, "agentCapabilities.sessionCapabilities"},
		{"v2", initV2, "capabilities.session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := leanServe(t, acp.ServerOptions{})
			var r map[string]any
			require.NoError(t, c.call("initialize", tc.init, &r))
			var caps any = r
			for _, k := range []string{"agentCapabilities", "sessionCapabilities"} {
				if tc.name == "v2" {
					break
				}
				caps = caps.(map[string]any)[k]
			}
			if tc.name == "v2" {
				caps = r["capabilities"].(map[string]any)["session"]
			}
			got, err := json.Marshal(caps.(map[string]any)["systemPrompt"])
			require.NoError(t, err)
			assert.JSONEq(t, `{"mode":{"override":{}}}`, string(got), tc.path+".systemPrompt")
		})
	}
}

// TestSystemPrompt_AppendOverrideAndReload: a v1 client's appended prompt
// follows the agent's and the project's instructions; a session/load on a
// new connection that does not send it keeps it (stored), one that sends
// an override replaces the agent's prompt; the project instruction files
// are named in the _meta of every response that opens the session.
func TestSystemPrompt_AppendOverrideAndReload(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	var opts acp.ServerOptions
	opts.Session.Provider, opts.Session.Store, opts.Session.SystemPrompt = fake, store, "agent"
	reads := 0
	opts.Instructions = func(cwd string, dirs []string) acp.Instructions {
		reads++
		return acp.Instructions{Text: fmt.Sprintf("project %d", reads), Files: []string{cwd + "/AGENTS.md"}}
	}

	c := leanServe(t, opts)
	require.NoError(t, c.call("initialize", initV1, nil))
	var created struct {
		SessionID string         `json:"sessionId"`
		Meta      map[string]any `json:"_meta"`
	}
	require.NoError(t, c.call("session/new", `{"cwd":"/project","mcpServers":[],
		"systemPrompt":{"mode":"append","content":[{"type":"text","text":"be terse"},{"type":"text","text":"say why"}]}}`, &created))
	assert.Equal(t, map[string]any{"sessionkit": map[string]any{"projectInstructions": []any{"/project/AGENTS.md"}}}, created.Meta)
	require.NoError(t, c.call("session/prompt", promptParams(created.SessionID, "hi"), nil))
	assert.Equal(t, "agent\n\nproject 1\n\nbe terse\n\nsay why", lastSystem(t, fake, 1))
	require.NoError(t, c.call("session/close", `{"sessionId":"`+created.SessionID+`"}`, nil))

	// A new connection loads it without a systemPrompt: kept.
	c2 := leanServe(t, opts)
	require.NoError(t, c2.call("initialize", initV1, nil))
	var loaded struct {
		Meta map[string]any `json:"_meta"`
	}
	require.NoError(t, c2.call("session/load", `{"sessionId":"`+created.SessionID+`","cwd":"/project","mcpServers":[]}`, &loaded))
	assert.Equal(t, map[string]any{"sessionkit": map[string]any{"projectInstructions": []any{"/project/AGENTS.md"}}}, loaded.Meta)
	require.NoError(t, c2.call("session/prompt", promptParams(created.SessionID, "again"), nil))
	assert.Equal(t, "agent\n\nproject 2\n\nbe terse\n\nsay why", lastSystem(t, fake, 2), "the stored prompt, the instructions read again")

	// A second load on the same connection with another prompt is refused.
	err := c2.call("session/load", `{"sessionId":"`+created.SessionID+`","cwd":"/project","mcpServers":[],
		"systemPrompt":{"mode":"override","content":[{"type":"text","text":"other"}]}}`, nil)
	assertInvalidParams(t, err, `field "systemPrompt"`)
	require.NoError(t, c2.call("session/close", `{"sessionId":"`+created.SessionID+`"}`, nil))

	// Resumed with an override: the agent's prompt is replaced.
	c3 := leanServe(t, opts)
	require.NoError(t, c3.call("initialize", initV1, nil))
	require.NoError(t, c3.call("session/resume", `{"sessionId":"`+created.SessionID+`","cwd":"/project",
		"systemPrompt":{"mode":"override","content":[{"type":"text","text":"you are a poet"}]}}`, nil))
	require.NoError(t, c3.call("session/prompt", promptParams(created.SessionID, "third"), nil))
	assert.Equal(t, "you are a poet\n\nproject 3", lastSystem(t, fake, 3))
}

// TestSystemPrompt_V2: a v2 session/new and session/resume take the
// systemPrompt as v1 does.
func TestSystemPrompt_V2(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	var opts acp.ServerOptions
	opts.Session.Provider, opts.Session.Store, opts.Session.SystemPrompt = fake, store, "agent"
	c := leanServe(t, opts)
	require.NoError(t, c.call("initialize", initV2, nil))
	var created struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, c.call("session/new", `{"cwd":"/project","systemPrompt":{"mode":"append","content":[{"type":"text","text":"v2 rules"}]}}`, &created))
	require.NoError(t, c.call("session/prompt", promptParams(created.SessionID, "hi"), nil))
	assert.Equal(t, "agent\n\nv2 rules", lastSystem(t, fake, 1))
	require.NoError(t, c.call("session/close", `{"sessionId":"`+created.SessionID+`"}`, nil))

	c2 := leanServe(t, opts)
	require.NoError(t, c2.call("initialize", initV2, nil))
	require.NoError(t, c2.call("session/resume", `{"sessionId":"`+created.SessionID+`","cwd":"/project"}`, nil))
	require.NoError(t, c2.call("session/prompt", promptParams(created.SessionID, "again"), nil))
	assert.Equal(t, "agent\n\nv2 rules", lastSystem(t, fake, 2), "kept without the field")
}

// assertInvalidParams checks that err is an invalid params error whose
// message contains want.
func assertInvalidParams(t *testing.T, err error, want string) {
	t.Helper()
	var e *jsonrpc.Error
	require.True(t, errors.As(err, &e), "an error response, got %v", err)
	assert.Equal(t, jsonrpc.InvalidParams, e.Code, e.Message)
	assert.Contains(t, e.Message, want)
}

// TestSystemPrompt_Malformed: a systemPrompt the agent cannot apply is
// invalid params naming the field, on every lifecycle request of v1 and
// v2, and opens no session.
func TestSystemPrompt_Malformed(t *testing.T) {
	bad := []struct{ name, prompt, want string }{
		{"unknown mode", `{"mode":"prepend","content":[{"type":"text","text":"x"}]}`, `field "systemPrompt.mode"`},
		{"image block", `{"mode":"append","content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`, `field "systemPrompt.content[0]"`},
		{"unknown block", `{"mode":"append","content":[{"type":"text","text":"ok"},{"type":"hologram"}]}`, `field "systemPrompt.content[1]"`},
		{"empty content", `{"mode":"append","content":[]}`, `field "systemPrompt.content"`},
		{"blank text", `{"mode":"override","content":[{"type":"text","text":"  "}]}`, `field "systemPrompt.content"`},
		{"mode not a string", `{"mode":1,"content":[{"type":"text","text":"x"}]}`, `systemPrompt`},
		{"content not an array", `{"mode":"append","content":"x"}`, `systemPrompt`},
		{"no mode", `{"content":[{"type":"text","text":"x"}]}`, `mode`},
		{"not an object", `"be terse"`, `systemPrompt`},
	}
	for _, v := range []struct{ name, init string }{{"v1", initV1}, {"v2", initV2}} {
		t.Run(v.name, func(t *testing.T) {
			var opts acp.ServerOptions
			opts.Session.Store = memstore.New()
			c := leanServe(t, opts)
			require.NoError(t, c.call("initialize", v.init, nil))
			var created struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, c.call("session/new", `{"cwd":"/project","mcpServers":[]}`, &created))
			require.NoError(t, c.call("session/close", `{"sessionId":"`+created.SessionID+`"}`, nil))
			methods := map[string]string{
				"session/new":    `{"cwd":"/project","mcpServers":[],"systemPrompt":%s}`,
				"session/resume": `{"sessionId":"` + created.SessionID + `","cwd":"/project","systemPrompt":%s}`,
			}
			if v.name == "v1" {
				methods["session/load"] = `{"sessionId":"` + created.SessionID + `","cwd":"/project","mcpServers":[],"systemPrompt":%s}`
			}
			for method, params := range methods {
				for _, b := range bad {
					err := c.call(method, fmt.Sprintf(params, b.prompt), nil)
					assertInvalidParams(t, err, b.want)
				}
			}
			var list struct {
				Sessions []any `json:"sessions"`
			}
			require.NoError(t, c.call("session/list", `{}`, &list))
			assert.Len(t, list.Sessions, 1, "no session was opened by a refused request")
		})
	}
}

// TestSystemPrompt_InstructionsNotText: project instructions that are not
// UTF-8 text never reach the prompt, nor the response's _meta.
func TestSystemPrompt_InstructionsNotText(t *testing.T) {
	for name, text := range map[string]string{"NUL": "rules\x00", "not UTF-8": "r\xe8gles"} {
		t.Run(name, func(t *testing.T) {
			fake := providertest.New()
			fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
			var opts acp.ServerOptions
			opts.Session.Provider, opts.Session.Store, opts.Session.SystemPrompt = fake, memstore.New(), "agent"
			opts.Instructions = func(cwd string, dirs []string) acp.Instructions {
				return acp.Instructions{Text: text, Files: []string{cwd + "/AGENTS.md"}}
			}
			c := leanServe(t, opts)
			require.NoError(t, c.call("initialize", initV1, nil))
			var created struct {
				SessionID string         `json:"sessionId"`
				Meta      map[string]any `json:"_meta"`
			}
			require.NoError(t, c.call("session/new", `{"cwd":"/project","mcpServers":[]}`, &created))
			assert.Nil(t, created.Meta["sessionkit"], "no instruction files named")
			require.NoError(t, c.call("session/prompt", promptParams(created.SessionID, "hi"), nil))
			assert.Equal(t, "agent", lastSystem(t, fake, 1))
		})
	}
}
