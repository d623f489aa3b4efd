package acp_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
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
	c2.mustCall("session/resume", map[string]any{"sessionId": sid, "cwd": "/work"}, nil)
	c2.waitFor("available_commands_update")
	assert.Equal(t, []string{"available_commands_update"}, kinds(updates(t, c2.take())), "nothing replayed")
	fake.QueueTurn(providertest.Reply{Text: "three"})
	assert.Equal(t, "end_turn", c2.prompt(sid, "third"))
	assert.Equal(t, []string{"three"}, agentTexts(updates(t, c2.take())))

	err := c2.call("session/resume", map[string]any{"sessionId": "no-such-session", "cwd": "/work"}, nil)
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
	c := serve(t, fake, store, acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	// The client's connection completes calls in the order their responses
	// arrive: the prompt's Pending is done when the close returns.
	pending, err := c.conn.Go(t.Context(), "session/prompt", promptOf(sid, "a long one"))
	require.NoError(t, err)
	require.NoError(t, fake.WaitCalls(t.Context(), 1))
	c.mustCall("session/close", map[string]any{"sessionId": sid}, nil)
	select {
	case <-pending.Done():
		var r struct{ StopReason string }
		require.NoError(t, pending.Wait(t.Context(), &r))
		assert.Equal(t, "cancelled", r.StopReason, "the prompt in flight is answered cancelled")
	default:
		t.Fatal("session/close was answered before the prompt it ended")
	}
	err = c.call("session/prompt", promptOf(sid, "again"), nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.ResourceNotFound, je.Code, "a closed session is unknown")

	other, err := sqlite.Open(path)
	require.NoError(t, err)
	defer other.Close()
	lease, err := other.Acquire(t.Context(), sid)
	require.NoError(t, err, "the closed session's lease was released")
	require.NoError(t, lease.Release(t.Context()))
}
