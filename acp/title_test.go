package acp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// titles are the titles of the session_info_update updates in ups.
func titles(ups []map[string]any) []any {
	var out []any
	for _, u := range ups {
		if u["sessionUpdate"] == "session_info_update" {
			out = append(out, u["title"])
		}
	}
	return out
}

// The title a session is given when it is created (Config.Title) is never
// a change, so no SettingsEvent reports it: a client that starts from
// nothing learns it when the session opens, once, after the commands and
// before any prompt (session/new), or after the replay (session/load in a
// fresh process); a session/resume sends nothing. A session titled by its
// first message reports that title from the session's event, right after
// the message, live and on replay (TestServe_PromptStreamsBeforeResponse,
// TestServe_LoadReplaysInNewProcess).
func TestServe_TitleGivenAtCreation(t *testing.T) {
	store := memstore.New()
	opts := acp.ServerOptions{}
	opts.Session.Title = "Given"
	fake := providertest.New()
	c := serve(t, fake, store, opts)
	c.initialize(`{}`)
	sid := c.newSession()
	c.waitFor("session_info_update")
	ups := updates(t, c.take())
	require.Equal(t, []string{"available_commands_update", "session_info_update"}, kinds(ups), "before any prompt")
	assert.Equal(t, "Given", ups[1]["title"])
	assert.NotContains(t, ups[1], "updatedAt", "no change happened at a time")
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	require.Equal(t, "end_turn", c.prompt(sid, "hello"))
	assert.Empty(t, titles(updates(t, c.take())), "the first prompt does not title a titled session")
	require.NoError(t, c.conn.Close())

	c2 := serve(t, providertest.New(), store, opts)
	c2.initialize(`{}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	c2.waitFor("session_info_update")
	ups = updates(t, c2.take())
	assert.Equal(t, []string{"user_message_chunk", "agent_message_chunk", "available_commands_update", "session_info_update"}, kinds(ups))
	assert.Equal(t, []any{"Given"}, titles(ups))

	c2.mustCall("session/resume", map[string]any{"sessionId": sid, "cwd": "/project"}, nil)
	c2.waitFor("available_commands_update")
	assert.Equal(t, []string{"available_commands_update"}, kinds(updates(t, c2.take())), "a resume sends nothing but the commands")
}
