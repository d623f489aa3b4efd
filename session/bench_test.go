package session_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

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
	fillWith(b, store, id, n, func(j int, role history.Role) history.Message {
		return history.Message{ID: fmt.Sprintf("%s-%d", id, j), Role: role, Text: fmt.Sprintf("%0500d", j)}
	})
}

// fillWith creates session id and appends n messages made by msg, user for
// even j and assistant for odd j, in batches.
func fillWith(b *testing.B, store history.Store, id string, n int, msg func(j int, role history.Role) history.Message) {
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
			msgs = append(msgs, msg(j, role))
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
			logTimeline(b, st, "s")
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

// logTimeline opens session id once, untimed: a session filled through the
// store's own writes has no events in its log, and its first open logs
// them (docs/design.md §6.1), as a session written through a Session never
// needs.
func logTimeline(b *testing.B, st history.Store, id string) {
	b.Helper()
	s, err := session.Open(context.Background(), session.Config{ID: id, Provider: instant{}, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
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

// reopenSizes are the session sizes of BenchmarkReopenScan.
var reopenSizes = []int{1000, 10000, 100000}

// reopenAt holds the median reopen of each size BenchmarkReopenScan
// measured in this process, for the ratio of the largest to N = 10,000.
var reopenAt = map[int]time.Duration{}

// BenchmarkReopenScan measures what a user waits for when an editor resumes
// a conversation, against the least the machine can do to read the same
// rows. Each size is a session of N messages of 500 bytes whose oldest half
// one compaction archived (the compacted session of the peer benchmark,
// docs/performance.md), on a SQLite file that is closed between
// repetitions. Each repetition times, one after the other:
//
//   - reopen: sqlite.Open, session.New, Active, Summary and the
//     provider.Request of the next turn (bench/peer/goworker's reopen);
//   - scan: the bare scan of the same rows: a database/sql handle opened on
//     the file, one prepared SELECT of the Active messages' bodies (the
//     watermark given), every row's body read as sql.RawBytes, nothing
//     decoded;
//   - warm: the same statement run again on that connection (open, the
//     statement prepared, SQLite's page cache warm).
//
// Nothing keeps the file open between the steps (a connection kept open
// would keep the WAL from being checkpointed at Close, which changes what
// the next reopen reads).
//
// It reports the medians in milliseconds and the medians of the ratios of
// each repetition's reopen to its scans (reopen/scan, reopen/warm: the two
// are measured moments apart, so a load that comes and goes on the machine
// shifts both); at
// N = 100,000 also the ratio of its reopen to that of N = 10,000 when both
// ran in this process (x10k).
func BenchmarkReopenScan(b *testing.B) {
	for _, n := range reopenSizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "reopen.db")
			activeFrom := buildCompacted(b, path, n)
			rows := n - n/2
			var reopen, scan, warmScan []time.Duration
			for b.Loop() {
				reopen = append(reopen, timeReopen(b, path, rows))
				cold, warm := timeScans(b, path, activeFrom, rows)
				scan, warmScan = append(scan, cold), append(warmScan, warm)
			}
			toScan, toWarm := ratios(reopen, scan), ratios(reopen, warmScan)
			r, s, w := median(reopen), median(scan), median(warmScan)
			reopenAt[n] = r
			b.ReportMetric(msOf(r), "reopen-ms")
			b.ReportMetric(msOf(s), "scan-ms")
			b.ReportMetric(msOf(w), "warm-ms")
			b.ReportMetric(float64(median(toScan))/1000, "reopen/scan")
			b.ReportMetric(float64(median(toWarm))/1000, "reopen/warm")
			if base, ok := reopenAt[10000]; ok && n == 100000 {
				b.ReportMetric(float64(r)/float64(base), "x10k")
			}
		})
	}
}

// bareScan is the bare scan's one statement: the bodies of the Active
// messages, the range of the primary key from the watermark that Load reads.
const bareScan = `SELECT body FROM messages WHERE session_id = ? AND pos >= ? ORDER BY pos`

// timeScans times the bare scan of the want messages of session "s" from
// position from on a database/sql handle opened on the file at path: cold
// (the handle opened, the statement prepared, the rows read) and then warm
// (the same statement run again on that connection).
func timeScans(b *testing.B, path string, from int64, want int) (cold, warm time.Duration) {
	b.Helper()
	start := time.Now()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := db.Prepare(bareScan)
	if err != nil {
		b.Fatal(err)
	}
	scanRows(b, stmt, from, want)
	cold = time.Since(start)
	start = time.Now()
	scanRows(b, stmt, from, want)
	warm = time.Since(start)
	if err := errors.Join(stmt.Close(), db.Close()); err != nil {
		b.Fatal(err)
	}
	return cold, warm
}

// scanRows runs the bare scan and checks that it read want rows.
func scanRows(b *testing.B, stmt *sql.Stmt, activeFrom int64, want int) {
	b.Helper()
	rows, err := stmt.Query("s", activeFrom)
	if err != nil {
		b.Fatal(err)
	}
	n, size := 0, 0
	for rows.Next() {
		var body sql.RawBytes
		if err := rows.Scan(&body); err != nil {
			b.Fatal(err)
		}
		n, size = n+1, size+len(body)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || n != want || size < 500*n {
		b.Fatalf("bare scan: %d rows of %d bytes, want %d: %v", n, size, want, err)
	}
}

// timeReopen times the reopen of session "s" at path through the context of
// its next request, and checks the context holds want messages.
func timeReopen(b *testing.B, path string, want int) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	st, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := session.New(ctx, session.Config{ID: "s", Provider: instant{}, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	active, err := s.Active(ctx)
	if err != nil {
		b.Fatal(err)
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		b.Fatal(err)
	}
	req := &provider.Request{Purpose: provider.PurposeTurn, Summary: sum, Messages: active}
	d := time.Since(start)
	if len(req.Messages) != want || req.Summary == "" {
		b.Fatalf("reopen: %d messages (want %d), summary %q", len(req.Messages), want, req.Summary)
	}
	if err := errors.Join(s.Close(), st.Close()); err != nil {
		b.Fatal(err)
	}
	return d
}

// buildCompacted writes session "s" of n messages of 500 bytes (alternating
// user and assistant, with their times) to a new file at path, archives the
// oldest half with one compaction, closes the file and returns the
// watermark (the position of the first Active message).
func buildCompacted(b *testing.B, path string, n int) int64 {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	fillWith(b, st, "s", n, func(j int, role history.Role) history.Message {
		return history.Message{ID: fmt.Sprintf("m%d", j), Role: role, Text: fmt.Sprintf("%s message %d:%0500d", role, j, j)[:500], CreatedAt: time.Now()}
	})
	snap, err := st.Load(ctx, "s")
	if err != nil {
		b.Fatal(err)
	}
	v := snap.Version
	if v, err = st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: "manual", Status: history.StatusInProgress}); err != nil {
		b.Fatal(err)
	}
	if _, _, err = st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: n / 2, Summary: "summary of the earlier conversation"}); err != nil {
		b.Fatal(err)
	}
	logTimeline(b, st, "s")
	snap, err = st.Load(ctx, "s")
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	// The first Active message is the oldest one the compaction kept: its
	// position is the watermark Load reads from.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var from int64
	if err := db.QueryRow(`SELECT active_from FROM sessions WHERE id = 's'`).Scan(&from); err != nil || len(snap.Active) != n-n/2 {
		b.Fatal(err, len(snap.Active))
	}
	return from
}

// ratios are a[i]/b[i] in thousandths, as durations for median.
func ratios(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, len(a))
	for i := range a {
		out[i] = a[i] * 1000 / max(b[i], 1)
	}
	return out
}

// median is the median of d (which it sorts).
func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkReplay measures a full Replay (ReplayOptions.After 0) of a
// session of N messages of 500 bytes whose oldest half one compaction
// archived, every entry in the event log, against the bare read of the
// rows it returns. The session is open on a SQLite file; each repetition
// times, one after the other:
//
//   - replay: Session.Replay from the start, its subscription closed;
//   - scan: the bare scan of every message of the timeline on a
//     database/sql handle opened on the file: one prepared SELECT of the
//     bodies, read as sql.RawBytes, nothing decoded;
//   - warm: the same statement run again on that connection.
//
// It reports the medians in milliseconds and the medians of the ratios of
// each repetition's replay to its scans (replay/scan, replay/warm).
func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "replay.db")
			buildCompacted(b, path, n)
			st, err := sqlite.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			s := benchSession(b, st, "s")
			var replay, scan, warmScan []time.Duration
			for b.Loop() {
				start := time.Now()
				rep, err := s.Replay(ctx, session.ReplayOptions{})
				if err != nil {
					b.Fatal(err)
				}
				replay = append(replay, time.Since(start))
				rep.Sub.Close()
				if msgs := countMessages(rep.Events); msgs != n {
					b.Fatalf("replay: %d messages, want %d", msgs, n)
				}
				cold, warm := timeScans(b, path, 0, n)
				scan, warmScan = append(scan, cold), append(warmScan, warm)
			}
			toScan, toWarm := ratios(replay, scan), ratios(replay, warmScan)
			b.ReportMetric(msOf(median(replay)), "replay-ms")
			b.ReportMetric(msOf(median(scan)), "scan-ms")
			b.ReportMetric(msOf(median(warmScan)), "warm-ms")
			b.ReportMetric(float64(median(toScan))/1000, "replay/scan")
			b.ReportMetric(float64(median(toWarm))/1000, "replay/warm")
		})
	}
}

// countMessages is how many of evs are MessageEvents.
func countMessages(evs []session.Event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.Payload.(*session.MessageEvent); ok {
			n++
		}
	}
	return n
}

// BenchmarkFirstOpen measures the first open of a session of N messages
// of 500 bytes filled through the store's own appends (as another tool,
// or a sessionkit from before the event log, writes them), whose oldest
// half one compaction archived: that open logs the events of every entry
// (docs/design.md §6.1). It reports the open's time and the peak of the
// live heap while it ran (sampled every millisecond), above the heap
// before it.
func BenchmarkFirstOpen(b *testing.B) {
	for _, n := range []int{100000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(filepath.Join(b.TempDir(), "first.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			var open, peak []time.Duration // peak in bytes, as a duration for median
			i := 0
			for b.Loop() {
				b.StopTimer()
				id := fmt.Sprintf("s%d", i)
				i++
				fill(b, st, id, n)
				snap, err := st.Load(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				v, err := st.BeginCompaction(ctx, id, snap.Version, history.CompactionRecord{CompactID: "c", Trigger: "manual", Status: history.StatusInProgress})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := st.CommitCompaction(ctx, id, v, history.Commit{CompactID: "c", SegmentID: "g", Archive: n / 2, Summary: "S"}); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				base := liveHeap()
				stop := make(chan struct{})
				top := make(chan uint64)
				go func() {
					m := base
					tick := time.NewTicker(time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-tick.C:
							m = max(m, liveHeap())
						case <-stop:
							top <- max(m, liveHeap())
							return
						}
					}
				}()
				b.StartTimer()
				start := time.Now()
				s, err := session.Open(ctx, session.Config{ID: id, Provider: instant{}, Store: st})
				if err != nil {
					b.Fatal(err)
				}
				open = append(open, time.Since(start))
				b.StopTimer()
				close(stop)
				peak = append(peak, time.Duration(<-top-base))
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				if snap, err = st.Load(ctx, id); err != nil || snap.LogCovers != snap.NextPosition {
					b.Fatalf("the log covers %d of %d positions: %v", snap.LogCovers, snap.NextPosition, err)
				}
				b.StartTimer()
			}
			b.ReportMetric(msOf(median(open)), "open-ms")
			b.ReportMetric(float64(median(peak))/(1<<20), "peak-heap-MB")
		})
	}
}

// liveHeap is the bytes of the heap's live and not yet swept objects.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
