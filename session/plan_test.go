package session_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

const twoSteps = `{"entries":[{"content":"read the code","status":"completed"},{"content":"fix the bug","priority":"high","status":"in_progress"}]}`

// TestPlan_KeptStoredAndInTheSummaryView: the plan tool's plan is the
// session's (Settings.Plan), survives a reopen whatever Config says, and
// after a compaction archived its call the retained summary the model is
// sent ends with it; once the model calls the tool again, Active has it.
func TestPlan_KeptStoredAndInTheSummaryView(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: store, Plan: true})

	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("p1", session.PlanTool, twoSteps)}},
		providertest.Reply{Text: "planned"},
	)
	before := len(fake.Requests())
	res := wait(t, mustPrompt(t, s, "fix it"))
	require.NoError(t, res.Err)
	assert.Equal(t, "The plan is updated: 1 of 2 steps completed.", toolResults(res.Messages)[0])
	assert.True(t, slices.ContainsFunc(fake.Requests()[before].Tools, func(ts provider.ToolSpec) bool { return ts.Name == session.PlanTool }), "the model is offered plan")
	want := []session.PlanEntry{
		{Content: "read the code", Priority: session.PlanMedium, Status: session.PlanCompleted},
		{Content: "fix the bug", Priority: session.PlanHigh, Status: session.PlanInProgress},
	}
	assert.Equal(t, want, s.Settings().Plan)

	// A compaction archives the plan's call: the summary view carries it.
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "- fixing a bug"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	before = len(fake.Requests())
	require.NoError(t, wait(t, mustPrompt(t, s, "go on")).Err)
	req := fake.Requests()[before]
	require.False(t, slices.ContainsFunc(req.Messages, func(m history.Message) bool { return len(m.ToolCalls) > 0 }), "the plan's call is archived")
	assert.Equal(t, "- fixing a bug\n\nYour current plan (kept with the plan tool; call it to change it):\n- [x] read the code\n- [~] fix the bug (high priority)", req.Summary)

	// Reopened without Config.Plan, the session still has its plan.
	require.NoError(t, s.Close())
	again := newSession(t, fake, session.Config{Store: store, ID: s.ID()})
	assert.Equal(t, want, again.Settings().Plan)
	require.NoError(t, again.Close())

	// The model calls the tool again: Active has the plan, the summary not.
	s = newSession(t, fake, session.Config{Store: store, ID: s.ID(), Plan: true})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("p2", session.PlanTool, `{"entries":[]}`)}},
		providertest.Reply{Text: "done"},
	)
	before = len(fake.Requests())
	require.NoError(t, wait(t, mustPrompt(t, s, "finish")).Err)
	assert.Nil(t, s.Settings().Plan, "an empty list clears the plan")
	assert.Equal(t, "- fixing a bug", fake.Requests()[before+1].Summary)
}

// TestPlan_BadCallsKeepThePlan: a call the tool refuses is an error result
// naming the field, and the plan stays as it was.
func TestPlan_BadCallsKeepThePlan(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Plan: true})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{
			call("p1", session.PlanTool, twoSteps),
			call("p2", session.PlanTool, `{"entries":[{"content":"x","status":"done"}]}`),
			call("p3", session.PlanTool, `{"entries":[{"content":" ","status":"pending"}]}`),
			call("p4", session.PlanTool, `{"entries":[{"content":"x","priority":"urgent","status":"pending"}]}`),
			call("p5", session.PlanTool, `{}`),
			call("p6", session.PlanTool, `{"entries":[],"extra":1}`),
		}},
		providertest.Reply{Text: "ok"},
	)
	res := wait(t, mustPrompt(t, s, "plan"))
	require.NoError(t, res.Err)
	out := toolResults(res.Messages)
	require.Len(t, out, 6)
	assert.Contains(t, out[1], `entries[0].status "done" is not pending, in_progress or completed`)
	assert.Contains(t, out[2], "entries[0].content is empty")
	assert.Contains(t, out[3], `entries[0].priority "urgent"`)
	assert.Contains(t, out[4], `"entries" is required`)
	assert.Contains(t, out[5], `unknown field "extra"`)
	assert.Len(t, s.Settings().Plan, 2)
}

func TestPlan_ToolNameTaken(t *testing.T) {
	mine := session.Tool{Name: session.PlanTool, Run: func(context.Context, json.RawMessage) (string, error) { return "", nil }}
	_, err := session.New(ctxT(t), session.Config{Provider: providertest.New(), Plan: true, Tools: []session.Tool{mine}})
	assert.ErrorIs(t, err, session.ErrInvalid)
	assert.ErrorContains(t, err, "Config.Plan")
}

func TestParsePlan(t *testing.T) {
	got, err := session.ParsePlan(json.RawMessage(`{"entries":[{"content":"  a  ","status":"pending"}]}`))
	require.NoError(t, err)
	assert.Equal(t, []session.PlanEntry{{Content: "a", Priority: session.PlanMedium, Status: session.PlanPending}}, got)
	for _, bad := range []string{`[]`, `{"entries":5}`, `{`, `{"entries":[{"content":"a"}]}`} {
		_, err := session.ParsePlan(json.RawMessage(bad))
		assert.Error(t, err, bad)
	}
}

// TestPlan_ReopenedWithThePlanInActive: a session reopened (or resynced)
// whose Active holds the plan's call does not add the plan to the
// summary view, and does once a compaction archived that call.
func TestPlan_ReopenedWithThePlanInActive(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: store, Plan: true})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "- earlier"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("p1", session.PlanTool, twoSteps)}},
		providertest.Reply{Text: "planned"},
	)
	require.NoError(t, wait(t, mustPrompt(t, s, "plan it")).Err)
	require.NoError(t, s.Close())

	s = newSession(t, fake, session.Config{Store: store, ID: s.ID(), Plan: true})
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	before := len(fake.Requests())
	require.NoError(t, wait(t, mustPrompt(t, s, "go on")).Err)
	assert.Equal(t, "- earlier", fake.Requests()[before].Summary, "Active has the plan's call")

	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "- planned"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	before = len(fake.Requests())
	require.NoError(t, wait(t, mustPrompt(t, s, "and now")).Err)
	assert.True(t, strings.HasPrefix(fake.Requests()[before].Summary, "- planned\n\nYour current plan"), "archived: the summary view has it: %q", fake.Requests()[before].Summary)
}
