package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// benchMessages returns n messages of about size bytes of text, numbered
// from first.
func benchMessages(first, n, size int) []history.Message {
	text := strings.Repeat("x", size)
	out := make([]history.Message, n)
	for i := range out {
		role := history.RoleUser
		if (first+i)%2 == 1 {
			role = history.RoleAssistant
		}
		out[i] = history.Message{ID: fmt.Sprintf("m-%d", first+i), Role: role, Text: text, CreatedAt: time.Now()}
	}
	return out
}

// benchSession creates session id in s and appends n messages in batches.
func benchSession(b *testing.B, s history.Store, id string, n, size int) uint64 {
	b.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: id})
	require.NoError(b, err)
	v := snap.Version
	for done := 0; done < n; {
		k := min(1000, n-done)
		v, err = s.Append(ctx, id, v, benchMessages(done, k, size))
		require.NoError(b, err)
		done += k
	}
	return v
}

// benchCompact archives the oldest n Active messages of session id.
func benchCompact(b *testing.B, s history.Store, id string, v uint64, cid string, n int) uint64 {
	b.Helper()
	ctx := context.Background()
	v, err := s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(b, err)
	v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: cid, SegmentID: "seg-" + cid, Archive: n, Summary: "summary " + cid, At: time.Now()})
	require.NoError(b, err)
	return v
}

// BenchmarkAppend appends one message of 1 KiB per operation: one durable
// transaction each, through the store and through a lease's fenced store.
func BenchmarkAppend(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		b.Run(fmt.Sprintf("fenced=%v", fenced), func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			var st history.Store = s
			if fenced {
				st = acquire(b, s, "a").Store()
			}
			snap, err := st.Create(ctx, history.NewSession{ID: "a"})
			require.NoError(b, err)
			v, i := snap.Version, 0
			for b.Loop() {
				if v, err = st.Append(ctx, "a", v, benchMessages(i, 1, 1024)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkCommit commits a compaction that archives N messages of a session
// that has N archived already. After each operation the commit is undone
// outside the timer (the watermark makes that two row updates), so every
// operation commits the same N messages. The time must not grow with N.
func BenchmarkCommit(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("archive=%d", n), func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			v := benchSession(b, s, "c", 2*n, 500)
			v = benchCompact(b, s, "c", v, "first", n)
			v, err := s.BeginCompaction(ctx, "c", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now()})
			require.NoError(b, err)
			before, err := s.Load(ctx, "c")
			require.NoError(b, err)
			var activeFrom int64
			require.NoError(b, s.pool.QueryRow(ctx, `SELECT active_from FROM sessions WHERE id = 'c'`).Scan(&activeFrom))
			c := history.Commit{CompactID: "c", SegmentID: "seg-c", Archive: n, Summary: "again", At: time.Now()}
			for b.Loop() {
				if v, _, err = s.CommitCompaction(ctx, "c", v, c); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				benchUndoCommit(b, s, activeFrom, before)
				b.StartTimer()
			}
		})
	}
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
// ones.
func BenchmarkLoad(b *testing.B) {
	const active = 100
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("archived=%d", n), func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			v := benchSession(b, s, "l", n+active, 500)
			benchCompact(b, s, "l", v, "c", n)
			_, err := s.pool.Exec(ctx, `ANALYZE`)
			require.NoError(b, err)
			for b.Loop() {
				snap, err := s.Load(ctx, "l")
				if err != nil {
					b.Fatal(err)
				}
				if len(snap.Active) != active || snap.Archived != int64(n) {
					b.Fatalf("loaded %d active, %d archived", len(snap.Active), snap.Archived)
				}
			}
		})
	}
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
