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
// one Search of 10 hits, the compaction that archived each hit included
// (the store numbers it in the same read). It reports the latency
// quantiles (goal: p99 ≤ 10 ms, docs/performance.md).
func BenchmarkSessionSearch(b *testing.B) {
	s, _, msgs := largeSession(b)
	queries := historytest.SearchQueries(msgs, 200, 2)
	var lat historytest.SearchLatencies
	i, archivedHits := 0, 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		lat.Time(func() {
			hits, err := s.Search(context.Background(), session.SearchRequest{Query: q})
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

// BenchmarkRecallRead is the figure of a recall read (issue 38): the 21
// messages around one message (Session.Messages with Before and After 10,
// what the recall tool's read of message_id with the largest window
// reads) in the session of BenchmarkSessionSearch, 101,000 messages in a
// SQLite file, around messages spread over the archive and Active. window
// is Session.Messages (one history.Reader.Window); timeline is, in the same
// run, how the read was made before Window: the whole Timeline, cut
// around the message. Goal: window p99 ≤ 2 ms.
func BenchmarkRecallRead(b *testing.B) {
	s, st, msgs := largeSession(b)
	around := func(i int) string { return msgs[(i*7919)%len(msgs)].ID }
	timed := func(read func(b *testing.B, id string)) func(b *testing.B) {
		return func(b *testing.B) {
			var lat historytest.SearchLatencies
			for i := 0; b.Loop(); i++ {
				id := around(i)
				lat.Time(func() { read(b, id) })
			}
			lat.Report(b)
		}
	}
	b.Run("window", timed(func(b *testing.B, id string) {
		got, err := s.Messages(context.Background(), session.MessagesRequest{Around: id, Before: 10, After: 10})
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 || len(got) > 21 {
			b.Fatalf("%d messages around %s", len(got), id)
		}
	}))
	b.Run("timeline", timed(func(b *testing.B, id string) {
		tl, err := st.Timeline(context.Background(), "s")
		if err != nil {
			b.Fatal(err)
		}
		var all []history.Message
		at := -1
		for _, e := range tl {
			if e.Message != nil {
				if e.Message.ID == id {
					at = len(all)
				}
				all = append(all, *e.Message)
			}
		}
		if at < 0 {
			b.Fatalf("no message %s", id)
		}
		_ = all[max(0, at-10):min(len(all), at+11)]
	}))
}

// largeSession opens session "s" of a SQLite file holding 100,000 archived
// messages (historytest.SearchCorpus, one Segment) and 1,000 Active ones;
// it returns the session, its store and the messages in order.
func largeSession(b *testing.B) (*session.Session, history.Store, []history.Message) {
	b.Helper()
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
	return s, st, msgs
}
