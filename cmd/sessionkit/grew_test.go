package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestGrewIsFlagged: a compaction whose summary is longer than what it
// archived grew the context: show, segments and the inspector's session
// and Segment pages flag it; one that shrank it is not flagged.
func TestGrewIsFlagged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	fake := providertest.New()
	fake.SetDefault(func(*provider.Request) providertest.Reply {
		return providertest.Reply{Text: "ok", Usage: provider.Usage{InputTokens: 50}}
	})
	long := false
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: fake, Store: st, BeforeCompact: func(_ context.Context, p *session.PendingCompaction) error {
		p.Summary = "short"
		if long {
			p.Summary = strings.Repeat("a summary far longer than what it replaced. ", 100)
		}
		return nil
	}})
	require.NoError(t, err)
	compact := func() *session.CompactResult {
		for range 2 {
			h, err := s.Prompt(ctx, session.PromptRequest{Text: "hello there"})
			require.NoError(t, err)
			_, err = h.Wait(ctx)
			require.NoError(t, err)
		}
		h, err := s.Compact(ctx, session.CompactRequest{})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.True(t, res.Compacted, res.Error)
		return &res
	}
	shrank := compact()
	long = true
	grown := compact()
	require.False(t, shrank.ContextGrew)
	require.True(t, grown.ContextGrew)
	id := s.ID()
	require.NoError(t, s.Close())
	require.NoError(t, st.Close())

	res := sk(t, "--store", path, "segments", id)
	require.Equal(t, 0, res.status, res.stderr)
	assert.Equal(t, 1, strings.Count(res.stdout, "GREW: the summary is longer than what it archived"), res.stdout)
	res = sk(t, "--store", path, "show", id)
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, "GREW      compaction "+grown.CompactID+" (segment 2, manual) grew the context")
	assert.NotContains(t, res.stdout, shrank.CompactID)

	srv, _ := serveStore(t, path)
	const flag = `<strong class="grew">grew the context`
	status, body := get(t, srv.URL+"/s/"+id+"/segments/"+grown.Segment.ID)
	require.Equal(t, 200, status)
	assert.Contains(t, body, flag)
	status, body = get(t, srv.URL+"/s/"+id+"/segments/"+shrank.Segment.ID)
	require.Equal(t, 200, status)
	assert.NotContains(t, body, flag)
	status, body = get(t, srv.URL+"/s/"+id)
	require.Equal(t, 200, status)
	assert.Equal(t, 1, strings.Count(body, flag), "the timeline flags the one that grew")
}
