package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// rowCounts counts the rows of every table that holds sessions' data.
func rowCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"sessions", "messages", "message_fts", "message_ids", "compactions", "configs", "events", "usage_records", "usage_totals", "vectors"} {
		var n int
		require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM `+table).Scan(&n), table)
		out[table] = n
	}
	return out
}

// TestForkCopiesNoMessage: a fork of a session of 200 messages writes no
// message and no search row (its reads walk to the source's rows); its own
// messages are its rows. The committer does not index in its idle time
// here, so that the rows counted before and after the fork are the fork's
// doing alone.
func TestForkCopiesNoMessage(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withoutIdleIndex())
	historytest.ForkSource(t, s, "src", 200)
	before := rowCounts(t, s)
	f, err := s.Fork(ctx, history.ForkSpec{ID: "f", From: "src"})
	require.NoError(t, err)
	after := rowCounts(t, s)
	assert.Equal(t, before["messages"], after["messages"], "a fork copies no message")
	assert.Equal(t, before["message_fts"], after["message_fts"], "nor its search rows")
	assert.Equal(t, before["sessions"]+1, after["sessions"])
	loaded, err := s.Load(ctx, "f")
	require.NoError(t, err)
	assert.Len(t, loaded.Active, 100)
	_, err = s.Append(ctx, "f", f.Version, historytest.Msgs("own", 3))
	require.NoError(t, err)
	var own int
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM messages WHERE session_id = 'f'`).Scan(&own))
	assert.Equal(t, 3, own)
}

// TestForkDeleteKeepsWhatForksRead: a deleted source that two forks read
// keeps its messages, their search rows, message_ids rows and vectors up to
// the newest fork point only, under one hidden ID; the forks read as
// before, and find the source's messages by ID.
func TestForkDeleteKeepsWhatForksRead(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"), withIndexBound(0))
	historytest.ForkSource(t, s, "src", 40)
	msgs, err := s.Unembedded(ctx, "src", -1, 100)
	require.NoError(t, err)
	require.Len(t, msgs, 40)
	vecs := make([]history.MessageVector, len(msgs))
	for i, m := range msgs {
		vecs[i] = history.MessageVector{Position: m.Position, MessageID: m.Message.ID, Vector: []float32{1, float32(i)}}
	}
	require.NoError(t, s.PutVectors(ctx, "src", vecs))
	want, found := map[string]*history.Snapshot{}, map[string]history.SearchPage{}
	q := history.SearchQuery{Text: "text", Limit: history.MaxSearchLimit}
	for _, at := range []string{"src-9", "src-19"} {
		_, err := s.Fork(ctx, history.ForkSpec{ID: "f" + at, From: "src", At: at})
		require.NoError(t, err)
		want["f"+at], err = s.Load(ctx, "f"+at)
		require.NoError(t, err)
		found["f"+at], err = s.Search(ctx, "f"+at, q)
		require.NoError(t, err)
		require.NotEmpty(t, found["f"+at].Hits)
	}
	require.NoError(t, s.Delete(ctx, "src"))
	rows := rowCounts(t, s)
	assert.Equal(t, 20, rows["messages"], "src-0 to src-19")
	assert.Equal(t, 20, rows["message_fts"])
	assert.Equal(t, 20, rows["message_ids"])
	assert.Equal(t, 20, rows["vectors"])
	var hidden int
	require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM sessions WHERE deleted`).Scan(&hidden))
	assert.Equal(t, 1, hidden)
	for id, w := range want {
		got, err := s.Load(ctx, id)
		require.NoError(t, err)
		historytest.EqualMessages(t, w.Active, got.Active)
		page, err := s.Search(ctx, id, q)
		require.NoError(t, err)
		assert.Equal(t, found[id], page, id)
		w, err := s.Window(ctx, id, history.WindowQuery{Around: "src-5"})
		require.NoError(t, err)
		require.Len(t, w, 1)
		assert.Equal(t, "src-5", w[0].Message.ID)
	}
}

// TestForkDeleteLeavesNothing: historytest.ForkDeleteLeavesNothing, with
// every table's rows counted, on a store as shipped and on one that
// indexes every message as it is appended (so that every message has its
// search and message_ids rows to delete).
func TestForkDeleteLeavesNothing(t *testing.T) {
	for name, opts := range map[string][]Option{"shipped": nil, "indexed": {withIndexBound(0)}} {
		t.Run(name, func(t *testing.T) {
			historytest.ForkDeleteLeavesNothing(t, func(t *testing.T) history.Store { return open(t, filepath.Join(t.TempDir(), "s.db"), opts...) },
				func(t *testing.T, s history.Store) map[string]int { return rowCounts(t, s.(*Store)) })
		})
	}
}
