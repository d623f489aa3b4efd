package postgres

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkSearch is the SQLite store's BenchmarkSearch on PostgreSQL: one
// session of 100,000 archived messages (historytest.SearchCorpus, with 1,000
// Active ones after them; the environment's SESSIONKIT_SEARCH_ARCHIVED sets
// another number, such as 1000000), written by the store's own Append in
// batches of 1,000 and one compaction, then VACUUM ANALYZE (what autovacuum
// does to a table that grew so much). Each operation is one Search of 10
// hits, without neighbours and with one on each side (neighbors=1). It
// reports the latency quantiles (goal at 1,000,000: p99 ≤ 30 ms,
// docs/performance.md), cpu-ms, this process's CPU time per search, and
// server-cpu-ms, the CPU time per search of the database's backends (Linux,
// from /proc; not reported elsewhere). It logs how long the fill and the
// VACUUM took, and the bytes a message takes in
// the messages table and in the postings table, each with its indexes.
func BenchmarkSearch(b *testing.B) {
	archived, active := historytest.SearchArchived(100_000), 1_000
	ctx := context.Background()
	s := benchOpen(b)
	msgs := historytest.SearchCorpus(archived+active, 1)
	start := time.Now()
	historytest.SearchSession(b, s, "s", msgs, archived)
	filled := time.Since(start)
	_, err := s.pool.Exec(ctx, `VACUUM ANALYZE`)
	require.NoError(b, err)
	b.Logf("filled in %s, vacuumed in %s", filled.Round(time.Second), (time.Since(start) - filled).Round(time.Second))
	var msgBytes, postBytes, n, posts int64
	require.NoError(b, s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('messages'), pg_total_relation_size('postings'),
		(SELECT count(*) FROM messages), (SELECT count(*) FROM postings)`).Scan(&msgBytes, &postBytes, &n, &posts))
	b.Logf("per message: messages %d bytes (with their indexes), postings %d bytes in %.1f rows (with their index)",
		msgBytes/n, postBytes/n, float64(posts)/float64(n))
	historytest.BenchSearch(b, s, "s", historytest.SearchQueries(msgs, 200, 2), map[string]func() time.Duration{
		"cpu-ms":        historytest.ProcessCPU,
		"server-cpu-ms": func() time.Duration { return backendCPU(b, s) },
	})
}

// backendCPU is the CPU time (user and system) that the backends serving
// s's database used so far, read from /proc/<pid>/stat (in clock ticks,
// taken to be 100 a second as on Linux); 0 where there is no /proc.
func backendCPU(b *testing.B, s *Store) time.Duration {
	var pids []int
	rows, err := s.pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(b, err)
	pids, err = pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(b, err)
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0
		}
		// pid (comm) state ppid … utime stime: fields 14 and 15, the
		// 12th and 13th after comm.
		f := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
		if len(f) < 13 {
			return 0
		}
		for _, x := range f[11:13] {
			n, _ := strconv.ParseInt(string(x), 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
