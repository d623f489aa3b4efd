package acp_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestToolCallTitle_ReplayedWithoutItsTool: a call replayed by a
// session/load whose session no longer has the tool (an MCP server the
// load did not send again) is titled by its name from its tool_call to its
// final update, as it was live.
func TestToolCallTitle_ReplayedWithoutItsTool(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{echoNamed("mcp__demo__greet")}
	c := serve(t, fake, store, opts)
	c.initialize(`{}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "g1", Name: "mcp__demo__greet", Arguments: json.RawMessage(`{}`)}}}, providertest.Reply{Text: "ok"})
	require.Equal(t, "end_turn", c.prompt(sid, "greet"))

	c2 := serve(t, fake, store, acp.ServerOptions{})
	c2.initialize(`{}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	var titles []any
	for _, u := range updates(t, c2.take()) {
		if k := u["sessionUpdate"]; k == "tool_call" || k == "tool_call_update" {
			titles = append(titles, u["title"])
		}
	}
	assert.Equal(t, []any{"mcp__demo__greet", "mcp__demo__greet"}, titles)
}
