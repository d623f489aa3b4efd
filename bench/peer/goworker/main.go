// Command goworker is the sessionkit side of the peer benchmark (see
// docs/performance.md): it builds, compacts and reopens a SQLite-backed
// session of N messages against the fake OpenAI-compatible server and prints
// one JSON line.
//
//	goworker --n 10000 --port 8931 --reps 5
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/bench/internal/workload"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/session"
)

// timing wraps the HTTP transport: it records when RoundTrip is entered and
// how long it takes, and the request body.
type timing struct {
	next http.RoundTripper

	mu      sync.Mutex
	entered chan time.Time // one send per RoundTrip, when armed
	calls   int
	spent   time.Duration
	body    []byte
}

func (t *timing) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	t.mu.Lock()
	ch := t.entered
	t.mu.Unlock()
	if ch != nil {
		select {
		case ch <- start:
		default:
		}
	}
	var body []byte
	if r.GetBody != nil {
		if rc, err := r.GetBody(); err == nil {
			body, _ = io.ReadAll(rc)
			rc.Close()
		}
	}
	resp, err := t.next.RoundTrip(r)
	d := time.Since(start)
	t.mu.Lock()
	t.calls++
	t.spent += d
	t.body = body
	t.mu.Unlock()
	return resp, err
}

func (t *timing) reset() (calls int, spent time.Duration, body []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls, spent, body = t.calls, t.spent, t.body
	t.calls, t.spent, t.body = 0, 0, nil
	return
}

func (t *timing) arm() chan time.Time {
	ch := make(chan time.Time, 1)
	t.mu.Lock()
	t.entered = ch
	t.mu.Unlock()
	return ch
}

func maxRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

type worker struct {
	n    int
	dir  string
	tr   *timing
	prov *openai.Provider
	// profile, when set, receives a CPU profile of the timed Compact.
	profile string
}

func main() {
	n := flag.Int("n", 1000, "messages")
	port := flag.Int("port", 8931, "fake server port on 127.0.0.1")
	reps := flag.Int("reps", 3, "repetitions; rep 0 is cold")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the compactions to this file")
	flag.Parse()
	if *reps < 1 {
		log.Fatal("--reps must be at least 1")
	}
	tr := &timing{next: http.DefaultTransport}
	prov, err := openai.New(
		openai.WithBaseURL(fmt.Sprintf("http://127.0.0.1:%d/v1", *port)),
		openai.WithModel("fake-model"),
		openai.WithAPIKey("unused"),
		openai.WithHTTPClient(&http.Client{Transport: tr}),
		openai.WithMaxRetries(0),
	)
	if err != nil {
		log.Fatal(err)
	}
	var res workload.Result
	res.SDK = "sessionkit@" + acp.Version
	res.N, res.Reps = *n, *reps
	res.RSSAfterInitMB = maxRSSMB()

	var build, e2e, model, excl, prep, reC, reU, resume []float64
	for rep := 0; rep < *reps; rep++ {
		dir, err := os.MkdirTemp("", "sessionkit-peer-")
		if err != nil {
			log.Fatal(err)
		}
		w := &worker{n: *n, dir: dir, tr: tr, prov: prov, profile: *cpuprofile}
		r := w.rep()
		os.RemoveAll(dir)
		build = append(build, r.build)
		e2e = append(e2e, r.e2e)
		model = append(model, r.model)
		excl = append(excl, r.e2e-r.model)
		prep = append(prep, r.prepare)
		reC = append(reC, r.compacted)
		reU = append(reU, r.uncompacted)
		resume = append(resume, r.resume)
		res.Build.FileBytes = r.fileBytes
		res.Compact.RequestBytes = r.requestBytes
		res.Compact.ModelCalls = r.calls
		res.Compact.ContextMessagesAfter = r.after
		res.Reopen.ContextMessages = r.ctxMessages
	}
	if len(build) > 1 {
		res.Build.Ms = workload.Median(build[1:])
	} else {
		res.Build.Ms = workload.Median(build)
	}
	res.Compact.E2E = workload.Summarize(e2e)
	res.Compact.ModelHTTP = workload.Summarize(model)
	res.Compact.ExclModel = workload.Summarize(excl)
	res.Compact.Prepare = workload.Summarize(prep)
	res.Reopen.CompactedCtx = workload.Summarize(reC)
	res.Reopen.UncompactedCtx = workload.Summarize(reU)
	res.Reopen.ResumeToRequest = workload.Summarize(resume)
	res.PeakRSSMB = maxRSSMB()
	res.Summarized = "oldest half of Active (default plan)"
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

type repResult struct {
	build, e2e, model, prepare     float64
	compacted, uncompacted, resume float64
	fileBytes                      int64
	requestBytes, calls, after     int
	ctxMessages                    int
}

const sessionID = "bench"

func (w *worker) rep() repResult {
	ctx := context.Background()
	var r repResult
	path := filepath.Join(w.dir, "compacted", "s.db")
	copyPath := filepath.Join(w.dir, "uncompacted", "s.db")
	must(os.MkdirAll(filepath.Dir(path), 0o755))
	must(os.MkdirAll(filepath.Dir(copyPath), 0o755))

	// (a) build: a new persistent session, N durable appends of one message.
	texts := make([]string, w.n)
	for i := range texts {
		texts[i] = workload.Text(i)
	}
	st, err := sqlite.Open(path)
	must(err)
	start := time.Now()
	s, err := session.New(ctx, session.Config{ID: sessionID, Provider: w.prov, Store: st})
	must(err)
	must(s.Close())
	snap, err := st.Load(ctx, sessionID)
	must(err)
	v := snap.Version
	for i, text := range texts {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		v, err = st.Append(ctx, sessionID, v, []history.Message{{ID: fmt.Sprintf("m%d", i), Role: role, Text: text, CreatedAt: time.Now()}})
		must(err)
	}
	r.build = ms(time.Since(start))
	// Appended through the store, the messages have no events in the
	// session's log yet; an open logs them, once (as a session written
	// through a Session never needs), before the copy is taken.
	s, err = session.Open(ctx, session.Config{ID: sessionID, Provider: w.prov, Store: st})
	must(err)
	must(s.Close())
	must(st.Close())
	r.fileBytes = dirBytes(filepath.Dir(path))
	copyDir(filepath.Dir(path), filepath.Dir(copyPath))

	// (b) compact: open untimed, time one Compact until its Handle finishes.
	st, err = sqlite.Open(path)
	must(err)
	s, err = session.New(ctx, session.Config{ID: sessionID, Provider: w.prov, Store: st})
	must(err)
	w.tr.reset()
	entered := w.tr.arm()
	if w.profile != "" {
		f, err := os.Create(w.profile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer f.Close()
	}
	start = time.Now()
	h, err := s.Compact(ctx, session.CompactRequest{})
	must(err)
	<-h.Finished()
	r.e2e = ms(time.Since(start))
	if w.profile != "" {
		pprof.StopCPUProfile()
	}
	if res := h.Result(); !res.Compacted {
		log.Fatalf("compaction did not compact: %+v", res)
	}
	select {
	case t := <-entered:
		r.prepare = ms(t.Sub(start))
	default:
	}
	calls, spent, body := w.tr.reset()
	r.model, r.calls, r.requestBytes = ms(spent), calls, len(body)
	active, err := s.Active(ctx)
	must(err)
	sum, err := s.Summary(ctx)
	must(err)
	r.after = len(active)
	if sum != "" {
		r.after++ // the summary goes to the model as one message
	}
	must(s.Close())
	must(st.Close())

	// (c) reopen: open and build the request context, compacted and not.
	r.compacted = w.reopenContext(path)
	r.uncompacted = w.reopenContext(copyPath)

	// resume to request: open, Prompt("continue"), until RoundTrip is entered.
	start = time.Now()
	st, err = sqlite.Open(path)
	must(err)
	s, err = session.New(ctx, session.Config{ID: sessionID, Provider: w.prov, Store: st})
	must(err)
	entered = w.tr.arm()
	ph, err := s.Prompt(ctx, session.PromptRequest{Text: "continue"})
	must(err)
	t := <-entered
	r.resume = ms(t.Sub(start))
	<-ph.Finished()
	if err := ph.Result().Err; err != nil {
		log.Fatalf("resume turn: %v", err)
	}
	_, _, body = w.tr.reset()
	var wire struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(body, &wire) == nil {
		r.ctxMessages = len(wire.Messages)
	}
	must(s.Close())
	must(st.Close())
	return r
}

// reopenContext opens the session on a fresh store and session object and
// builds the model request context (no HTTP); it returns milliseconds.
func (w *worker) reopenContext(path string) float64 {
	ctx := context.Background()
	start := time.Now()
	st, err := sqlite.Open(path)
	must(err)
	s, err := session.New(ctx, session.Config{ID: sessionID, Provider: w.prov, Store: st})
	must(err)
	active, err := s.Active(ctx)
	must(err)
	sum, err := s.Summary(ctx)
	must(err)
	req := &provider.Request{Purpose: provider.PurposeTurn, Summary: sum, Messages: active}
	d := time.Since(start)
	if len(req.Messages) == 0 {
		log.Fatal("empty context")
	}
	must(s.Close())
	must(st.Close())
	return ms(d)
}

func dirBytes(dir string) int64 {
	var total int64
	entries, err := os.ReadDir(dir)
	must(err)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total
}

func copyDir(from, to string) {
	entries, err := os.ReadDir(from)
	must(err)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		must(err)
		must(os.WriteFile(filepath.Join(to, e.Name()), b, 0o644))
	}
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
