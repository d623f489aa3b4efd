package postgres

import (
	"context"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkNearest is the SQLite store's BenchmarkNearest on PostgreSQL
// (docs/compaction.md, "Search with an embedder"): a session of 100,000
// messages (SESSIONKIT_VECTORS_MESSAGES sets another number), each with a
// random vector of 1536 dimensions (SESSIONKIT_VECTORS_DIM sets another),
// then Nearest of 40 with random queries. It reports bytes/msg, what the
// vectors table takes per message with its index, the latency quantiles
// of one Nearest, and the CPU time per Nearest of this process (cpu-ms)
// and of the database's backends (server-cpu-ms).
func BenchmarkNearest(b *testing.B) {
	n, dim := 100_000, 1536
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_DIM")); err == nil && v > 0 {
		dim = v
	}
	ctx := context.Background()
	s := benchOpen(b)
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(b, err)
	v := snap.Version
	msgs := historytest.Msgs("m", n)
	for i := 0; i < n; i += 1000 {
		v, err = s.Append(ctx, "s", v, msgs[i:min(i+1000, n)])
		require.NoError(b, err)
	}
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
	_, err = s.pool.Exec(ctx, `VACUUM ANALYZE vectors`)
	require.NoError(b, err)
	var size int64
	require.NoError(b, s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('vectors')`).Scan(&size))
	var lat []time.Duration
	cpu0, server0 := historytest.ProcessCPU(), backendCPU(b, s)
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
	b.ReportMetric(float64((backendCPU(b, s)-server0).Microseconds())/1000/float64(len(lat)), "server-cpu-ms")
	b.ReportMetric(float64(size)/float64(n), "bytes/msg")
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
