package session_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/session"
)

// BenchmarkSessionSearch is the goal's own figure: Session.Search on a
// session opened from a SQLite file that holds 100,000 archived messages
// (historytest.SearchCorpus, one Segment) and 1,000 Active ones, with the
// question-style queries of historytest.SearchQueries; each operation is
// one Search of 10 hits, the compaction that archived each hit included.
// It reports the latency quantiles (goal: p99 ≤ 10 ms, docs/performance.md);
// the first search of the session, which reads the Segments once to number
// the compactions, is timed with the rest.
func BenchmarkSessionSearch(b *testing.B) {
	const archived, active = 100_000, 1_000
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "search.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	msgs := historytest.SearchCorpus(archived+active, 1)
	snap, err := st.Create(ctx, history.NewSession{ID: "s"})
	if err != nil {
		b.Fatal(err)
	}
	v := snap.Version
	for i := 0; i < len(msgs); i += 1000 {
		if v, err = st.Append(ctx, "s", v, msgs[i:min(i+1000, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
	if v, err = st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	if _, _, err = st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "seg-c", Archive: archived, Summary: "S", At: time.Now()}); err != nil {
		b.Fatal(err)
	}
	s, err := session.New(ctx, session.Config{ID: "s", Provider: instant{}, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	queries := historytest.SearchQueries(msgs, 200, 2)
	var lat historytest.SearchLatencies
	i, archivedHits := 0, 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		lat.Time(func() {
			hits, err := s.Search(ctx, session.SearchRequest{Query: q})
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range hits {
				if h.Compaction > 0 {
					archivedHits++
				}
			}
		})
	}
	if archivedHits == 0 {
		b.Fatal("no search found an archived message")
	}
	lat.Report(b)
}
