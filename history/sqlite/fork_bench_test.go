package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkFork measures the goals of forks (issue 40) on a session of
// 100,000 messages (historytest.SearchCorpus) with 10 compactions of 9,000
// messages each:
//
//   - fork: one Fork at the newest entry per operation; fork-B is the
//     bytes of payload the database gained per fork (goal: at most 10 ms
//     and 16 KiB);
//   - load/depth=N: a Load of a fork N deep (each a fork of the one before
//     at its newest entry, so every one holds the source's history) and of
//     the source (depth=0), whose ratio is the cost of the chain (goal: at
//     most 1.2 at depths 1 and 5);
//   - search/depth=N: one Search of 10 hits per operation over the same
//     queries, with p50-ms and p99-ms (goal: p99 in a fork within 1.5x of
//     the source's).
func BenchmarkFork(b *testing.B) {
	ctx := context.Background()
	s := benchOpen(b)
	msgs := historytest.SearchCorpus(100_000, 1)
	snap, err := s.Create(ctx, history.NewSession{ID: "src"})
	require.NoError(b, err)
	v := snap.Version
	for i := 0; i < len(msgs); i += 1000 {
		v, err = s.Append(ctx, "src", v, msgs[i:min(i+1000, len(msgs))])
		require.NoError(b, err)
	}
	for c := range 10 {
		cid := fmt.Sprintf("c%d", c)
		v, err = s.BeginCompaction(ctx, "src", v, history.CompactionRecord{CompactID: cid, Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: time.Now()})
		require.NoError(b, err)
		v, _, err = s.CommitCompaction(ctx, "src", v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: 9_000,
			Summary: fmt.Sprintf("summary %d: the work so far, in a few hundred bytes of text as a real summary has them.", c), At: time.Now()})
		require.NoError(b, err)
	}
	// size is the payload the database holds, in bytes (every table's and
	// index's cells, from the dbstat table): what a fork adds to it is
	// what the fork wrote, whatever free space the file had.
	size := func() int64 {
		var n int64
		require.NoError(b, s.r.QueryRow(`SELECT sum(payload) FROM dbstat`).Scan(&n))
		return n
	}
	b.Run("fork", func(b *testing.B) {
		before, n := size(), 0
		for b.Loop() {
			_, err := s.Fork(ctx, history.ForkSpec{ID: fmt.Sprintf("f-%d-%d", b.N, n), From: "src"})
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		b.ReportMetric(float64(size()-before)/float64(n), "fork-B")
	})
	chain := []string{"src"}
	for d := 1; d <= 5; d++ {
		id := fmt.Sprintf("depth-%d", d)
		_, err := s.Fork(ctx, history.ForkSpec{ID: id, From: chain[d-1]})
		require.NoError(b, err)
		chain = append(chain, id)
	}
	queries := historytest.SearchQueries(msgs, 200, 2)
	for _, d := range []int{0, 1, 5} {
		id := chain[d]
		b.Run(fmt.Sprintf("load/depth=%d", d), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Load(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("search/depth=%d", d), func(b *testing.B) {
			var lat historytest.SearchLatencies
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				lat.Time(func() {
					if _, err := s.Search(ctx, id, history.SearchQuery{Text: q}); err != nil {
						b.Fatal(err)
					}
				})
			}
			lat.Report(b)
		})
	}
}
