package mcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// A session offers the tools to the model with the server's schema, runs
// the call the model makes on the MCP server and gives the model its
// result; an isError result reaches the model as a failed call.
func TestInASession(t *testing.T) {
	set := connect(t, options(t), stdio(t, "local", "local"))
	fake := providertest.New()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := session.New(ctx, session.Config{Provider: fake, Tools: set.Tools()})
	require.NoError(t, err)
	defer s.Close()

	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "mcp__local__echo", Arguments: []byte(`{"text":"from the model"}`)},
			{ID: "c2", Name: "mcp__local__fail", Arguments: []byte(`{}`)},
		}},
		providertest.Reply{Text: "done"},
	)
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "use the tools"})
	require.NoError(t, err)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, res.Err)

	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	var offered []string
	for _, spec := range reqs[0].Tools {
		offered = append(offered, spec.Name)
		if spec.Name == "mcp__local__echo" {
			assert.JSONEq(t, string(echoSchema), string(spec.Parameters))
		}
	}
	assert.ElementsMatch(t, names(set), offered)
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == history.RoleTool {
			results = append(results, m.Text)
		}
	}
	assert.Equal(t, []string{"local says from the model", "error: tool mcp__local__fail failed: it broke"}, results)
}
