package sqlite

import (
	"context"
	"fmt"
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
	for _, table := range []string{"sessions", "messages", "message_fts", "compactions", "configs", "events", "usage_records"} {
		var n int
		require.NoError(t, s.r.QueryRow(`SELECT count(*) FROM `+table).Scan(&n), table)
		out[table] = n
	}
	return out
}

// forkSource stores session id with n messages and two compactions.
func forkSource(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: id})
	require.NoError(t, err)
	v, err := s.Append(ctx, id, snap.Version, historytest.Msgs(id, n))
	require.NoError(t, err)
	for i, archive := range []int{n / 4, n / 4} {
		cid := fmt.Sprintf("%s-c%d", id, i)
		v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: cid, Trigger: history.TriggerManual, Status: history.StatusInProgress})
		require.NoError(t, err)
		v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: archive, Summary: "summary " + cid})
		require.NoError(t, err)
	}
}

// TestForkCopiesNoMessage: a fork of a session of 200 messages writes no
// message and no search row (its reads walk to the source's rows); its own
// messages are its rows.
func TestForkCopiesNoMessage(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "s.db"))
	forkSource(t, s, "src", 200)
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

// TestForkDeleteLeavesNothing: deleting a source that forks read hides it
// (listing leaves it out, its ID is free) and keeps what they read;
// deleting the last fork of a chain frees the hidden sessions it read; in
// either order nothing is left behind.
func TestForkDeleteLeavesNothing(t *testing.T) {
	ctx := context.Background()
	for _, order := range [][]string{{"src", "f1", "f2"}, {"f2", "f1", "src"}, {"f1", "src", "f2"}, {"f1", "f2", "src"}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "s.db"))
			empty := rowCounts(t, s)
			forkSource(t, s, "src", 40)
			f1, err := s.Fork(ctx, history.ForkSpec{ID: "f1", From: "src", At: "src-9"})
			require.NoError(t, err)
			_, err = s.Append(ctx, "f1", f1.Version, historytest.Msgs("f1", 4))
			require.NoError(t, err)
			_, err = s.Fork(ctx, history.ForkSpec{ID: "f2", From: "f1", At: "f1-1"})
			require.NoError(t, err)
			want := map[string]*history.Snapshot{}
			for _, id := range order {
				want[id], err = s.Load(ctx, id)
				require.NoError(t, err)
			}
			for i, id := range order {
				require.NoError(t, s.Delete(ctx, id))
				_, err := s.Load(ctx, id)
				require.ErrorIs(t, err, history.ErrNotFound)
				if id == "src" { // its ID is free at once, forks or not
					_, err = s.Create(ctx, history.NewSession{ID: "src"})
					require.NoError(t, err)
					require.NoError(t, s.Delete(ctx, "src"))
				}
				page, err := s.ListSessions(ctx, history.ListOptions{})
				require.NoError(t, err)
				require.Len(t, page.Sessions, len(order)-i-1, "listing leaves deleted sessions out")
				for _, left := range order[i+1:] {
					got, err := s.Load(ctx, left)
					require.NoError(t, err)
					historytest.EqualMessages(t, want[left].Active, got.Active)
					tl, err := s.Timeline(ctx, left)
					require.NoError(t, err)
					require.NotEmpty(t, tl)
				}
			}
			assert.Equal(t, empty, rowCounts(t, s), "nothing is left behind")
			_, err = s.Create(ctx, history.NewSession{ID: "src"})
			assert.NoError(t, err, "the ID is free again")
		})
	}
}
