package storecmp

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The stores, each opened fresh for one benchmark.
var stores = []struct {
	name string
	open func(b *testing.B) history.Store
}{
	{"sqlite", func(b *testing.B) history.Store {
		st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}},
	{"postgres", func(b *testing.B) history.Store {
		st, err := postgres.Open(context.Background(), pgtest.Database(b), postgres.WithMaxConns(24))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}},
}

// text is a message of the peer benchmark's size (500 bytes).
var text = strings.Repeat("alpha bravo charlie delta echo ", 17)[:500]

func message(i int) history.Message {
	role := history.RoleUser
	if i%2 == 1 {
		role = history.RoleAssistant
	}
	return history.Message{ID: fmt.Sprintf("m%d", i), Role: role, Text: text, CreatedAt: time.Now()}
}

func create(b *testing.B, st history.Store, id string) uint64 {
	snap, err := st.Create(context.Background(), history.NewSession{ID: id})
	if err != nil {
		b.Fatal(err)
	}
	return snap.Version
}

// BenchmarkAppend: one message appended and durable, one session.
func BenchmarkAppend(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			ctx := context.Background()
			v := create(b, st, "s")
			i := 0
			for b.Loop() {
				var err error
				if v, err = st.Append(ctx, "s", v, []history.Message{message(i)}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkCompactionCommit: the canonical compaction commit of one session
// that has 1,000 archived messages and 100 Active, archiving 50; the
// in-progress record and the new messages are written untimed.
func BenchmarkCompactionCommit(b *testing.B) {
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			ctx := context.Background()
			v := create(b, st, "s")
			msgs := make([]history.Message, 1100)
			for i := range msgs {
				msgs[i] = message(i)
			}
			v, err := st.Append(ctx, "s", v, msgs)
			if err != nil {
				b.Fatal(err)
			}
			n := len(msgs)
			k := 0
			commit := func(archive int) {
				cid := fmt.Sprintf("c%d", k)
				k++
				if v, err = st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				v, _, err = st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: cid, SegmentID: "g" + cid, Archive: archive, Summary: "summary", At: time.Now()})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			commit(1000) // 1,000 archived, 100 Active
			b.ResetTimer()
			for range b.N {
				batch := make([]history.Message, 50)
				for i := range batch {
					batch[i] = message(n)
					n++
				}
				if v, err = st.Append(ctx, "s", v, batch); err != nil {
					b.Fatal(err)
				}
				commit(50)
			}
		})
	}
}

// BenchmarkConcurrentCommits: n sessions (1, 16, 64, 256), each written by
// its own goroutine, every write a durable one-message append; reports the
// durable writes per second of all of them together and the p50 and p99
// latency of one write. The total number of writes is b.N whatever n is, so
// the levels compare at equal work.
func BenchmarkConcurrentCommits(b *testing.B) {
	for _, s := range stores {
		for _, sessions := range []int{1, 16, 64, 256} {
			b.Run(fmt.Sprintf("%s/sessions=%d", s.name, sessions), func(b *testing.B) {
				concurrentCommits(b, s.open(b), sessions)
			})
		}
	}
}

// concurrentCommits runs BenchmarkConcurrentCommits for one store and one
// number of sessions.
func concurrentCommits(b *testing.B, st history.Store, sessions int) {
	ctx := context.Background()
	versions := make([]uint64, sessions)
	for i := range versions {
		versions[i] = create(b, st, fmt.Sprintf("s%d", i))
	}
	perSession := max(b.N/sessions, 1)
	latencies := make([][]time.Duration, sessions)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			id, v := fmt.Sprintf("s%d", i), versions[i]
			lat := make([]time.Duration, 0, perSession)
			for j := range perSession {
				t := time.Now()
				var err error
				if v, err = st.Append(ctx, id, v, []history.Message{message(j)}); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(t))
			}
			latencies[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(latencies...)
	slices.Sort(all)
	b.ReportMetric(float64(perSession*sessions)/elapsed.Seconds(), "commits/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkPostgresCommitDelay: BenchmarkConcurrentCommits on PostgreSQL
// with the server's group commit settings of the connections varied
// (docs/scale-out.md): commit_delay (microseconds a committing backend waits
// for others to join its WAL flush when at least commit_siblings other
// transactions are active) at 0, the default, and at 100 and 500.
// synchronous_commit stays on: every commit is flushed before it returns.
func BenchmarkPostgresCommitDelay(b *testing.B) {
	for _, delay := range []int{0, 100, 500} {
		for _, sessions := range []int{1, 64, 256} {
			b.Run(fmt.Sprintf("commit_delay=%d/sessions=%d", delay, sessions), func(b *testing.B) {
				url := pgtest.Database(b)
				sep := "?"
				if strings.Contains(url, "?") {
					sep = "&"
				}
				// Runtime parameters of the connections (the test server's
				// user is a superuser, who may set them per session).
				url += fmt.Sprintf("%scommit_delay=%d&commit_siblings=2&synchronous_commit=on", sep, delay)
				st, err := postgres.Open(context.Background(), url, postgres.WithMaxConns(24))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = st.Close() })
				concurrentCommits(b, st, sessions)
			})
		}
	}
}
