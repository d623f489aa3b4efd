package acp_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// waitNotification waits for a notification of method and returns its
// params.
func (c *client) waitNotification(method string) json.RawMessage {
	c.t.Helper()
	var params json.RawMessage
	if poll.Within(10*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.notes {
			if n.method == method {
				params = n.params
				return true
			}
		}
		return false
	}) {
		return params
	}
	c.t.Fatalf("no %s arrived", method)
	return nil
}

// A compaction whose summary is longer than what it replaced is committed
// all the same, and its completed compaction_update says so under
// _meta.sessionkit (contextGrew, a note, the two figures); one that made
// the context smaller carries no such word. Without the compaction
// capability the text says it.
func TestServe_CompactionThatGrewSaysSo(t *testing.T) {
	completed := func(ups []map[string]any) map[string]any {
		for _, u := range ups {
			if u["sessionUpdate"] == "compaction_update" && u["status"] == "completed" {
				return u
			}
		}
		return nil
	}
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{"session":{"compaction":{}}}`)
	sid := c.newSession()
	conversation(t, c, fake, sid) // the context: 22 tokens
	fake.QueueSummary(providertest.Reply{Text: strings.Repeat("a long summary ", 100)})
	assert.Equal(t, "end_turn", c.prompt(sid, "/compact"))
	u := completed(updates(t, c.take()))
	require.NotNil(t, u, "the compaction is committed")
	meta, _ := u["_meta"].(map[string]any)
	sk, _ := meta[schema.MetaKey].(map[string]any)
	require.NotNil(t, sk, "_meta.sessionkit: %v", u)
	assert.Equal(t, true, sk["contextGrew"])
	assert.Contains(t, sk["note"], "did not shrink")
	assert.EqualValues(t, 22, sk["contextBefore"])
	assert.Greater(t, sk["contextAfter"].(float64), float64(22))

	// The same through _sessionkit/compact: its result carries it.
	fake.QueueSummary(providertest.Reply{Text: strings.Repeat("an even longer summary ", 200)})
	conversation(t, c, fake, sid)
	var acc schema.CompactAccepted
	c.mustCall(schema.MethodCompact, map[string]any{"sessionId": sid}, &acc)
	var finished schema.CompactFinishedParams
	require.NoError(t, json.Unmarshal(c.waitNotification(schema.MethodCompactFinished), &finished))
	assert.True(t, finished.Result.Compacted)
	assert.True(t, finished.Result.ContextGrew)
	assert.Contains(t, finished.Result.Note, "did not shrink")
	assert.True(t, acp.CompactResultOf(&finished.Result).ContextGrew, "and back to a CompactResult")
	c.take()

	fake2 := providertest.New()
	c2 := serve(t, fake2, memstore.New(), acp.ServerOptions{})
	c2.initialize(`{"session":{"compaction":{}}}`)
	sid2 := c2.newSession()
	conversation(t, c2, fake2, sid2)
	fake2.QueueSummary(providertest.Reply{Text: "S"})
	assert.Equal(t, "end_turn", c2.prompt(sid2, "/compact"))
	u = completed(updates(t, c2.take()))
	require.NotNil(t, u)
	if meta, ok := u["_meta"].(map[string]any); ok {
		sk, _ := meta[schema.MetaKey].(map[string]any)
		assert.NotContains(t, sk, "contextGrew", "a compaction that shrank the context")
	}

	fake3 := providertest.New()
	c3 := serve(t, fake3, memstore.New(), acp.ServerOptions{})
	c3.initialize(`{}`)
	sid3 := c3.newSession()
	conversation(t, c3, fake3, sid3)
	fake3.QueueSummary(providertest.Reply{Text: strings.Repeat("a long summary ", 100)})
	assert.Equal(t, "end_turn", c3.prompt(sid3, "/compact"))
	texts := strings.Join(agentTexts(updates(t, c3.take())), "")
	assert.Contains(t, texts, "Compacted the conversation")
	assert.Contains(t, texts, "did not shrink")
}
