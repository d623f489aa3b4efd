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
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// toolCalls returns the tool_call updates of ups by their ID.
func toolCalls(ups []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, u := range ups {
		if u["sessionUpdate"] == "tool_call" {
			out[u["toolCallId"].(string)] = u
		}
	}
	return out
}

// A call of the session's built-in recall tool is a search titled
// Recall "<query>", a read of a message is of kind read: live, and on
// replay in a new process, without any Toolset.Describe of the agent's.
func TestRecall_ToolCallsShownAsSearchAndRead(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	opts := acp.ServerOptions{Session: session.Config{Recall: true}}
	c := serve(t, fake, store, opts)
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{{ID: "r1", Name: session.RecallTool, Arguments: json.RawMessage(`{"query":"why no cobra"}`)}}},
		providertest.Reply{ToolCalls: []history.ToolCall{{ID: "r2", Name: session.RecallTool, Arguments: json.RawMessage(`{"message_id":"m-1","before":1}`)}}},
		providertest.Reply{Text: "done"},
	)
	assert.Equal(t, "end_turn", c.prompt(sid, "what about cobra?"))
	check := func(ups []map[string]any, when string) {
		calls := toolCalls(ups)
		require.Contains(t, calls, "r1", when)
		require.Contains(t, calls, "r2", when)
		assert.Equal(t, "search", calls["r1"]["kind"], when)
		assert.Equal(t, `Recall "why no cobra"`, calls["r1"]["title"], when)
		assert.Equal(t, "read", calls["r2"]["kind"], when)
		assert.Equal(t, "Recall message m-1", calls["r2"]["title"], when)
	}
	live := updates(t, c.take())
	check(live, "live")
	status := map[string]any{}
	for _, u := range live {
		if u["sessionUpdate"] == "tool_call_update" {
			status[u["toolCallId"].(string)] = u["status"]
		}
	}
	assert.Equal(t, map[string]any{"r1": "completed", "r2": "failed"}, status, "the search ran; m-1 is no message of the session")
	require.NoError(t, c.conn.Close())

	c2 := serve(t, providertest.New(), store, opts)
	c2.initialize(`{"session":{"compaction":{}}}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	c2.waitFor("available_commands_update")
	check(updates(t, c2.take()), "replayed")
}

// The completed compaction_update carries the Segment's fidelity under
// _meta.sessionkit, next to what else sessionkit puts there.
func TestRecall_CompletedCompactionCarriesFidelity(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{Text: "I will change `parseConfig`."}, providertest.Reply{Text: "ok"})
	assert.Equal(t, "end_turn", c.prompt(sid, "Never edit go.sum; fix internal/config/load.go."))
	assert.Equal(t, "end_turn", c.prompt(sid, "go on"))
	c.take()
	fake.QueueSummary(providertest.Reply{Text: "- fix internal/config/load.go (`parseConfig`)"})
	c.prompt(sid, "/compact")
	var done map[string]any
	for _, u := range compactionUpdates(updates(t, c.take())) {
		if u["status"] == "completed" {
			done = u
		}
	}
	require.NotNil(t, done)
	assert.Equal(t, map[string]any{"sessionkit": map[string]any{"trigger": "manual", "fidelity": map[string]any{
		"facts": 4.0, "kept": 2.0, "missing": []any{"path: go.sum", "instruction: Never edit go.sum;"},
	}}}, done["_meta"])
}

// A remote session reads the fidelity and the files of a completed
// compaction, and keeps its trigger (a v1 entity's _meta is replaced by
// the completed update's).
func TestRecall_RemoteReadsFidelity(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
	rs := ra.newSession(c, "")
	sub, err := rs.Subscribe(context.Background(), session.SubscribeOptions{})
	require.NoError(t, err)
	defer sub.Close()
	turn, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
	require.NoError(t, err)
	req := ra.read()
	update := func(u string) {
		ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`)
	}
	update(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"sessionkit":{"trigger":"auto"}}}`)
	update(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"S"}],` +
		`"_meta":{"sessionkit":{"trigger":"auto","fidelity":{"facts":3,"kept":1,"missing":["path: go.sum","url: https://example.com"]},` +
		`"files":[{"path":"a.go","read":true,"changed":true},{"path":"b.go","read":true},{"path":""},{"omitted":2}]}}}`)
	ra.respond(req, `{"stopReason":"end_turn"}`)
	require.NoError(t, wait(t, turn).Err)
	for ev := range sub.Events() {
		if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
			want := history.Fidelity{Facts: 3, Kept: 1, Missing: []string{"path: go.sum", "url: https://example.com"}}
			assert.Equal(t, want, c.Result.Fidelity)
			assert.Equal(t, want, c.Result.Segment.Fidelity)
			assert.Equal(t, session.TriggerAuto, c.Result.Trigger)
			assert.Equal(t, []history.FileState{
				{FileAccess: history.FileAccess{Path: "a.go", Op: history.FileChanged}, Read: true, Changed: true},
				{FileAccess: history.FileAccess{Path: "b.go", Op: history.FileRead}, Read: true},
			}, c.Result.Segment.Files, "the files of _meta.sessionkit.files")
			return
		}
	}
	t.Fatal("no finished compaction")
}

// Through a real agent, in both protocol versions: an automatic compaction
// with facts reaches a remote session as auto, with its fidelity.
func TestRecall_RemoteAutoCompactionKeepsTriggerAndFidelity(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			fake := providertest.New()
			fake.QueueTurn(providertest.Reply{Text: "I will edit internal/config/load.go.", Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}},
				providertest.Reply{Text: "ok", Usage: provider.Usage{InputTokens: 90, OutputTokens: 2}})
			fake.QueueSummary(providertest.Reply{Text: "- editing a config loader"})
			pa := startPipeAgentWith(t, fake, memstore.New(), acp.ServerOptions{Session: session.Config{AutoCompactTokens: 50}}, v.opts)
			rs, err := pa.client.NewSession(context.Background(), "/project")
			require.NoError(t, err)
			sub, err := rs.Subscribe(context.Background(), session.SubscribeOptions{})
			require.NoError(t, err)
			defer sub.Close()
			for _, p := range []string{"Fix internal/config/load.go.", "go on"} {
				h, err := rs.Prompt(context.Background(), session.PromptRequest{Text: p})
				require.NoError(t, err)
				require.NoError(t, wait(t, h).Err)
			}
			for ev := range sub.Events() {
				if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Phase == session.PhaseFinished {
					require.True(t, c.Result.Compacted, c.Result.Error)
					assert.Equal(t, session.TriggerAuto, c.Result.Trigger)
					assert.Equal(t, history.Fidelity{Facts: 1, Kept: 0, Missing: []string{"path: internal/config/load.go"}}, c.Result.Fidelity)
					return
				}
			}
			t.Fatal("no finished compaction")
		})
	}
}
