package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// session/list: advertised, newest first, filtered by cwd, titled after the
// first prompt; a malformed cursor is invalid params.
func TestServe_SessionList(t *testing.T) {
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	var init struct {
		AgentCapabilities struct {
			SessionCapabilities map[string]any `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	c.mustCall("initialize", json.RawMessage(`{"protocolVersion":1}`), &init)
	for _, k := range []string{"list", "resume", "close"} {
		assert.Equal(t, map[string]any{}, init.AgentCapabilities.SessionCapabilities[k], k)
	}
	assert.NotContains(t, init.AgentCapabilities.SessionCapabilities, "additionalDirectories", "without SessionTools nothing uses them")
	var ids []string
	for _, cwd := range []string{"/a", "/b", "/a"} {
		var resp struct{ SessionID string }
		c.mustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &resp)
		assert.Equal(t, "end_turn", c.prompt(resp.SessionID, "work in "+cwd+"\nsecond line"))
		ids = append(ids, resp.SessionID)
	}
	type info struct {
		SessionID, Cwd, Title, UpdatedAt string
	}
	var all struct {
		Sessions   []info
		NextCursor *string
	}
	c.mustCall("session/list", map[string]any{}, &all)
	require.Len(t, all.Sessions, 3)
	assert.Equal(t, []string{ids[2], ids[1], ids[0]}, []string{all.Sessions[0].SessionID, all.Sessions[1].SessionID, all.Sessions[2].SessionID}, "newest first")
	assert.Equal(t, "work in /a", all.Sessions[0].Title, "one line of the first prompt")
	assert.Equal(t, "/a", all.Sessions[0].Cwd)
	assert.NotEmpty(t, all.Sessions[0].UpdatedAt)
	assert.Nil(t, all.NextCursor, "one page")

	var inA struct{ Sessions []info }
	c.mustCall("session/list", map[string]any{"cwd": "/a"}, &inA)
	require.Len(t, inA.Sessions, 2)
	assert.Equal(t, ids[2], inA.Sessions[0].SessionID)
	assert.Equal(t, ids[0], inA.Sessions[1].SessionID)

	err := c.call("session/list", map[string]any{"cursor": "not a cursor"}, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.InvalidParams, je.Code)
}

// session/resume attaches to a stored session without replaying it: the
// response comes first, then only what happens from then on.
func TestServe_SessionResume(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	c := serve(t, fake, store, acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	require.NoError(t, c.conn.Close())

	c2 := serve(t, fake, store, acp.ServerOptions{})
	c2.initialize(`{"session":{"compaction":{}}}`)
	c2.mustCall("session/resume", map[string]any{"sessionId": sid, "cwd": "/project"}, nil)
	c2.waitFor("available_commands_update")
	assert.Equal(t, []string{"available_commands_update"}, kinds(updates(t, c2.take())), "nothing replayed")
	fake.QueueTurn(providertest.Reply{Text: "three"})
	assert.Equal(t, "end_turn", c2.prompt(sid, "third"))
	assert.Equal(t, []string{"three"}, agentTexts(updates(t, c2.take())))

	err := c2.call("session/resume", map[string]any{"sessionId": "no-such-session", "cwd": "/project"}, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.ResourceNotFound, je.Code)
}

// session/close cancels the session's work as session/cancel does, answers
// its prompts, releases it (another store value on the same file can take
// it) and answers last; the session is then unknown.
func TestServe_SessionClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := providertest.New()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	prompt := c.request("session/prompt", promptParams(sid, "a long one"))
	require.NoError(t, fake.WaitCalls(t.Context(), 1))
	closed := c.response(c.request("session/close", `{"sessionId":"`+sid+`"}`))
	require.Nil(t, closed.Error)
	p := c.response(prompt)
	assert.Equal(t, "cancelled", stopReason(p), "the prompt in flight is answered cancelled")
	assert.Less(t, p.seq, closed.seq, "before session/close is answered")
	again := c.call("session/prompt", promptParams(sid, "again"))
	wantError(t, again, jsonrpc.ResourceNotFound, "a closed session is unknown")

	other, err := sqlite.Open(path)
	require.NoError(t, err)
	defer other.Close()
	lease, err := other.Acquire(t.Context(), sid)
	require.NoError(t, err, "the closed session's lease was released")
	require.NoError(t, lease.Release(t.Context()))
}

// Undo over ACP: /uncompact and _sessionkit/uncompact put the newest
// compaction's messages back, say so as agent text at its position (live
// and on replay), and _sessionkit/compact takes through (an unknown ID is
// invalid params).
func TestServe_Uncompact(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	c := serve(t, fake, store, acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	c.take()

	assert.Equal(t, "end_turn", c.prompt(sid, "/uncompact"))
	texts := agentTexts(updates(t, c.take()))
	assert.Equal(t, []string{"Undid the last compaction: restored 2 messages to the active history.\n\n"}, texts)
	assert.Equal(t, "end_turn", c.prompt(sid, "/uncompact"))
	texts = agentTexts(updates(t, c.take()))
	require.Len(t, texts, 1)
	assert.Contains(t, texts[0], "Nothing was undone")
	assert.Contains(t, texts[0], "nothing to undo", "says what happened")
	assert.NotContains(t, texts[0], "history:", "not the raw error chain")
	assert.NotContains(t, texts[0], "session: uncompact")

	fake.QueueSummary(providertest.Reply{Text: "S2"})
	var acc schema.CompactAccepted
	c.mustCall(schema.MethodCompact, map[string]any{"sessionId": sid}, &acc)
	c.waitFor("compaction_update")
	var un schema.UncompactAccepted
	c.mustCall(schema.MethodUncompact, map[string]any{"sessionId": sid}, &un)
	require.NotEmpty(t, un.UncompactID)
	finished := &schema.UncompactFinishedParams{}
	require.NoError(t, json.Unmarshal(c.waitNotification(schema.MethodUncompactFinished), finished))
	assert.Equal(t, un.UncompactID, finished.UncompactID)
	assert.Equal(t, 2, finished.Restored)
	assert.Empty(t, finished.Error)

	err := c.call(schema.MethodCompact, map[string]any{"sessionId": sid, "through": "no-such-message"}, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.InvalidParams, je.Code)

	// Replay in a new process: each undo at its position, as agent text.
	require.NoError(t, c.conn.Close())
	c2 := serve(t, providertest.New(), store, acp.ServerOptions{})
	c2.initialize(`{"session":{"compaction":{}}}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	c2.waitFor("available_commands_update")
	ups := updates(t, c2.take())
	var kindsAndText []string
	for _, u := range ups {
		k := u["sessionUpdate"].(string)
		if k == "agent_message_chunk" {
			if txt := u["content"].(map[string]any)["text"].(string); strings.Contains(txt, "Undid") {
				k = "undo"
			}
		}
		if k == "compaction_update" {
			k += ":" + u["status"].(string)
		}
		kindsAndText = append(kindsAndText, k)
	}
	assert.Equal(t, []string{"compaction_update:completed", "undo", "compaction_update:completed", "undo"}, filterKinds(kindsAndText, "compaction_update:completed", "undo"))
}

func filterKinds(ks []string, keep ...string) []string {
	var out []string
	for _, k := range ks {
		for _, w := range keep {
			if k == w {
				out = append(out, k)
			}
		}
	}
	return out
}

// ServerOptions.SessionTools gives each session tools of its own, for the
// cwd the client named; its error refuses the request with invalid params.
func TestServe_SessionTools(t *testing.T) {
	var cwds []string
	opts := acp.ServerOptions{SessionTools: func(ts acp.ToolSession) (acp.Toolset, error) {
		cwd := ts.Cwd
		if cwd == "/bad" {
			return acp.Toolset{}, errors.New("not a directory here")
		}
		cwds = append(cwds, cwd)
		return acp.Toolset{Tools: []session.Tool{{Name: "where", Run: func(context.Context, json.RawMessage) (string, error) { return cwd, nil }}}}, nil
	}}
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), opts)
	var init struct {
		AgentCapabilities struct {
			SessionCapabilities map[string]any `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	c.mustCall("initialize", json.RawMessage(`{"protocolVersion":1}`), &init)
	assert.Equal(t, map[string]any{}, init.AgentCapabilities.SessionCapabilities["additionalDirectories"], "the session tools are given the additional directories")
	var resp struct{ SessionID string }
	c.mustCall("session/new", map[string]any{"cwd": "/project", "mcpServers": []any{}}, &resp)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "c1", Name: "where"}}}, providertest.Reply{Text: "done"})
	assert.Equal(t, "end_turn", c.prompt(resp.SessionID, "where am I?"))
	reqs := fake.Requests()
	require.NotEmpty(t, reqs)
	require.Len(t, reqs[0].Tools, 1)
	assert.Equal(t, "where", reqs[0].Tools[0].Name)
	assert.Equal(t, "/project", reqs[1].Messages[len(reqs[1].Messages)-1].Text, "the tool ran with its session's cwd")
	assert.Equal(t, []string{"/project"}, cwds)

	err := c.call("session/new", map[string]any{"cwd": "/bad", "mcpServers": []any{}}, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.InvalidParams, je.Code)
	assert.Contains(t, je.Message, "not a directory here")
}
