package session_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// A compaction whose summary leaves the context bigger than it was is
// committed all the same (the archive and the summary are as ever), and
// its result says so: ContextGrew and a Note with the figures. One that
// shrinks the context says nothing of the kind.
func TestCompactionThatGrewTheContextSaysSo(t *testing.T) {
	for _, tt := range []struct {
		name    string
		summary string
		grew    bool
	}{
		{"grew", strings.Repeat("a summary much longer than the conversation ", 50), true},
		{"shrank", "S", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New()
			s := newSession(t, fake, session.Config{})
			fake.QueueTurn(providertest.Reply{Text: "one", Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}},
				providertest.Reply{Text: "two", Usage: provider.Usage{InputTokens: 20, OutputTokens: 2}})
			wait(t, mustPrompt(t, s, "first"))
			wait(t, mustPrompt(t, s, "second"))
			fake.QueueSummary(providertest.Reply{Text: tt.summary})
			h, err := s.Compact(ctxT(t), session.CompactRequest{})
			require.NoError(t, err)
			res := wait(t, h)
			require.True(t, res.Compacted, "committed: %s", res.Error)
			assert.Equal(t, 22, res.ContextBefore)
			assert.Equal(t, tt.grew, res.ContextGrew, "before %d, after %d", res.ContextBefore, res.ContextAfter)
			if tt.grew {
				assert.GreaterOrEqual(t, res.ContextAfter, res.ContextBefore)
				assert.Contains(t, res.Note, "did not shrink")
				assert.Contains(t, res.Note, "22 before")
				summary, err := s.Summary(ctxT(t))
				require.NoError(t, err)
				assert.Equal(t, strings.TrimSpace(tt.summary), summary, "the summary is retained (trimmed)")
			} else {
				assert.Less(t, res.ContextAfter, res.ContextBefore)
				assert.Empty(t, res.Note)
			}
		})
	}
}
