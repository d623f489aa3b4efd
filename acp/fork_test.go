package acp_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// forkParams are the params of session/fork of sid, at message at ("" for
// none).
func forkParams(sid, at string) string {
	p := map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}
	if at != "" {
		p["_meta"] = map[string]any{"sessionkit": map[string]any{"messageId": at}}
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// forkSource opens a SQLite store and, on the connection serve makes of
// it (and initializes), a session (opened by open) with two turns (each
// by prompt); it returns the connection, the store, the session, its
// history and the ID of its first reply.
func forkSource(t *testing.T, serve func(history.Store) *hostileClient, open func(*hostileClient) string, prompt func(*hostileClient, string)) (*hostileClient, history.Store, string, *history.Snapshot, string) {
	t.Helper()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	c := serve(store)
	src := open(c)
	prompt(c, src)
	prompt(c, src)
	snap, err := store.Load(t.Context(), src)
	require.NoError(t, err)
	require.Len(t, snap.Active, 4)
	return c, store, src, snap, snap.Active[1].ID
}

// session/fork (v1) on a SQLite store: advertised under
// sessionCapabilities.fork; a fork of a session open on this connection
// (leased by it) at _meta.sessionkit.messageId holds the source's history
// up to that message, is served at once (a prompt works), and a
// session/load of it replays that history; without the meta the fork is
// at the newest entry; the source is unchanged. Bad input is refused and
// makes no session.
func TestServe_SessionFork(t *testing.T) {
	var m hostileMsg
	c, store, src, snap, first := forkSource(t, func(store history.Store) *hostileClient {
		c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
		m = c.call("initialize", v1InitParams)
		return c
	}, (*hostileClient).newSession, (*hostileClient).works)
	require.Nil(t, m.Error)
	var caps struct {
		Agent struct {
			Session map[string]any `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &caps))
	assert.Equal(t, map[string]any{}, caps.Agent.Session["fork"], "sessionCapabilities.fork")

	m = c.call("session/fork", forkParams(src, first))
	require.Nil(t, m.Error, "session/fork")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(t, r.SessionID)
	require.NotEqual(t, src, r.SessionID)
	fork, err := store.Load(t.Context(), r.SessionID)
	require.NoError(t, err)
	assert.Equal(t, src, fork.ForkOf)
	assert.Equal(t, first, fork.ForkAt)
	historyIDs := func(msgs []history.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		return out
	}
	assert.Equal(t, historyIDs(snap.Active[:2]), historyIDs(fork.Active))
	c.works(r.SessionID) // served at once

	// A load of the fork, closed first, replays its history.
	require.Nil(t, c.call("session/close", `{"sessionId":"`+r.SessionID+`"}`).Error)
	seq := c.lastSeq()
	require.Nil(t, c.call("session/load", `{"sessionId":"`+r.SessionID+`","cwd":"/project","mcpServers":[]}`).Error)
	var kinds []string
	for _, n := range c.notesSince(seq) {
		if n.sid == r.SessionID && (n.kind == "user_message_chunk" || n.kind == "agent_message_chunk") {
			kinds = append(kinds, n.kind)
		}
	}
	assert.Len(t, kinds, 4, "two messages inherited, two its own: %v", kinds)

	// Without the meta: the newest entry.
	m = c.call("session/fork", forkParams(src, ""))
	require.Nil(t, m.Error)
	require.NoError(t, json.Unmarshal(m.Result, &r))
	whole, err := store.Load(t.Context(), r.SessionID)
	require.NoError(t, err)
	assert.Equal(t, historyIDs(snap.Active), historyIDs(whole.Active))
	after, err := store.Load(t.Context(), src)
	require.NoError(t, err)
	assert.Equal(t, historyIDs(snap.Active), historyIDs(after.Active), "the source is unchanged")

	n := len(listed(t, c))
	wantError(t, c.call("session/fork", forkParams("no-such-session", "")), jsonrpc.ResourceNotFound, "unknown source")
	wantError(t, c.call("session/fork", forkParams(src, "no-such-message")), jsonrpc.InvalidParams, "unknown message")
	wantError(t, c.call("session/fork", `{"sessionId":"`+src+`","cwd":"/project","_meta":{"sessionkit":{"messageId":7}}}`), jsonrpc.InvalidParams, "a messageId that is no string")
	wantError(t, c.call("session/fork", `{"sessionId":"`+src+`","cwd":""}`), jsonrpc.InvalidParams, "no cwd")
	wantError(t, c.call("session/fork", `{"sessionId":"","cwd":"/project"}`), jsonrpc.InvalidParams, "no sessionId")
	assert.Len(t, listed(t, c), n, "no refused fork made a session")
	c.works(src)
}

// session/fork on v2: advertised as session.fork; the fork at
// _meta.sessionkit.messageId holds the source's history up to that message,
// its response carries the configuration options, it is served at once, and
// bad input (an unknown source or message, v2 mcpServers that are no list)
// is refused without making a session.
func TestServe_SessionForkV2(t *testing.T) {
	offer := modeOptions(nil)
	var m hostileMsg
	c, store, src, snap, first := forkSource(t, func(store history.Store) *hostileClient {
		c := hostileServe(t, hostileFake(), store, acp.ServerOptions{Modes: offer.Modes, Models: offer.Models})
		m = c.call("initialize", v2InitParams)
		return c
	}, (*hostileClient).newSessionV2, (*hostileClient).worksV2)
	require.Nil(t, m.Error)
	var caps struct {
		Agent struct {
			Session map[string]any `json:"session"`
		} `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &caps))
	assert.Equal(t, map[string]any{}, caps.Agent.Session["fork"], "capabilities.session.fork")

	m = c.call("session/fork", forkParams(src, first))
	require.Nil(t, m.Error, "session/fork")
	var r struct {
		SessionID     string           `json:"sessionId"`
		ConfigOptions []map[string]any `json:"configOptions"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(t, r.SessionID)
	require.Len(t, r.ConfigOptions, 2, "the fork's configuration options")
	assert.Equal(t, "mode", r.ConfigOptions[0]["configId"])
	assert.Equal(t, "model", r.ConfigOptions[1]["configId"])
	fork, err := store.Load(t.Context(), r.SessionID)
	require.NoError(t, err)
	assert.Equal(t, src, fork.ForkOf)
	assert.Equal(t, first, fork.ForkAt)
	require.Len(t, fork.Active, 2)
	assert.Equal(t, snap.Active[0].ID, fork.Active[0].ID)
	assert.Equal(t, first, fork.Active[1].ID)
	c.worksV2(r.SessionID) // served at once

	n := len(listed(t, c))
	wantError(t, c.call("session/fork", forkParams("no-such-session", "")), jsonrpc.ResourceNotFound, "unknown source")
	wantError(t, c.call("session/fork", forkParams(src, "no-such-message")), jsonrpc.InvalidParams, "unknown message")
	wantError(t, c.call("session/fork", `{"sessionId":"`+src+`","cwd":"/project","mcpServers":{}}`), jsonrpc.InvalidParams, "mcpServers that are no list")
	wantError(t, c.call("session/fork", `{"sessionId":"`+src+`"}`), jsonrpc.InvalidParams, "no cwd")
	assert.Len(t, listed(t, c), n, "no refused fork made a session")
	c.worksV2(src)
}
