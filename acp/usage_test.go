package acp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
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
