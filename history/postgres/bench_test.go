package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// The benchmarks are historytest's, on a fresh database each.

func benchOpen(b *testing.B) *Store { return newStore(b) }

// BenchmarkAppend appends one message of 1 KiB per operation: one durable
// transaction each, through the store and through a lease's fenced store.
func BenchmarkAppend(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		b.Run(fmt.Sprintf("fenced=%v", fenced), func(b *testing.B) {
			s := newStore(b)
			var st history.Store = s
			if fenced {
				st = acquire(b, s, "a").Store()
			}
			historytest.BenchAppend(b, st)
		})
	}
}

// BenchmarkAppendWords appends messages of the search corpus
// (historytest.SearchCorpus: prose of 200 to 600 bytes, about 36 distinct
// words each, every fourth a tool call and its result) to one session:
// per=1 appends one message per operation, per=64 sixty-four; each
// operation is one durable transaction. It reports msgs/s, and the CPU
// time per message of this process and of the database's backends.
func BenchmarkAppendWords(b *testing.B) {
	corpus := historytest.SearchCorpus(64*64, 1)
	for _, per := range []int{1, 64} {
		b.Run(fmt.Sprintf("per=%d", per), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b)
			snap, err := s.Create(ctx, history.NewSession{ID: "a"})
			require.NoError(b, err)
			v, i := snap.Version, 0
			cpu, server := historytest.ProcessCPU(), backendCPU(b, s)
			for b.Loop() {
				batch := corpus[i%len(corpus):][:per]
				if v, err = s.Append(ctx, "a", v, batch); err != nil {
					b.Fatal(err)
				}
				i += per
			}
			cpu, server = historytest.ProcessCPU()-cpu, backendCPU(b, s)-server
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(i), "cpu-µs/msg")
			b.ReportMetric(float64(server.Microseconds())/float64(i), "server-cpu-µs/msg")
		})
	}
}

// BenchmarkCommit commits a compaction that archives N messages of a session
// that has N archived already, and undoes it outside the timer (the
// watermark makes that two row updates). The time must not grow with N.
func BenchmarkCommit(b *testing.B) {
	historytest.BenchCommit(b, benchOpen, func(b *testing.B, s *Store, before *history.Snapshot) func() {
		var activeFrom int64
		require.NoError(b, s.pool.QueryRow(context.Background(), `SELECT active_from FROM sessions WHERE id = 'c'`).Scan(&activeFrom))
		return func() { benchUndoCommit(b, s, activeFrom, before) }
	})
}

// benchUndoCommit puts the benchmark session back to its state before the
// commit of compaction "c", keeping its version.
func benchUndoCommit(b *testing.B, s *Store, activeFrom int64, before *history.Snapshot) {
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE sessions SET active_from = $1, archived = $2, summary = $3 WHERE id = 'c'`, activeFrom, before.Archived, bin(before.Summary))
	require.NoError(b, err)
	_, err = tx.Exec(ctx, `
		UPDATE compactions SET status = 'in_progress', summary = '', finished_at = NULL, segment_id = NULL,
			from_pos = NULL, to_pos = NULL, input_tokens = NULL, output_tokens = NULL
		WHERE session_id = 'c' AND compact_id = 'c'`)
	require.NoError(b, err)
	require.NoError(b, tx.Commit(ctx))
}

// BenchmarkLoad loads a session of 100 Active messages after N archived
// ones, with the planner's statistics up to date.
func BenchmarkLoad(b *testing.B) {
	historytest.BenchLoad(b, benchOpen, func(b *testing.B, s *Store) {
		_, err := s.pool.Exec(context.Background(), `ANALYZE`)
		require.NoError(b, err)
	})
}

// BenchmarkAcquireRelease takes and gives up a session's lease.
func BenchmarkAcquireRelease(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	for b.Loop() {
		l, err := s.Acquire(ctx, "a")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFork measures the goals of forks (historytest.BenchFork) with
// fork-B the bytes of the rows a fork wrote (pg_column_size of every row
// of the tables a fork writes, before and after).
func BenchmarkFork(b *testing.B) {
	s := benchOpen(b)
	historytest.BenchFork(b, s, func() int64 {
		var n int64
		require.NoError(b, s.pool.QueryRow(context.Background(), `SELECT
			(SELECT COALESCE(sum(pg_column_size(t.*)), 0) FROM sessions t) +
			(SELECT COALESCE(sum(pg_column_size(t.*)), 0) FROM messages t) +
			(SELECT COALESCE(sum(pg_column_size(t.*)), 0) FROM compactions t) +
			(SELECT COALESCE(sum(pg_column_size(t.*)), 0) FROM configs t)`).Scan(&n))
		return n
	})
}
