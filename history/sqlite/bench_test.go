package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// The benchmarks are historytest's, on a fresh database file each.

func benchOpen(b *testing.B) *Store {
	return open(b, filepath.Join(b.TempDir(), "bench.db"))
}

// BenchmarkAppend appends one message of 1 KiB per operation: one durable
// transaction each.
func BenchmarkAppend(b *testing.B) {
	historytest.BenchAppend(b, benchOpen(b))
}

// BenchmarkCommit commits a compaction that archives N messages of a session
// that has N archived already, and undoes it outside the timer (the
// watermark makes that two row updates). The time must not grow with N.
func BenchmarkCommit(b *testing.B) {
	historytest.BenchCommit(b, benchOpen, func(b *testing.B, s *Store, before *history.Snapshot) func() {
		var activeFrom int64
		require.NoError(b, s.w.QueryRowContext(context.Background(), `SELECT active_from FROM sessions WHERE id = 'c'`).Scan(&activeFrom))
		return func() { benchUndoCommit(b, s, activeFrom, before) }
	})
}

// benchUndoCommit puts the benchmark session back to its state before the
// commit of compaction "c", keeping its version.
func benchUndoCommit(b *testing.B, s *Store, activeFrom int64, before *history.Snapshot) {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, `UPDATE sessions SET active_from = ?, archived = ?, summary = ? WHERE id = 'c'`, activeFrom, before.Archived, before.Summary)
	require.NoError(b, err)
	_, err = tx.ExecContext(ctx, `
		UPDATE compactions SET status = 'in_progress', summary = '', finished_at = NULL, segment_id = NULL,
			from_pos = NULL, to_pos = NULL, input_tokens = NULL, output_tokens = NULL
		WHERE session_id = 'c' AND compact_id = 'c'`)
	require.NoError(b, err)
	require.NoError(b, tx.Commit())
}

// BenchmarkLoad loads a session of 100 Active messages after N archived
// ones.
func BenchmarkLoad(b *testing.B) {
	historytest.BenchLoad(b, benchOpen, nil)
}

// BenchmarkLoadActive loads a session of 5,000 Active messages of 500
// bytes, the Active of the peer benchmark's compacted session at N =
// 10,000 (docs/performance.md); it reports the cost of one row.
func BenchmarkLoadActive(b *testing.B) {
	const n = 5000
	s := benchOpen(b)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(b, err)
	msgs := historytest.Msgs("m", n)
	for i := range msgs {
		msgs[i].Text = strings.Repeat("x", 500)
		msgs[i].CreatedAt = time.Now()
	}
	_, err = s.Append(ctx, "a", snap.Version, msgs)
	require.NoError(b, err)
	b.ResetTimer()
	for b.Loop() {
		got, err := s.Load(ctx, "a")
		if err != nil || len(got.Active) != n {
			b.Fatal(err, len(got.Active))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
