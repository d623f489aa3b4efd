package historytest

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// BenchNearest is the cost of an embedder (docs/compaction.md, "Search
// with an embedder"), which both SQL stores' BenchmarkNearest run: a
// session of 100,000 messages (SESSIONKIT_VECTORS_MESSAGES sets another
// number), each with a random vector of 1536 dimensions
// (SESSIONKIT_VECTORS_DIM sets another, such as 768), then Nearest of 40
// (what a fused search of 10 hits with one neighbour asks for) with random
// queries. It reports bytes/msg, what the vectors add per message by size
// (the bytes the store takes, called before and after the vectors are
// written), the latency quantiles of one Nearest (SearchLatencies), and,
// for each of cpu, the CPU time per Nearest in milliseconds under that
// name (as BenchSearch).
func BenchNearest(b *testing.B, s history.Store, size func() int64, cpu map[string]func() time.Duration) {
	n, dim := 100_000, 1536
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("SESSIONKIT_VECTORS_DIM")); err == nil && v > 0 {
		dim = v
	}
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(b, err)
	v := snap.Version
	msgs := Msgs("m", n)
	for i := 0; i < n; i += 1000 {
		v, err = s.Append(ctx, "s", v, msgs[i:min(i+1000, n)])
		require.NoError(b, err)
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
	var lat SearchLatencies
	start := make(map[string]time.Duration, len(cpu))
	for name, f := range cpu {
		start[name] = f()
	}
	b.ResetTimer()
	for b.Loop() {
		q := vector()
		lat.Time(func() {
			hits, err := s.Nearest(ctx, "s", history.VectorQuery{Vector: q, Limit: 40})
			require.NoError(b, err)
			require.Len(b, hits, 40)
		})
	}
	for name, f := range cpu {
		b.ReportMetric(float64((f()-start[name]).Nanoseconds())/1e6/float64(b.N), name)
	}
	b.ReportMetric(perMsg, "bytes/msg")
	lat.Report(b)
}
