package acp_test

import (
	"context"
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

// The completed compaction_update names the files the archived messages
// read and changed under _meta.sessionkit.files, newest first, live and
// in a session/load's replay.
func TestFiles_CompactionUpdateCarriesFiles(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{{Name: "touch", Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
		var in struct{ Path, Op string }
		if err := json.Unmarshal(raw, &in); err != nil {
			return "", err
		}
		return "ok", session.FileLedgerOf(ctx).Record(history.FileAccess{Path: in.Path, Op: history.FileOp(in.Op), Hash: "xxh64:0000000000000001"})
	}}}
	c := serve(t, fake, store, opts)
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{
		{ID: "t1", Name: "touch", Arguments: json.RawMessage(`{"Path":"a.go","Op":"read"}`)},
		{ID: "t2", Name: "touch", Arguments: json.RawMessage(`{"Path":"b.go","Op":"changed"}`)},
	}}, providertest.Reply{Text: "ok"}, providertest.Reply{Text: "ok"})
	require.Equal(t, "end_turn", c.prompt(sid, "work"))
	require.Equal(t, "end_turn", c.prompt(sid, "go on"))
	c.take()
	fake.QueueSummary(providertest.Reply{Text: "- changed b.go"})
	c.prompt(sid, "/compact")
	want := []any{map[string]any{"path": "b.go", "changed": true}, map[string]any{"path": "a.go", "read": true}}
	filesOf := func(notes []note) []any {
		for _, u := range compactionUpdates(updates(t, notes)) {
			if u["status"] == "completed" {
				meta, _ := u["_meta"].(map[string]any)
				sk, _ := meta["sessionkit"].(map[string]any)
				files, _ := sk["files"].([]any)
				return files
			}
		}
		return nil
	}
	assert.Equal(t, want, filesOf(c.take()), "live")

	c2 := serve(t, fake, store, acp.ServerOptions{})
	c2.initialize(`{"session":{"compaction":{}}}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	assert.Equal(t, want, filesOf(c2.take()), "replayed")
}
