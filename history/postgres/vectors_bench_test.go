package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkNearest is historytest.BenchNearest on PostgreSQL: bytes/msg is
// what the vectors table takes with its index per message (after VACUUM
// ANALYZE), and besides this process's CPU per Nearest (cpu-ms) it
// reports the database's backends' (server-cpu-ms): every vector of the
// session travels to Go to be scored.
func BenchmarkNearest(b *testing.B) {
	ctx := context.Background()
	s := benchOpen(b)
	size := func() int64 {
		_, err := s.pool.Exec(ctx, `VACUUM ANALYZE vectors`)
		require.NoError(b, err)
		var n int64
		require.NoError(b, s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('vectors')`).Scan(&n))
		return n
	}
	historytest.BenchNearest(b, s, size, map[string]func() time.Duration{
		"cpu-ms":        historytest.ProcessCPU,
		"server-cpu-ms": func() time.Duration { return backendCPU(b, s) },
	})
}
