package historytest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// ForkSource stores session id in s with n messages (Msgs) and two
// compactions of n/4 each.
func ForkSource(t *testing.T, s history.Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: id})
	require.NoError(t, err)
	v, err := s.Append(ctx, id, snap.Version, Msgs(id, n))
	require.NoError(t, err)
	for i, archive := range []int{n / 4, n / 4} {
		cid := fmt.Sprintf("%s-c%d", id, i)
		v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: cid, Trigger: history.TriggerManual, Status: history.StatusInProgress})
		require.NoError(t, err)
		v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: archive, Summary: "summary " + cid})
		require.NoError(t, err)
	}
}

// ForkDeleteLeavesNothing deletes a chain of three (src, its fork f1 and
// f1's fork f2) in four orders, each on a new store of open: each delete
// leaves the others whole, the source's ID is free at once, and at the
// end every table holds what it held before, as rows counts them (each
// table's rows).
func ForkDeleteLeavesNothing(t *testing.T, open func(t *testing.T) history.Store, rows func(t *testing.T, s history.Store) map[string]int) {
	ctx := context.Background()
	for _, order := range [][]string{{"src", "f1", "f2"}, {"f2", "f1", "src"}, {"f1", "src", "f2"}, {"f1", "f2", "src"}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			s := open(t)
			empty := rows(t, s)
			ForkSource(t, s, "src", 40)
			f1, err := s.Fork(ctx, history.ForkSpec{ID: "f1", From: "src", At: "src-9"})
			require.NoError(t, err)
			_, err = s.Append(ctx, "f1", f1.Version, Msgs("f1", 4))
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
					EqualMessages(t, want[left].Active, got.Active)
					tl, err := s.Timeline(ctx, left)
					require.NoError(t, err)
					require.NotEmpty(t, tl)
				}
			}
			assert.Equal(t, empty, rows(t, s), "nothing is left behind")
			_, err = s.Create(ctx, history.NewSession{ID: "src"})
			assert.NoError(t, err, "the ID is free again")
		})
	}
}
