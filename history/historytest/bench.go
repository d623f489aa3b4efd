package historytest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// The shared benchmarks of stores. A store package's benchmark opens its
// store and calls one of them, so that the stores are measured by the same
// workload:
//
//	func BenchmarkLoad(b *testing.B) {
//		historytest.BenchLoad(b, func(b *testing.B) *Store { return open(b) }, nil)
//	}

// BenchAppend appends one message of 1 KiB per operation to a new session
// "a" of s: one durable transaction each. s may be a lease's store of
// session "a".
func BenchAppend(b *testing.B, s history.Store) {
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(b, err)
	v, i := snap.Version, 0
	for b.Loop() {
		if v, err = s.Append(ctx, "a", v, benchMessages(i, 1, 1024)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchCommit runs a sub-benchmark "archive=N" for N of 100, 1000 and 10000
// on a fresh store from open. Each operation commits compaction "c" of
// session "c", archiving N messages of a session that has N archived
// already. After each operation the commit is undone outside the timer, so
// every operation commits the same N messages; the time must not grow with
// N.
//
// Undoing a commit is the store's business: save is called once compaction
// "c" has begun, with before, the session as loaded then, and returns the
// function that puts the session back to that state, keeping its version.
func BenchCommit[S history.Store](b *testing.B, open func(b *testing.B) S, save func(b *testing.B, s S, before *history.Snapshot) (undo func())) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("archive=%d", n), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			v := benchSession(b, s, "c", 2*n, 500)
			v = benchCompact(b, s, "c", v, "first", n)
			v, err := s.BeginCompaction(ctx, "c", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now()})
			require.NoError(b, err)
			before, err := s.Load(ctx, "c")
			require.NoError(b, err)
			undo := save(b, s, before)
			c := history.Commit{CompactID: "c", SegmentID: "seg-c", Archive: n, Summary: "again", At: time.Now()}
			for b.Loop() {
				if v, _, err = s.CommitCompaction(ctx, "c", v, c); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				undo()
				b.StartTimer()
			}
		})
	}
}

// BenchLoad runs a sub-benchmark "archived=N" for N of 1000, 10000 and
// 100000 on a fresh store from open: each operation loads session "l" of
// 100 Active messages after N archived ones. ready, if not nil, is called
// once the session is written, before the timer starts (to update a
// database's statistics, say).
func BenchLoad[S history.Store](b *testing.B, open func(b *testing.B) S, ready func(b *testing.B, s S)) {
	const active = 100
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("archived=%d", n), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			v := benchSession(b, s, "l", n+active, 500)
			benchCompact(b, s, "l", v, "c", n)
			if ready != nil {
				ready(b, s)
			}
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
