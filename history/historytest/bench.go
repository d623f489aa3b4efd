package historytest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
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

// SearchCorpus returns n messages of a synthetic coding session, seeded:
// user requests, assistant answers with tool calls, and tool results, their
// words drawn from a vocabulary of a few thousand (stop words, common
// programming words and identifiers, Zipf-distributed) as real sessions
// are. Messages are 200 to 600 bytes.
func SearchCorpus(n int, seed uint64) []history.Message {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	vocab := searchVocab()
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	sentence := func(words int) string {
		var b strings.Builder
		for i := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			if r.IntN(3) == 0 {
				b.WriteString(searchStop[r.IntN(len(searchStop))])
				b.WriteByte(' ')
			}
			b.WriteString(word())
		}
		b.WriteString(". ")
		return b.String()
	}
	out := make([]history.Message, n)
	call := 0
	for i := range out {
		m := history.Message{ID: fmt.Sprintf("m-%d", i), CreatedAt: time.Unix(1_700_000_000+int64(i), 0)}
		var text strings.Builder
		for text.Len() < 200+r.IntN(400) {
			text.WriteString(sentence(6 + r.IntN(10)))
		}
		m.Text = text.String()
		switch i % 4 {
		case 0:
			m.Role = history.RoleUser
		case 1:
			m.Role = history.RoleAssistant
			call++
			m.ToolCalls = []history.ToolCall{{ID: fmt.Sprintf("call-%d", call), Name: "read_file",
				Arguments: []byte(fmt.Sprintf(`{"path":"/project/%s/%s.go"}`, word(), word()))}}
		case 2:
			m.Role, m.ToolCallID = history.RoleTool, fmt.Sprintf("call-%d", call)
		default:
			m.Role = history.RoleAssistant
		}
		out[i] = m
	}
	return out
}

// SearchQueries returns n question-style queries about msgs, seeded: each
// asks about three to five words of one message, in other forms ("-s",
// "-ed", "-ing"), among stop words.
func SearchQueries(msgs []history.Message, n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, ^seed))
	out := make([]string, n)
	for i := range out {
		words := strings.FieldsFunc(msgs[r.IntN(len(msgs))].Text, func(c rune) bool { return c == ' ' || c == '.' })
		var content []string
		for _, w := range words {
			if !slices.Contains(searchStop, w) {
				content = append(content, w)
			}
		}
		q := []string{"why", "did", "we"}
		for range 3 + r.IntN(3) {
			w := content[r.IntN(len(content))]
			switch r.IntN(4) {
			case 0:
				w += "s"
			case 1:
				w += "ed"
			case 2:
				w += "ing"
			}
			q = append(q, w, searchStop[r.IntN(len(searchStop))])
		}
		out[i] = strings.Join(q, " ") + "?"
	}
	return out
}

// searchStop are the stop words of SearchCorpus.
var searchStop = []string{"the", "a", "to", "of", "and", "in", "is", "it", "we", "that", "for", "with", "this", "on", "was", "be"}

// searchVocab is SearchCorpus's vocabulary: common programming words
// first (the most frequent under Zipf), then identifiers made of them.
func searchVocab() []string {
	base := strings.Fields(`file function test error value config change rename fix build run return type
		string number list map call check update read write parse format round total amount money ledger
		account balance user request response server client handler timeout retry cache index query table
		column migration schema session message tool result output input command flag option default
		setting version release branch commit merge deploy package module import export interface struct
		method field pointer slice channel goroutine lock mutex context cancel deadline log trace metric`)
	out := slices.Clone(base)
	for _, a := range base {
		for _, b := range base[:40] {
			out = append(out, a+strings.ToUpper(b[:1])+b[1:])
		}
	}
	return out
}

// SearchLatencies records the latency of each Search of a benchmark and
// reports their quantiles (p50-ms, p99-ms) through b.ReportMetric.
type SearchLatencies struct{ d []time.Duration }

// Time runs fn and records how long it took.
func (l *SearchLatencies) Time(fn func()) {
	t := time.Now()
	fn()
	l.d = append(l.d, time.Since(t))
}

// Report reports the quantiles on b.
func (l *SearchLatencies) Report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 {
		return float64(l.d[min(len(l.d)-1, int(p*float64(len(l.d))))].Nanoseconds()) / 1e6
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// SearchArchived is the number of archived messages of the search
// benchmarks: def, or the environment's SESSIONKIT_SEARCH_ARCHIVED when it
// is a positive number (1000000 for issue 43's scale goal).
func SearchArchived(def int) int {
	if n, err := strconv.Atoi(os.Getenv("SESSIONKIT_SEARCH_ARCHIVED")); err == nil && n > 0 {
		return n
	}
	return def
}

// SearchSession creates session id in s, appends msgs (SearchCorpus) in
// batches of 1,000 through Append and archives the first archived of them
// with one compaction, as a session that ran that long has them. It
// returns the session's version.
func SearchSession(b *testing.B, s history.Store, id string, msgs []history.Message, archived int) uint64 {
	b.Helper()
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: id})
	require.NoError(b, err)
	v := snap.Version
	for i := 0; i < len(msgs); i += 1000 {
		v, err = s.Append(ctx, id, v, msgs[i:min(i+1000, len(msgs))])
		require.NoError(b, err)
	}
	v, err = s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: "c", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(b, err)
	v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: "c", SegmentID: "seg-c", Archive: archived, Summary: "S", At: time.Now()})
	require.NoError(b, err)
	return v
}

// BenchSearch runs the sub-benchmarks "neighbors=0" and "neighbors=1" on
// session id of s: each operation is one Search of 10 hits for the next of
// queries (SearchQueries), without neighbours and with one on each side. It
// reports the latency quantiles (SearchLatencies) and, for each of cpu, the
// CPU time per search in milliseconds under that name (each function
// returns the CPU time used so far by what it measures: the process, a
// database server's backends).
func BenchSearch(b *testing.B, s history.Store, id string, queries []string, cpu map[string]func() time.Duration) {
	ctx := context.Background()
	for _, n := range []int{0, 1} {
		b.Run(fmt.Sprintf("neighbors=%d", n), func(b *testing.B) {
			var lat SearchLatencies
			i, hits := 0, 0
			start := make(map[string]time.Duration, len(cpu))
			for name, f := range cpu {
				start[name] = f()
			}
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				lat.Time(func() {
					p, err := s.Search(ctx, id, history.SearchQuery{Text: q, Neighbors: n})
					if err != nil {
						b.Fatal(err)
					}
					hits += len(p.Hits)
				})
			}
			used := make(map[string]time.Duration, len(cpu))
			for name, f := range cpu {
				used[name] = f() - start[name]
			}
			if hits == 0 {
				b.Fatal("no search found anything")
			}
			lat.Report(b)
			for name, d := range used {
				if d > 0 {
					b.ReportMetric(float64(d.Nanoseconds())/1e6/float64(b.N), name)
				}
			}
		})
	}
}
