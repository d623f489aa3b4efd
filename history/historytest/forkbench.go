package historytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// forkDepths are the depths BenchFork compares: the source and forks 1
// and 5 deep.
var forkDepths = []int{0, 1, 5}

// BenchFork measures the goals of forks (issue 40) on s, a new store, with
// a session of 100,000 messages (SearchCorpus) and 10 compactions of
// 9,000 messages each:
//
//   - fork: one Fork at the newest entry per operation; with size (the
//     bytes of payload the store holds; nil for none) fork-B is what the
//     store gained per fork (goals: at most 10 ms on SQLite, 20 ms on
//     PostgreSQL; 16 KiB);
//   - load: each operation Loads the source and forks 1 and 5 deep (each a
//     fork of the one before at its newest entry, so every one holds the
//     source's messages) in turn, so that the three are measured
//     alternately under the same load; d<N>-ms is the median Load at depth
//     N and x<N> its ratio to the source's (goal: at most 1.2);
//   - search: each operation runs one Search of 10 hits at each depth in
//     turn over the same queries; d<N>-p99-ms is the p99 at depth N and
//     p99x<N> its ratio to the source's (goal: at most 1.5).
func BenchFork(b *testing.B, s history.Store, size func() int64) {
	ctx := context.Background()
	msgs := SearchCorpus(100_000, 1)
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
	b.Run("fork", func(b *testing.B) {
		var before int64
		if size != nil {
			before = size()
		}
		n := 0
		for b.Loop() {
			_, err := s.Fork(ctx, history.ForkSpec{ID: fmt.Sprintf("f-%d-%d", b.N, n), From: "src"})
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if size != nil {
			b.ReportMetric(float64(size()-before)/float64(n), "fork-B")
		}
	})
	chain := []string{"src"}
	for d := 1; d <= slices.Max(forkDepths); d++ {
		id := fmt.Sprintf("depth-%d", d)
		_, err := s.Fork(ctx, history.ForkSpec{ID: id, From: chain[d-1]})
		require.NoError(b, err)
		chain = append(chain, id)
	}
	b.Run("load", func(b *testing.B) {
		lat := make([]SearchLatencies, len(forkDepths))
		for b.Loop() {
			for i, d := range forkDepths {
				lat[i].Time(func() {
					if _, err := s.Load(ctx, chain[d]); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
		reportDepths(b, lat, 0.5, "ms", "x")
	})
	queries := SearchQueries(msgs, 200, 2)
	b.Run("search", func(b *testing.B) {
		lat := make([]SearchLatencies, len(forkDepths))
		k := 0
		for b.Loop() {
			q := queries[k%len(queries)]
			k++
			for i, d := range forkDepths {
				lat[i].Time(func() {
					if _, err := s.Search(ctx, chain[d], history.SearchQuery{Text: q}); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
		reportDepths(b, lat, 0.99, "p99-ms", "p99x")
	})
}

// reportDepths reports quantile p of each depth's latencies as
// d<N>-<unit>, and its ratio to the source's as <ratio><N>.
func reportDepths(b *testing.B, lat []SearchLatencies, p float64, unit, ratio string) {
	q := make([]float64, len(lat))
	for i := range lat {
		if len(lat[i].d) == 0 {
			return
		}
		slices.Sort(lat[i].d)
		q[i] = float64(lat[i].d[min(len(lat[i].d)-1, int(p*float64(len(lat[i].d))))].Nanoseconds()) / 1e6
		b.ReportMetric(q[i], fmt.Sprintf("d%d-%s", forkDepths[i], unit))
		if i > 0 {
			b.ReportMetric(q[i]/q[0], fmt.Sprintf("%s%d", ratio, forkDepths[i]))
		}
	}
}
