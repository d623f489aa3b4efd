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

const (
	planArgs    = `{"entries":[{"content":"read","status":"completed"},{"content":"fix","priority":"high","status":"in_progress"}]}`
	planEntries = `[{"content":"read","priority":"medium","status":"completed"},{"content":"fix","priority":"high","status":"in_progress"}]`
)

// planTurns scripts a turn that sets the plan, one whose plan call fails,
// and one that clears it.
func planTurns(fake *providertest.Fake) {
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{{ID: "p1", Name: session.PlanTool, Arguments: json.RawMessage(planArgs)}}},
		providertest.Reply{Text: "planned"},
		providertest.Reply{ToolCalls: []history.ToolCall{{ID: "p2", Name: session.PlanTool, Arguments: json.RawMessage(`{"entries":[{"content":"x","status":"done"}]}`)}}},
		providertest.Reply{Text: "oops"},
		providertest.Reply{ToolCalls: []history.ToolCall{{ID: "p3", Name: session.PlanTool, Arguments: json.RawMessage(`{"entries":[]}`)}}},
		providertest.Reply{Text: "cleared"},
	)
}

// planUpdates are the plan updates among ups, as JSON, in order; any
// tool call update of a plan call fails the test.
func planUpdates(t *testing.T, ups []map[string]any) []string {
	t.Helper()
	var out []string
	for _, u := range ups {
		switch u["sessionUpdate"] {
		case "plan", "plan_update", "plan_removed":
			b, err := json.Marshal(u)
			require.NoError(t, err)
			out = append(out, string(b))
		case "tool_call", "tool_call_update":
			t.Errorf("a plan call is shown as a tool call: %v", u)
		}
	}
	return out
}

// TestPlan_V1 shows the plan tool's plans to a v1 client: the legacy plan
// update to one without clientCapabilities.plan, plan_update and
// plan_removed to one with it; live and replayed by session/load alike; a
// failed call shows nothing.
func TestPlan_V1(t *testing.T) {
	for _, tc := range []struct {
		name, caps string
		want       []string
	}{
		{"legacy", `{}`, []string{
			`{"sessionUpdate":"plan","entries":` + planEntries + `}`,
			`{"sessionUpdate":"plan","entries":[]}`,
		}},
		{"capable", `{"plan":{}}`, []string{
			`{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"plan","entries":` + planEntries + `}}`,
			`{"sessionUpdate":"plan_removed","planId":"plan"}`,
		}},
		{"plan null is no capability", `{"plan":null}`, []string{
			`{"sessionUpdate":"plan","entries":` + planEntries + `}`,
			`{"sessionUpdate":"plan","entries":[]}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := providertest.New()
			store := memstore.New()
			opts := acp.ServerOptions{}
			opts.Session.Plan = true
			c := serve(t, fake, store, opts)
			c.initialize(tc.caps)
			sid := c.newSession()
			planTurns(fake)
			for _, p := range []string{"plan it", "change it", "clear it"} {
				require.Equal(t, "end_turn", c.prompt(sid, p))
			}
			live := planUpdates(t, updates(t, c.take()))
			for i := range tc.want {
				require.Less(t, i, len(live), "live")
				assert.JSONEq(t, tc.want[i], live[i], "live %d", i)
			}
			assert.Len(t, live, len(tc.want), "live")

			// session/load on a new connection replays them at their places.
			c2 := serve(t, fake, store, opts)
			c2.initialize(tc.caps)
			c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
			replayed := planUpdates(t, updates(t, c2.take()))
			require.Len(t, replayed, len(tc.want), "replayed")
			for i := range tc.want {
				assert.JSONEq(t, tc.want[i], replayed[i], "replayed %d", i)
			}
		})
	}
}

// TestPlan_V2 shows plans as v2 plan_update with the plan's ID (a cleared
// plan has no entries: v2 has no plan_removed).
func TestPlan_V2(t *testing.T) {
	fake := providertest.New()
	opts := acp.ServerOptions{}
	opts.Session.Plan = true
	c := hostileServe(t, fake, memstore.New(), opts)
	c.initV2()
	sid := c.newSessionV2()
	planTurns(fake)
	seq := c.lastSeq()
	for _, p := range []string{"plan it", "change it", "clear it"} {
		s := c.lastSeq()
		require.Nil(t, c.call("session/prompt", promptParams(sid, p)).Error)
		c.waitNote(s, "idle", isIdle)
	}
	var got []string
	for _, n := range c.notesSince(seq) {
		switch n.kind {
		case "plan_update", "plan", "plan_removed":
			got = append(got, string(n.update))
		case "tool_call_update":
			t.Errorf("a plan call is shown as a tool call: %s", n.update)
		}
	}
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"plan","entries":`+planEntries+`}}`, got[0])
	assert.JSONEq(t, `{"sessionUpdate":"plan_update","plan":{"type":"items","planId":"plan","entries":[]}}`, got[1])
}

// TestPlan_OwnToolNamedPlan: an application's own tool named plan (the
// session's plan tool off) is shown as any tool call.
func TestPlan_OwnToolNamedPlan(t *testing.T) {
	fake := providertest.New()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{echoNamed(session.PlanTool)}
	c := serve(t, fake, memstore.New(), opts)
	c.initialize(`{"plan":{}}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{{ID: "p1", Name: session.PlanTool, Arguments: json.RawMessage(planArgs)}}}, providertest.Reply{Text: "ok"})
	require.Equal(t, "end_turn", c.prompt(sid, "go"))
	got := kinds(updates(t, c.take()))
	assert.Contains(t, got, "tool_call")
	assert.NotContains(t, got, "plan_update")
}

// echoNamed is a tool called name that answers "echoed".
func echoNamed(name string) session.Tool {
	return session.Tool{Name: name, Run: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}
}
