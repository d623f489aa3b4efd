package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/session"
)

// TestSessionsShowsForks: sessions lists each fork under its source (a
// fork of a fork deeper), show names the source and the fork point, and
// the JSON of both carries them.
func TestSessionsShowsForks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	src, _ := converse(t, st, "the source", false)
	snap, err := st.Load(context.Background(), src)
	require.NoError(t, err)
	at := snap.Active[1].ID
	tl, err := st.Entries(context.Background(), src, history.EntryQuery{})
	require.NoError(t, err)
	var atPos int64
	for _, e := range tl {
		if e.Message != nil && e.Message.ID == at {
			atPos = e.Position
		}
	}
	f1, err := session.Fork(context.Background(), st, session.ForkRequest{From: src, At: at, ID: "fork-one", Title: "fork one"})
	require.NoError(t, err)
	_, err = session.Fork(context.Background(), st, session.ForkRequest{From: f1.ID, ID: "fork-two", Title: "fork two"})
	require.NoError(t, err)
	other, _ := converse(t, st, "another", false)
	require.NoError(t, st.Close())

	res := sk(t, "--store", path, "sessions")
	require.Equal(t, 0, res.status, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 5)
	assert.Contains(t, lines[1], other, "newest first")
	assert.Contains(t, lines[2], src)
	assert.Contains(t, lines[3], "└ fork-one (fork at "+at+")")
	assert.Contains(t, lines[4], "  └ fork-two (fork at ")

	res = sk(t, "--store", path, "sessions", "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &list))
	forkOf := map[string]any{}
	for _, s := range list {
		forkOf[s["id"].(string)] = s["fork_of"]
	}
	assert.Equal(t, map[string]any{other: nil, src: nil, "fork-one": src, "fork-two": "fork-one"}, forkOf)

	res = sk(t, "--store", path, "show", "fork-one")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Contains(t, res.stdout, fmt.Sprintf("fork of   %s at message %s (its timeline position %d)", src, at, atPos))
	res = sk(t, "--store", path, "show", src)
	require.Equal(t, 0, res.status, res.stderr)
	assert.NotContains(t, res.stdout, "fork of")
	res = sk(t, "--store", path, "show", "fork-one", "--json")
	require.Equal(t, 0, res.status, res.stderr)
	var show map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &show))
	assert.Equal(t, src, show["fork_of"])
	assert.Equal(t, at, show["fork_at"])
}

// TestServeForkLinks: the inspector's page of a fork links its source and
// names the fork point; the source's page links its forks; the fork's
// timeline starts with the source's history up to the fork point.
func TestServeForkLinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	src, _ := converse(t, st, "the source", false)
	snap, err := st.Load(context.Background(), src)
	require.NoError(t, err)
	at := snap.Active[1].ID
	_, err = session.Fork(context.Background(), st, session.ForkRequest{From: src, At: at, ID: "fork-one"})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	srv, _ := serveStore(t, path)
	code, body := get(t, srv.URL+"/s/fork-one")
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, `<a href="/s/`+src+`" id="fork-of">`+src+`</a> at message <code>`+at+`</code>`)
	assert.Contains(t, body, snap.Active[0].ID, "the inherited history is on the fork's timeline")
	code, body = get(t, srv.URL+"/s/"+src)
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, `forks: <a href="/s/fork-one" class="fork">fork-one</a> at <code>`+at+`</code>`)
}
