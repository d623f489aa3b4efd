package sqlite

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkNearest is the cost of an embedder (docs/compaction.md,
// "Search with an embedder"): a session of 100,000 messages
// (SESSIONKIT_VECTORS_MESSAGES sets another number), each with a random
// vector of 1536 dimensions (SESSIONKIT_VECTORS_DIM sets another, such as
// 768), then Nearest of 40 (what a fused search of 10 hits with one
// neighbour asks for) with random queries. It reports bytes/msg, what the
// vectors add to the file per message, and the latency quantiles of one
// Nearest, a scan of every vector of the session.
func BenchmarkNearest(b *testing.B) {
	n, dim := 100_000, 1536
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_DIM")); err == nil && v > 0 {
		dim = v
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bench.db")
	s := open(b, path)
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(b, err)
	v := snap.Version
	msgs := historytest.Msgs("m", n)
	for i := 0; i < n; i += 1000 {
		v, err = s.Append(ctx, "s", v, msgs[i:min(i+1000, n)])
		require.NoError(b, err)
	}
	size := func() int64 {
		_, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
		require.NoError(b, err)
		fi, err := os.Stat(path)
		require.NoError(b, err)
		return fi.Size()
	}
	before := size()
	rng := rand.New(rand.NewPCG(1, 2))
	vector := func() []float32 {
		out := make([]float32, dim)
		for i := range out {
			out[i] = float32(rng.NormFloat64())
		}
		return out
	}
	for i := 0; i < n; i += 1000 {
		batch := make([]history.MessageVector, 0, 1000)
		for k := i; k < min(i+1000, n); k++ {
			batch = append(batch, history.MessageVector{Position: int64(k), MessageID: msgs[k].ID, Vector: vector()})
		}
		require.NoError(b, s.PutVectors(ctx, "s", batch))
	}
	perMsg := float64(size()-before) / float64(n)
	var lat []time.Duration
	cpu0 := historytest.ProcessCPU()
	b.ResetTimer()
	for b.Loop() {
		q := vector()
		start := time.Now()
		hits, err := s.Nearest(ctx, "s", history.VectorQuery{Vector: q, Limit: 40})
		lat = append(lat, time.Since(start))
		require.NoError(b, err)
		require.Len(b, hits, 40)
	}
	b.ReportMetric(float64((historytest.ProcessCPU()-cpu0).Microseconds())/1000/float64(len(lat)), "cpu-ms")
	b.ReportMetric(perMsg, "bytes/msg")
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
