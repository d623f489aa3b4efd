package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/poll"
)

// holdCommitter makes the committer run a job that waits until the
// returned function is called, so that the writes started meanwhile queue
// up for the next batch.
func holdCommitter(t testing.TB, s *Store) (release func()) {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.c.submit(context.Background(), func(*sql.Tx) error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	return func() {
		close(hold)
		require.NoError(t, <-done)
	}
}

// waitSubmitting waits until n goroutines are inside committer.submit.
func waitSubmitting(t testing.TB, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	var k int
	if !poll.Within(30*time.Second, func() bool {
		k = strings.Count(string(buf[:runtime.Stack(buf, true)]), "sqlite.(*committer).submit(")
		return k >= n
	}) {
		t.Fatalf("%d goroutines in submit, want %d", k, n)
	}
}

// TestGroupCommitIsolatesFailures: writes of several sessions that wait
// while a transaction runs are committed together in the next one; the
// writes of that batch that fail (a stale version, a compaction ID already
// recorded after the version had been swapped, a fenced lease, a session
// that already exists) fail alone and leave nothing behind, while every
// other write of the batch is acknowledged and durable across a reopen.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	var (
		mu       sync.Mutex
		counting atomic.Bool // the batches of the writes below, not of the setup
		batches  []int
	)
	s, err := Open(path, withOnBatch(func(n int) {
		if counting.Load() {
			mu.Lock()
			batches = append(batches, n)
			mu.Unlock()
		}
	}))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()

	const good = 5
	versions := map[string]uint64{}
	for _, id := range []string{"g0", "g1", "g2", "g3", "g4", "conflict", "dup", "fenced"} {
		snap, err := s.Create(ctx, history.NewSession{ID: id})
		require.NoError(t, err)
		versions[id] = snap.Version
	}
	versions["dup"], err = s.BeginCompaction(ctx, "dup", versions["dup"], history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(t, err)
	l, err := s.Acquire(ctx, "fenced")
	require.NoError(t, err)
	defer func() { _ = l.Release(ctx) }()
	fenced := l.Store()
	// Another holder's takeover, as the file sees it: the lease's token is
	// no longer the current one, which only the write's transaction finds.
	_, err = s.w.ExecContext(ctx, `UPDATE leases SET token = token + 1 WHERE session_id = 'fenced'`)
	require.NoError(t, err)

	counting.Store(true)
	release := holdCommitter(t, s)

	type result struct {
		v   uint64
		err error
	}
	results := map[string]*result{}
	var wg sync.WaitGroup
	start := func(name string, fn func() (uint64, error)) {
		r := &result{}
		results[name] = r
		wg.Go(func() { r.v, r.err = fn() })
	}
	for i := range good {
		id := fmt.Sprintf("g%d", i)
		start(id, func() (uint64, error) { return s.Append(ctx, id, versions[id], historytest.Msgs(id, 2)) })
	}
	start("conflict", func() (uint64, error) {
		return s.Append(ctx, "conflict", versions["conflict"]+7, historytest.Msgs("x", 1))
	})
	start("dup", func() (uint64, error) {
		return s.BeginCompaction(ctx, "dup", versions["dup"], history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
	})
	start("fenced", func() (uint64, error) {
		return fenced.Append(ctx, "fenced", versions["fenced"], historytest.Msgs("f", 1))
	})
	start("exists", func() (uint64, error) {
		_, err := s.Create(ctx, history.NewSession{ID: "g0", Title: "again"})
		return 0, err
	})
	waitSubmitting(t, len(results)+1) // and the held job
	release()
	wg.Wait()

	mu.Lock()
	assert.Contains(t, batches, len(results), "every waiting write in one batch (batches %v)", batches)
	mu.Unlock()
	assert.ErrorIs(t, results["conflict"].err, history.ErrConflict)
	assert.ErrorIs(t, results["dup"].err, history.ErrExists)
	assert.ErrorIs(t, results["fenced"].err, history.ErrFenced)
	assert.ErrorIs(t, results["exists"].err, history.ErrExists)
	for i := range good {
		id := fmt.Sprintf("g%d", i)
		require.NoError(t, results[id].err, id)
		assert.Equal(t, versions[id]+1, results[id].v, id)
	}

	require.NoError(t, s.Close())
	s = open(t, path)
	for i := range good {
		id := fmt.Sprintf("g%d", i)
		snap, err := s.Load(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, versions[id]+1, snap.Version, id)
		assert.Equal(t, []string{id + "-0", id + "-1"}, ids(snap.Active), id)
		assert.NotEqual(t, "again", snap.Title, "the failed Create of %s changed nothing", id)
	}
	for _, id := range []string{"conflict", "dup", "fenced"} {
		snap, err := s.Load(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, versions[id], snap.Version, "%s: the failed write left nothing", id)
		assert.Empty(t, snap.Active, id)
		assert.Equal(t, int64(0), snap.NextPosition-int64(len(snap.Interrupted)), "%s: no position taken", id)
	}
	timeline, err := s.Timeline(ctx, "dup")
	require.NoError(t, err)
	assert.Len(t, timeline, 1, "one compaction record")
}

// TestGroupCommitBatches: many sessions writing at once share transactions
// (fewer batches than writes), and every write is there after a reopen.
func TestGroupCommitBatches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	var (
		mu       sync.Mutex
		counting atomic.Bool // the batches of the writes below, not of the setup
		batches  int
	)
	s, err := Open(path, withOnBatch(func(int) {
		if counting.Load() {
			mu.Lock()
			batches++
			mu.Unlock()
		}
	}))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	const sessions, writes = 32, 10
	for i := range sessions {
		_, err := s.Create(ctx, history.NewSession{ID: fmt.Sprintf("s%d", i)})
		require.NoError(t, err)
	}
	counting.Store(true)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			id, v := fmt.Sprintf("s%d", i), uint64(1)
			for j := range writes {
				var err error
				v, err = s.Append(ctx, id, v, historytest.Msgs(fmt.Sprintf("%s-%d-", id, j), 1))
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	assert.Less(t, batches, sessions*writes, "writes shared transactions")
	mu.Unlock()
	require.NoError(t, s.Close())
	s = open(t, path)
	for i := range sessions {
		snap, err := s.Load(ctx, fmt.Sprintf("s%d", i))
		require.NoError(t, err)
		assert.Len(t, snap.Active, writes)
		assert.Equal(t, uint64(1+writes), snap.Version)
	}
}

// BenchmarkBatchedAppend measures the cost of one append inside a batch:
// the committer is held while n sessions queue one-message appends, then
// the batch is timed from its release until every caller has its answer
// (one transaction, one fsync). It reports the time per write of the batch;
// at batch=1 that is a write alone, fsync included.
func BenchmarkBatchedAppend(b *testing.B) {
	for _, n := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := benchOpen(b)
			versions := make([]uint64, n)
			for i := range versions {
				snap, err := s.Create(ctx, history.NewSession{ID: fmt.Sprintf("s%d", i)})
				require.NoError(b, err)
				versions[i] = snap.Version
			}
			text := strings.Repeat("x", 500)
			var total time.Duration
			for k := 0; b.Loop(); k++ {
				b.StopTimer()
				release := holdCommitter(b, s)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						m := history.Message{ID: fmt.Sprintf("m%d", k), Role: history.RoleUser, Text: text, CreatedAt: time.Now()}
						v, err := s.Append(ctx, fmt.Sprintf("s%d", i), versions[i], []history.Message{m})
						if err != nil {
							b.Error(err)
						}
						versions[i] = v
					})
				}
				waitSubmitting(b, n+1)
				start := time.Now()
				release()
				wg.Wait()
				total += time.Since(start)
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/float64(b.N*n), "µs/write")
		})
	}
}
