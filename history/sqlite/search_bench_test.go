package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkSearch searches a session of 100,000 archived messages
// (historytest.SearchCorpus, with 1,000 Active ones after them; the
// environment's SESSIONKIT_SEARCH_ARCHIVED sets another number, such as
// 1000000) with question-style queries; each operation is one Search of 10
// hits, without neighbours and with one on each side (neighbors=1). It
// reports the latency quantiles (goal: p99 ≤ 10 ms, docs/performance.md)
// and cpu-ms, the process's CPU time per search, which a loaded machine
// does not inflate as it does the latencies. SESSIONKIT_SEARCH_TAIL=n
// appends n more Active messages that stay out of the index (indexer.go),
// so that every search also reads and matches them itself.
func BenchmarkSearch(b *testing.B) {
	archived, active, tail := historytest.SearchArchived(100_000), 1_000, 0
	if n, err := strconv.Atoi(os.Getenv("SESSIONKIT_SEARCH_TAIL")); err == nil && n > 0 {
		tail = n
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "bench.db")
	s := open(b, path, withIndexBound(0))
	msgs := historytest.SearchCorpus(archived+active+tail, 1)
	all := msgs
	msgs = msgs[:archived+active]
	v := historytest.SearchSession(b, s, "s", msgs, archived)
	if tail > 0 {
		require.NoError(b, s.Close())
		s = open(b, path, withIndexBound(1<<30), withoutIdleIndex(), withoutHurry())
		_, err := s.Append(ctx, "s", v, all[archived+active:])
		require.NoError(b, err)
		msgs = all
	}
	historytest.BenchSearch(b, s, "s", historytest.SearchQueries(msgs, 200, 2), map[string]func() time.Duration{"cpu-ms": historytest.ProcessCPU})
}

// BenchmarkIndexCost weighs what the search index costs the writes, in one
// run: two stores, one with the index and one without (withoutIndex), take
// turns. Each operation commits a compaction of 1,000 messages on each
// (undone outside the timer, as BenchmarkCommit does) and appends a batch
// of 10 messages of historytest.SearchCorpus to each. It reports
// commit-x and append-x, the time with the index over the time without
// (goal for the commit: at most 1.25).
func BenchmarkIndexCost(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	type side struct {
		s            *Store
		v            uint64
		undo         func()
		commit, appd time.Duration
	}
	corpus := historytest.SearchCorpus(2*n+10*100_000, 3)
	next := 2 * n
	sides := make([]*side, 2)
	for k := range sides {
		opts := []Option{withIndexBound(0)} // each Append indexes its messages
		if k == 1 {
			opts = append(opts, withoutIndex())
		}
		s := open(b, filepath.Join(b.TempDir(), fmt.Sprintf("bench%d.db", k)), opts...)
		snap, err := s.Create(ctx, history.NewSession{ID: "c"})
		require.NoError(b, err)
		v, err := s.Append(ctx, "c", snap.Version, corpus[:2*n])
		require.NoError(b, err)
		v, err = s.BeginCompaction(ctx, "c", v, history.CompactionRecord{CompactID: "first", Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
		require.NoError(b, err)
		v, _, err = s.CommitCompaction(ctx, "c", v, history.Commit{CompactID: "first", SegmentID: "seg-first", Archive: n, Summary: "S", At: time.Now()})
		require.NoError(b, err)
		v, err = s.BeginCompaction(ctx, "c", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now()})
		require.NoError(b, err)
		before, err := s.Load(ctx, "c")
		require.NoError(b, err)
		var activeFrom int64
		require.NoError(b, s.w.QueryRowContext(ctx, `SELECT active_from FROM sessions WHERE id = 'c'`).Scan(&activeFrom))
		sides[k] = &side{s: s, v: v, undo: func() { benchUndoCommit(b, s, activeFrom, before) }}
	}
	c := history.Commit{CompactID: "c", SegmentID: "seg-c", Archive: n, Summary: "again", At: time.Now()}
	for b.Loop() {
		batch := corpus[next : next+10]
		if next+20 <= len(corpus) {
			next += 10
		}
		for _, sd := range sides {
			t := time.Now()
			v, _, err := sd.s.CommitCompaction(ctx, "c", sd.v, c)
			if err != nil {
				b.Fatal(err)
			}
			sd.commit += time.Since(t)
			b.StopTimer()
			sd.undo()
			b.StartTimer()
			// Appends after the commit's undo: fresh IDs each time.
			msgs := make([]history.Message, len(batch))
			for j := range batch {
				msgs[j] = batch[j]
				msgs[j].ID = fmt.Sprintf("%s-%d", batch[j].ID, v)
				msgs[j].ToolCallID = ""
				if msgs[j].Role == history.RoleTool {
					msgs[j].Role = history.RoleUser
				}
			}
			t = time.Now()
			if sd.v, err = sd.s.Append(ctx, "c", v, msgs); err != nil {
				b.Fatal(err)
			}
			sd.appd += time.Since(t)
		}
	}
	b.ReportMetric(float64(sides[0].commit)/float64(sides[1].commit), "commit-x")
	b.ReportMetric(float64(sides[0].appd)/float64(sides[1].appd), "append-x")
}
