package acp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// The usage_update after a completed compaction reports the session's own
// estimate of the context after it, the one its finished event carries and
// its Segment records (CompactResult.ContextAfter), marked as an estimate;
// the agent makes no estimate of its own. For a compaction that shrank the
// context and for one that grew it.
func TestServe_UsageAfterCompactionIsTheSessionsEstimate(t *testing.T) {
	for _, summary := range []string{"S", strings.Repeat("a long summary ", 100)} {
		fake := providertest.New()
		store := memstore.New()
		c := serve(t, fake, store, acp.ServerOptions{})
		c.initialize(`{"session":{"compaction":{}}}`)
		sid := c.newSession()
		conversation(t, c, fake, sid)
		c.take()
		fake.QueueSummary(providertest.Reply{Text: summary})
		require.Equal(t, "end_turn", c.prompt(sid, "/compact"))
		ups := updates(t, c.take())

		segs, err := store.Segments(context.Background(), sid)
		require.NoError(t, err)
		require.Len(t, segs, 1, "the compaction is committed")
		want := segs[0].ContextAfter
		require.Positive(t, want)

		var usage map[string]any
		for i, u := range ups {
			if u["sessionUpdate"] == "compaction_update" && u["status"] == "completed" {
				for _, v := range ups[i+1:] {
					if v["sessionUpdate"] == "usage_update" {
						usage = v
						break
					}
				}
			}
		}
		require.NotNil(t, usage, "a usage_update after the completed compaction: %v", ups)
		assert.EqualValues(t, want, usage["used"], "summary %q: the session's estimate", summary[:1])
		assert.Equal(t, map[string]any{schema.MetaKey: map[string]any{"estimate": true}}, usage["_meta"])
	}
}

// usageCosts returns the cost amounts of the usage_updates in notes, in
// order (-1 for one without a cost).
func usageCosts(t *testing.T, notes []note) []float64 {
	var out []float64
	for _, u := range updates(t, notes) {
		if u["sessionUpdate"] != "usage_update" {
			continue
		}
		c, ok := u["cost"].(map[string]any)
		if !ok {
			out = append(out, -1)
			continue
		}
		assert.Equal(t, "USD", c["currency"])
		out = append(out, c["amount"].(float64))
	}
	return out
}

// TestServe_UsageCostIsCumulative: with prices, every usage_update carries
// the session's cumulative cost: after each turn, after a /compact with
// its summary call's cost included, after a compaction whose summary came
// back empty (paid for all the same), and on another agent's session/load
// of the session; it never decreases.
func TestServe_UsageCostIsCumulative(t *testing.T) {
	prices := provider.PriceTable{"m": {Input: 3, Output: 15}}
	price := func(u provider.Usage) float64 {
		c, ok := prices.Price("m", u)
		require.True(t, ok)
		return c.Amount
	}
	fake := providertest.New()
	store := memstore.New()
	opts := acp.ServerOptions{Session: session.Config{Pricing: prices}}
	c := serve(t, fake, store, opts)
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	c.take()

	t1, t2 := provider.Usage{InputTokens: 1000, OutputTokens: 100}, provider.Usage{InputTokens: 2000, OutputTokens: 50}
	fake.QueueTurn(providertest.Reply{Text: "one", Usage: t1, Model: "m"}, providertest.Reply{Text: "two", Usage: t2, Model: "m"})
	require.Equal(t, "end_turn", c.prompt(sid, "first"))
	require.Equal(t, "end_turn", c.prompt(sid, "second"))
	costs := usageCosts(t, c.take())
	require.Len(t, costs, 2)
	assert.InDelta(t, price(t1), costs[0], 1e-12)
	assert.InDelta(t, price(t1)+price(t2), costs[1], 1e-12)
	total := price(t1) + price(t2)

	s1 := provider.Usage{InputTokens: 3000, OutputTokens: 200}
	fake.QueueSummary(providertest.Reply{Text: "S", Usage: s1, Model: "m"})
	require.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	total += price(s1)
	costs = usageCosts(t, c.take())
	require.NotEmpty(t, costs)
	assert.InDelta(t, total, costs[len(costs)-1], 1e-12, "after the compaction, its summary call included")

	t3 := provider.Usage{InputTokens: 500, OutputTokens: 10}
	fake.QueueTurn(providertest.Reply{Text: "three", Usage: t3, Model: "m"}, providertest.Reply{Text: "four", Usage: t3, Model: "m"})
	require.Equal(t, "end_turn", c.prompt(sid, "third"))
	require.Equal(t, "end_turn", c.prompt(sid, "fourth"))
	total += 2 * price(t3)
	s2 := provider.Usage{InputTokens: 800, OutputTokens: 1}
	fake.QueueSummary(providertest.Reply{Text: " ", Usage: s2, Model: "m"})
	c.prompt(sid, "/compact")
	total += price(s2)
	costs = append(costs, usageCosts(t, c.take())...)
	require.NotEmpty(t, costs)
	assert.InDelta(t, total, costs[len(costs)-1], 1e-12, "an empty summary is paid for")

	// Another agent loads the session: the replayed updates carry the
	// cost so far, which does not go down.
	c2 := serve(t, fake, store, opts)
	c2.initialize(`{}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	loaded := usageCosts(t, c2.take())
	require.NotEmpty(t, loaded)
	for _, v := range loaded {
		assert.InDelta(t, total, v, 1e-12, "session/load reports the cost so far")
	}
	fake.QueueTurn(providertest.Reply{Text: "five", Usage: t3, Model: "m"})
	require.Equal(t, "end_turn", c2.prompt(sid, "fifth"))
	total += price(t3)
	costs = append(costs, loaded...)
	costs = append(costs, usageCosts(t, c2.take())...)
	assert.InDelta(t, total, costs[len(costs)-1], 1e-12)
	for i := 1; i < len(costs); i++ {
		assert.GreaterOrEqual(t, costs[i], costs[i-1], "usage_update %d: the cost never decreases (%v)", i, costs)
		assert.GreaterOrEqual(t, costs[i], 0.0, "every usage_update carries the cost")
	}
}

// An owner that falls behind its session and continues from the store
// with a Replay (its subscription holds one event here) is handed events
// again, older costs among them: the cost the client is told never goes
// down, and ends at the session's total.
func TestServe_UsageCostNeverDecreasesBehind(t *testing.T) {
	defer acp.SetSubscriptionBuffer(1)()
	prices := provider.PriceTable{"m": {Input: 3, Output: 15}}
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{Session: session.Config{Pricing: prices}})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	c.take()
	u := provider.Usage{InputTokens: 1000, OutputTokens: 100}
	deltas := make([]string, 500)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("w%d ", i)
	}
	total := 0.0
	for range 4 {
		fake.QueueTurn(providertest.Reply{Text: strings.Join(deltas, ""), Deltas: deltas, Usage: u, Model: "m"})
		require.Equal(t, "end_turn", c.prompt(sid, "a long answer, please"))
		p, _ := prices.Price("m", u)
		total += p.Amount
	}
	costs := usageCosts(t, c.take())
	require.NotEmpty(t, costs)
	for i := 1; i < len(costs); i++ {
		assert.GreaterOrEqual(t, costs[i], costs[i-1], "usage_update cost went down: %v", costs)
	}
	assert.InDelta(t, total, costs[len(costs)-1], 1e-12)
}

// TestServe_UsageAfterLoadIsTheStoredContext: in a new process, the first
// usage_update of session/load (v1) and of session/resume (v2, with
// replay and without) reports the context the stored session held, not 0: the last turn
// response's (input plus output); after a compaction that came after it,
// the session's estimate of the context the compaction left, marked as
// one (as live); after a turn that came after the compaction, that turn's.
func TestServe_UsageAfterLoadIsTheStoredContext(t *testing.T) {
	prices := provider.PriceTable{"m": {Input: 3, Output: 15}}
	opts := acp.ServerOptions{Session: session.Config{Pricing: prices}}
	t1, t2 := provider.Usage{InputTokens: 1234, OutputTokens: 56}, provider.Usage{InputTokens: 2345, OutputTokens: 67}
	first := func(t *testing.T, ups []map[string]any) map[string]any {
		t.Helper()
		for _, u := range ups {
			if u["sessionUpdate"] == "usage_update" {
				return u
			}
		}
		require.Fail(t, "no usage_update", "%v", ups)
		return nil
	}
	check := func(t *testing.T, store *memstore.Store, sid string, prompt func(text string), reopen func() map[string]any) {
		t.Helper()
		u := reopen()
		assert.EqualValues(t, t1.Total(), u["used"], "the last turn response's context")
		assert.Nil(t, u["_meta"])
		assert.NotNil(t, u["cost"])

		prompt("/compact")
		segs, err := store.Segments(context.Background(), sid)
		require.NoError(t, err)
		require.Len(t, segs, 1)
		require.Positive(t, segs[0].ContextAfter)
		u = reopen()
		assert.EqualValues(t, segs[0].ContextAfter, u["used"], "a compaction came after the turn: its estimate")
		assert.Equal(t, map[string]any{schema.MetaKey: map[string]any{"estimate": true}}, u["_meta"])

		prompt("second")
		u = reopen()
		assert.EqualValues(t, t2.Total(), u["used"], "a turn came after the compaction")
		assert.Nil(t, u["_meta"])
	}
	queue := func(fake *providertest.Fake) {
		fake.QueueTurn(providertest.Reply{Text: "one", Usage: t1, Model: "m"})
		fake.QueueSummary(providertest.Reply{Text: "S", Usage: provider.Usage{InputTokens: 10, OutputTokens: 1}, Model: "m"})
		fake.QueueTurn(providertest.Reply{Text: "two", Usage: t2, Model: "m"})
	}

	t.Run("v1 session/load", func(t *testing.T) {
		fake, store := providertest.New(), memstore.New()
		queue(fake)
		c := serve(t, fake, store, opts)
		c.initialize(`{"session":{"compaction":{}}}`)
		sid := c.newSession()
		prompt := func(text string) { require.Equal(t, "end_turn", c.prompt(sid, text)) }
		prompt("first")
		check(t, store, sid, prompt, func() map[string]any {
			c2 := serve(t, fake, store, opts)
			c2.initialize(`{}`)
			c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
			return first(t, updates(t, c2.take()))
		})
	})

	// v2 session/resume with replay: the usage_update follows the replay,
	// before the response; without replay it follows the response (which
	// the current state_update precedes, as with replay), before the
	// commands, and a resume of the session open on the connection sends
	// none (the client has the figure).
	for _, replay := range []bool{true, false} {
		t.Run(fmt.Sprintf("v2 session/resume replay=%v", replay), func(t *testing.T) {
			fake, store := providertest.New(), memstore.New()
			queue(fake)
			c := hostileServe(t, fake, store, opts)
			c.initV2()
			sid := c.newSessionV2()
			prompt := func(text string) {
				seq := c.lastSeq()
				require.Nil(t, c.call("session/prompt", promptParams(sid, text)).Error)
				c.waitNote(seq, "idle", isIdle)
			}
			prompt("first")
			check(t, store, sid, prompt, func() map[string]any {
				c2 := hostileServe(t, fake, store, opts)
				c2.initV2()
				params := `{"sessionId":"` + sid + `","cwd":"/project"}`
				if replay {
					params = `{"sessionId":"` + sid + `","cwd":"/project","replayFrom":{"type":"start"}}`
				}
				m := c2.call("session/resume", params)
				require.Nil(t, m.Error)
				if replay {
					var ups []map[string]any
					for _, n := range c2.notesSince(0) {
						ups = append(ups, field(t, n))
					}
					return first(t, ups)
				}
				isCommands := func(n hostileNote) bool { return n.kind == "available_commands_update" }
				c2.waitNote(m.seq, "the commands", isCommands)
				noteKinds := func(notes []hostileNote) (out []string) {
					for _, n := range notes {
						out = append(out, n.kind)
					}
					return out
				}
				notes := c2.notesSince(0)
				require.Equal(t, []string{"state_update", "usage_update", "available_commands_update"}, noteKinds(notes),
					"the state before the response (the protocol's snapshot), the usage after it")
				require.Less(t, notes[0].seq, m.seq)
				require.Greater(t, notes[1].seq, m.seq)

				seq := c2.lastSeq()
				m = c2.call("session/resume", params)
				require.Nil(t, m.Error)
				c2.waitNote(seq, "the commands", isCommands)
				again := c2.notesSince(seq)
				assert.Equal(t, []string{"state_update", "available_commands_update"}, noteKinds(again), "open on the connection: the state and the commands, no usage")
				assert.Less(t, again[0].seq, m.seq)
				return field(t, notes[1])
			})
		})
	}
}
