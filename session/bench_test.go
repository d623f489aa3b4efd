package session_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// instant is a provider that answers at once: benchmarks measure sessionkit,
// not a model.
type instant struct{}

func (instant) Complete(_ context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	text := "ok"
	if req.Purpose == provider.PurposeSummary {
		text = "summary of the earlier conversation"
	}
	if onDelta != nil {
		onDelta(text)
	}
	return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: text}, Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

// blocked is a provider whose calls wait until its gate closes.
type blocked struct{ gate chan struct{} }

func (p blocked) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	select {
	case <-p.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return instant{}.Complete(ctx, req, onDelta)
}

func benchSession(b *testing.B, store history.Store, id string) *session.Session {
	b.Helper()
	s, err := session.New(context.Background(), session.Config{ID: id, Provider: instant{}, Store: store, MaxQueue: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkAdmission measures a public call up to the returned Handle (the
// command is queued; its work is not timed). A first turn blocks in the
// provider, so every later command stays queued behind it: only admission
// is measured, not the loop running the commands meanwhile on the other
// core (an earlier version of Compact let each queued compaction run, and
// measured 8-14 µs depending on how the two cores interleaved).
func BenchmarkAdmission(b *testing.B) {
	ctx := context.Background()
	blockedSession := func(b *testing.B) (*session.Session, func()) {
		gate := make(chan struct{})
		s, err := session.New(ctx, session.Config{Provider: blocked{gate}, Store: memstore.New(), MaxQueue: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Prompt(ctx, session.PromptRequest{Text: "first"}); err != nil {
			b.Fatal(err)
		}
		return s, func() {
			close(gate)
			_ = s.Close()
		}
	}
	b.Run("Compact", func(b *testing.B) {
		s, done := blockedSession(b)
		for b.Loop() {
			if _, err := s.Compact(ctx, session.CompactRequest{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		done()
	})
	b.Run("Prompt", func(b *testing.B) {
		s, done := blockedSession(b)
		for b.Loop() {
			if _, err := s.Prompt(ctx, session.PromptRequest{Text: "hi"}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		done()
	})
}

// BenchmarkTurn is a whole no-op turn: admission, the user message, one
// instant provider step, the assistant message, the Handle.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	s := benchSession(b, memstore.New(), "")
	for b.Loop() {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		<-h.Finished()
	}
}

// fill appends n alternating user and assistant messages of 500 bytes.
func fill(b *testing.B, store history.Store, id string, n int) {
	b.Helper()
	ctx := context.Background()
	snap, err := store.Create(ctx, history.NewSession{ID: id})
	if err != nil {
		b.Fatal(err)
	}
	v := snap.Version
	const batch = 5000
	for i := 0; i < n; i += batch {
		msgs := make([]history.Message, 0, batch)
		for j := i; j < min(n, i+batch); j++ {
			role := history.RoleUser
			if j%2 == 1 {
				role = history.RoleAssistant
			}
			msgs = append(msgs, history.Message{ID: fmt.Sprintf("%s-%d", id, j), Role: role, Text: fmt.Sprintf("%0500d", j)})
		}
		if v, err = store.Append(ctx, id, v, msgs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompactionOverhead is one compaction of n Active messages with an
// instant summarizer: everything sessionkit does around the model call
// (plan, transcript, the store transaction, events).
func BenchmarkCompactionOverhead(b *testing.B) {
	for _, kind := range []string{"memstore", "sqlite"} {
		for _, n := range []int{100, 1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/active=%d", kind, n), func(b *testing.B) {
				var store history.Store = memstore.New()
				if kind == "sqlite" {
					st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = st.Close() })
					store = st
				}
				i := 0
				for b.Loop() {
					b.StopTimer()
					id := fmt.Sprintf("s%d", i)
					i++
					fill(b, store, id, n)
					s := benchSession(b, store, id)
					b.StartTimer()
					h, err := s.Compact(context.Background(), session.CompactRequest{})
					if err != nil {
						b.Fatal(err)
					}
					<-h.Finished()
					if !h.Result().Compacted {
						b.Fatal(h.Result().Error)
					}
					b.StopTimer()
					_ = s.Close()
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkOpen opens a stored session whose archive grows while Active
// stays at 100 messages: the cost must not grow with the archive.
func BenchmarkOpen(b *testing.B) {
	for _, archived := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("archived=%d", archived), func(b *testing.B) {
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			ctx := context.Background()
			fill(b, st, "s", archived+100)
			snap, err := st.Load(ctx, "s")
			if err != nil {
				b.Fatal(err)
			}
			v, err := st.BeginCompaction(ctx, "s", snap.Version, history.CompactionRecord{CompactID: "c", Trigger: "manual", Status: history.StatusInProgress})
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: archived, Summary: "S"}); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s, err := session.New(ctx, session.Config{ID: "s", Provider: instant{}, Store: st})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = s.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkIdleSessionMemory reports the heap held by each of 10,000 idle
// sessions (in-memory store, one message each).
func BenchmarkIdleSessionMemory(b *testing.B) {
	const n = 10000
	for b.Loop() {
		store := memstore.New()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		sessions := make([]*session.Session, n)
		for i := range sessions {
			s, err := session.New(context.Background(), session.Config{Provider: instant{}, Store: store})
			if err != nil {
				b.Fatal(err)
			}
			sessions[i] = s
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/session")
		b.ReportMetric(float64(runtime.NumGoroutine())/n, "goroutines/session")
		for _, s := range sessions {
			_ = s.Close()
		}
	}
}
