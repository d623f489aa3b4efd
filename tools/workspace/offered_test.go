package workspace_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// TestReadOnlyOffersOnlyTheReadingTools: the tools the model sees (the
// provider's request) follow the mode at every request: in read-only
// mode the reading tools and recall only, no write_file, edit_file,
// run_command or MCP tool; every mode that can change something offers
// them all; a switch back offers them again.
func TestReadOnlyOffersOnlyTheReadingTools(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	var mode atomic.Value
	mode.Store(workspace.ModeAsk)
	o := workspace.Options{Mode: func() string { return mode.Load().(string) }, Sandbox: sandbox.Policy{Mode: sandbox.Off}}
	tools := append(ws.Tools(o), workspace.Guard(session.Tool{Name: "mcp__demo__greet", Parameters: json.RawMessage(`{"type":"object"}`), Run: func(context.Context, json.RawMessage) (string, error) {
		return "hi", nil
	}}, o, func(json.RawMessage) string { return "MCP demo: greet" }))
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: fake, Store: memstore.New(), Tools: tools, Recall: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	offered := func(m string) []string {
		t.Helper()
		mode.Store(m)
		h, err := s.Prompt(ctx, session.PromptRequest{Text: "hello"})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
		reqs := fake.Requests()
		var names []string
		for _, tl := range reqs[len(reqs)-1].Tools {
			names = append(names, tl.Name)
		}
		return slices.Sorted(slices.Values(names))
	}
	all := []string{"edit_file", "list_files", "mcp__demo__greet", "read_file", "recall", "run_command", "search", "write_file"}
	for _, m := range []string{workspace.ModeAsk, workspace.ModeAutoEdit, workspace.ModeFullAuto} {
		assert.Equal(t, all, offered(m), m)
	}
	assert.Equal(t, []string{"list_files", "read_file", "recall", "search"}, offered(workspace.ModeReadOnly))
	assert.Equal(t, all, offered(workspace.ModeAsk), "offered again after a switch back")
}
