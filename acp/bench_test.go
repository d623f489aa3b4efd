package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// The ACP benchmarks run acp.Serve in this process, connected to a client
// over two OS pipes (os.Pipe: real pipes, read and written with system
// calls, as an editor's stdio would be). Each iteration does a fixed amount
// of work, so run them with a fixed count, e.g.
//
//	go test -run '^$' -bench 'NotificationThroughput|SummaryChunkLatency' -benchtime=20x ./acp/
//
// Two clients are measured:
//
//   - raw: a minimal JSON-RPC reader written here (line framing on a 64 KiB
//     bufio.Reader; see each benchmark for how much it decodes), so that the
//     figures are those of the agent and the pipe;
//   - client: the Go client (acp.Dial, RemoteSession, Subscribe), i.e. what
//     a sessionkit program driving a remote agent sees.
//
// The package's TestMain (goleak) also runs after the benchmarks: every
// iteration's goroutines must be gone when the benchmark's cleanup returns.

const (
	// throughputDeltas is the number of text deltas the provider streams in
	// one turn of BenchmarkNotificationThroughput. It must stay below the
	// agent's forwarder buffer (1<<14 events, acp/forward.go): past that a
	// client that is behind loses deltas by design and the count below
	// would never be reached.
	throughputDeltas = 10_000
	// latencyChunks is the number of summary deltas of one compaction in
	// BenchmarkSummaryChunkLatency.
	latencyChunks = 200
	// benchWait bounds every wait of a benchmark, so that a bug fails it
	// instead of hanging it.
	benchWait = 60 * time.Second
)

// benchStreamProvider streams a turn reply as many short text deltas; a summary
// is one short delta.
type benchStreamProvider struct {
	deltas []string
	text   string
}

func newBenchStreamProvider(n int) *benchStreamProvider {
	p := &benchStreamProvider{deltas: make([]string, n)}
	for i := range p.deltas {
		p.deltas[i] = fmt.Sprintf("w%06d ", i) // 8 bytes
	}
	p.text = strings.Join(p.deltas, "")
	return p
}

func (p *benchStreamProvider) Complete(_ context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose == provider.PurposeSummary {
		onDelta("summary")
		return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: "summary"}}, nil
	}
	for _, d := range p.deltas {
		onDelta(d)
	}
	return &provider.Response{
		Message: history.Message{Role: history.RoleAssistant, Text: p.text},
		Usage:   provider.Usage{InputTokens: 100, OutputTokens: len(p.deltas)},
	}, nil
}

// benchChunkAck is a client's receipt of summary chunk idx, taken when it was
// decoded.
type benchChunkAck struct {
	idx int
	at  time.Time
}

// benchPacedProvider answers a turn with one short delta. A summary streams
// len(chunks) deltas in lock step with the client: it takes a timestamp,
// calls onDelta, and waits for the client's receipt of that chunk before it
// emits the next one. So nothing queues anywhere between the provider and
// the client, and each sample is the latency of one chunk through an idle
// path: session loop, forwarder, JSON encoding, the pipe, the client's
// decoding (and, for the Go client, its dispatch and Subscribe).
type benchPacedProvider struct {
	chunks []string
	acks   chan benchChunkAck

	mu      sync.Mutex
	samples []time.Duration
}

func newBenchPacedProvider(n int) *benchPacedProvider {
	p := &benchPacedProvider{chunks: make([]string, n), acks: make(chan benchChunkAck, 1)}
	for i := range p.chunks {
		p.chunks[i] = fmt.Sprintf("c%04d ", i)
	}
	return p
}

// benchChunkIndex is the inverse of the chunk texts of newBenchPacedProvider.
func benchChunkIndex(text string) (int, bool) {
	if len(text) < 2 || text[0] != 'c' {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(text[1:]))
	return n, err == nil
}

func (p *benchPacedProvider) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose != provider.PurposeSummary {
		onDelta("ok")
		return &provider.Response{
			Message: history.Message{Role: history.RoleAssistant, Text: "ok"},
			Usage:   provider.Usage{InputTokens: 10, OutputTokens: 1},
		}, nil
	}
	timer := time.NewTimer(benchWait)
	defer timer.Stop()
	for i, c := range p.chunks {
		sent := time.Now()
		onDelta(c)
		select {
		case a := <-p.acks:
			if a.idx != i {
				return nil, fmt.Errorf("the client received chunk %d, expected %d", a.idx, i)
			}
			p.mu.Lock()
			p.samples = append(p.samples, a.at.Sub(sent))
			p.mu.Unlock()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("no receipt for summary chunk %d", i)
		}
	}
	return &provider.Response{
		Message: history.Message{Role: history.RoleAssistant, Text: strings.Join(p.chunks, "")},
		Usage:   provider.Usage{InputTokens: 100, OutputTokens: len(p.chunks)},
	}, nil
}

// ack hands a receipt to the provider; it never blocks the client's reader
// for long (the provider waits for exactly one receipt at a time).
func (p *benchPacedProvider) ack(text string, at time.Time) {
	if i, ok := benchChunkIndex(text); ok {
		select {
		case p.acks <- benchChunkAck{i, at}:
		case <-time.After(benchWait):
		}
	}
}

func (p *benchPacedProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.samples)
}

// reportLatency reports the median, p99 and maximum of the samples in µs.
func (p *benchPacedProvider) reportLatency(b *testing.B) {
	p.mu.Lock()
	s := slices.Clone(p.samples)
	p.mu.Unlock()
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(benchPercentile(s, 0.50)), "p50-µs")
	b.ReportMetric(us(benchPercentile(s, 0.99)), "p99-µs")
	b.ReportMetric(us(s[len(s)-1]), "max-µs")
	b.ReportMetric(float64(len(s)), "samples")
}

// benchPercentile returns the nearest-rank q-quantile of sorted.
func benchPercentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// benchPipes are the two OS pipes between an agent and a client.
type benchPipes struct {
	agentIn, toAgent    *os.File // client → agent
	fromAgent, agentOut *os.File // agent → client
}

func newBenchPipes(b *testing.B) *benchPipes {
	b.Helper()
	agentIn, toAgent, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromAgent, agentOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	return &benchPipes{agentIn: agentIn, toAgent: toAgent, fromAgent: fromAgent, agentOut: agentOut}
}

// benchServe runs acp.Serve on the agent's ends of pp (memstore, no
// logger) and returns its result channel. Serve's connection closes both of
// its ends when it returns.
func benchServe(pp *benchPipes, prov provider.Provider) <-chan error {
	served := make(chan error, 1)
	opts := acp.ServerOptions{Session: session.Config{Provider: prov, Store: memstore.New()}}
	go func() { served <- acp.Serve(context.Background(), pp.agentIn, pp.agentOut, opts) }()
	return served
}

func benchWaitServed(b *testing.B, served <-chan error) {
	b.Helper()
	select {
	case err := <-served:
		if err != nil {
			b.Errorf("Serve: %v", err)
		}
	case <-time.After(benchWait):
		b.Error("Serve did not return after the client closed")
	}
}

// benchRawClient is a minimal JSON-RPC client: it writes requests, and one
// reader goroutine frames the agent's lines, counts their bytes, offers
// each to onLine and otherwise decodes it with jsonrpc.ReadMessage and
// completes the matching request.
type benchRawClient struct {
	b        *testing.B
	pp       *benchPipes
	served   <-chan error
	onLine   func(line []byte, read int64) bool // on the reader goroutine, with the bytes read so far; true = consumed
	read     atomic.Int64                       // bytes received from the agent
	readDone chan struct{}

	wmu    sync.Mutex
	nextID int64

	mu      sync.Mutex
	pending map[string]chan *jsonrpc.Message
	bad     error // a line that was not JSON-RPC
}

// startBenchRaw serves prov over pipes, connects a raw client (onLine may be
// nil), initializes it with the compaction capability and opens a session.
// The cleanup closes the client's end and waits for the agent and the
// reader.
func startBenchRaw(b *testing.B, prov provider.Provider, onLine func(line []byte, read int64) bool) (*benchRawClient, string) {
	b.Helper()
	pp := newBenchPipes(b)
	c := &benchRawClient{b: b, pp: pp, onLine: onLine, readDone: make(chan struct{}), pending: map[string]chan *jsonrpc.Message{}}
	c.served = benchServe(pp, prov)
	go c.readLoop()
	b.Cleanup(func() {
		_ = pp.toAgent.Close() // the agent reads EOF, returns and closes its ends
		benchWaitServed(b, c.served)
		select {
		case <-c.readDone:
		case <-time.After(benchWait):
			b.Error("the raw client's reader did not end")
		}
		_ = pp.fromAgent.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.bad != nil {
			b.Error(c.bad)
		}
	})
	if _, err := c.call("initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`)); err != nil {
		b.Fatal(err)
	}
	res, err := c.call("session/new", schema.NewSessionRequest{Cwd: "/project"})
	if err != nil {
		b.Fatal(err)
	}
	var ns schema.NewSessionResponse
	if err := json.Unmarshal(res, &ns); err != nil {
		b.Fatal(err)
	}
	return c, ns.SessionID
}

func (c *benchRawClient) readLoop() {
	defer close(c.readDone)
	br := bufio.NewReaderSize(c.pp.fromAgent, 1<<16)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a line longer than the buffer
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return // EOF once the agent has closed its end
		}
		read := c.read.Add(int64(len(line)))
		line = line[:len(line)-1]
		if c.onLine != nil && c.onLine(line, read) {
			continue
		}
		m, err := jsonrpc.ReadMessage(line)
		if err != nil {
			c.mu.Lock()
			c.bad = fmt.Errorf("not JSON-RPC from the agent: %v: %s", err, line)
			c.mu.Unlock()
			continue
		}
		if m.Kind != jsonrpc.KindResponse {
			continue // notifications the benchmark does not look at
		}
		c.mu.Lock()
		ch := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// send writes a request and returns the channel of its response.
func (c *benchRawClient) send(method string, params any) (<-chan *jsonrpc.Message, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	line, err := jsonrpc.EncodeMessage(&jsonrpc.Message{Kind: jsonrpc.KindRequest, ID: json.RawMessage(id), Method: method, Params: raw})
	if err != nil {
		return nil, err
	}
	ch := make(chan *jsonrpc.Message, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	if _, err := c.pp.toAgent.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	return ch, nil
}

// wait waits for a response and returns its result.
func (c *benchRawClient) wait(method string, ch <-chan *jsonrpc.Message) (json.RawMessage, error) {
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	case <-c.readDone:
		return nil, fmt.Errorf("%s: the connection ended", method)
	case <-time.After(benchWait):
		return nil, fmt.Errorf("%s: no response within %v", method, benchWait)
	}
}

func (c *benchRawClient) call(method string, params any) (json.RawMessage, error) {
	ch, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	return c.wait(method, ch)
}

// prompt sends a text prompt and waits for its response; it fails the
// benchmark unless the turn ended normally.
func (c *benchRawClient) prompt(sid, text string) {
	c.b.Helper()
	res, err := c.call("session/prompt", schema.PromptRequest{SessionID: sid, Prompt: []schema.ContentBlock{schema.TextBlock(text)}})
	if err != nil {
		c.b.Fatal(err)
	}
	var pr schema.PromptResponse
	if err := json.Unmarshal(res, &pr); err != nil || pr.StopReason != schema.StopEndTurn {
		c.b.Fatalf("prompt %q: %s (%v)", text, res, err)
	}
}

// benchCountingReader counts the bytes the Go client reads from the agent. It is
// a Closer, so that the client's connection can unblock it on Close.
type benchCountingReader struct {
	f *os.File
	n atomic.Int64
}

func (r *benchCountingReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (r *benchCountingReader) Close() error { return r.f.Close() }

// startBenchClient serves prov over pipes and connects the Go client to it
// (acp.Dial, with the compaction capability) through cr, which counts the
// bytes from the agent. It opens one remote session and subscribes to its
// events, handed to onEvent on a goroutine of the benchmark. The cleanup
// closes the client and waits for the agent and that goroutine.
func startBenchClient(b *testing.B, prov provider.Provider, cr *benchCountingReader, onEvent func(session.Event)) *acp.RemoteSession {
	b.Helper()
	pp := newBenchPipes(b)
	served := benchServe(pp, prov)
	cr.f = pp.fromAgent
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	c, err := acp.Dial(ctx, cr, pp.toAgent, acp.ClientOptions{})
	if err != nil {
		_ = pp.toAgent.Close()
		_ = pp.fromAgent.Close()
		benchWaitServed(b, served)
		b.Fatal(err)
	}
	drained := make(chan struct{})
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Error(err)
		}
		benchWaitServed(b, served)
		select {
		case <-drained:
		case <-time.After(benchWait):
			b.Error("the subscription did not end")
		}
	})
	rs, err := c.NewSession(ctx, "/project")
	if err != nil {
		close(drained)
		b.Fatal(err)
	}
	// The buffer holds a whole turn's deltas, so that a late scheduling of
	// the drain below never ends the subscription as a slow subscriber.
	sub, err := rs.Subscribe(context.Background(), session.SubscribeOptions{Buffer: 4 * throughputDeltas})
	if err != nil {
		close(drained)
		b.Fatal(err)
	}
	go func() {
		defer close(drained)
		for ev := range sub.Events() {
			onEvent(ev)
		}
		if err := sub.Err(); err != nil && !errors.Is(err, session.ErrClosed) && !errors.Is(err, acp.ErrConnection) {
			b.Errorf("subscription ended: %v", err)
		}
	}()
	return rs
}

func benchWaitHandle[R any](b *testing.B, h *session.Handle[R]) R {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	r, err := h.Wait(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchThroughput accumulates the measured windows of
// BenchmarkNotificationThroughput: from just before the prompt request is
// written to the receipt of the turn's last agent_message_chunk.
type benchThroughput struct {
	notes   int
	bytes   int64
	elapsed time.Duration
}

func (t *benchThroughput) report(b *testing.B) {
	if t.elapsed <= 0 {
		return
	}
	s := t.elapsed.Seconds()
	b.ReportMetric(float64(t.notes)/s, "notifications/s")
	b.ReportMetric(float64(t.bytes)/s, "wire-bytes/s")
	b.ReportMetric(float64(t.bytes)/float64(t.notes), "bytes/notification")
}

// benchTurnWindow is the state of one measured turn, shared with the goroutine
// that reads the agent's output.
type benchTurnWindow struct {
	mu        sync.Mutex
	want, got int
	start     int64 // bytes read when the window opened
	bytes     int64
	at        time.Time
	done      chan struct{}
}

func (w *benchTurnWindow) open(want int, start int64) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want, w.got, w.start, w.done = want, 0, start, make(chan struct{})
	return w.done
}

// chunk records one agent_message_chunk; read is the byte count so far.
func (w *benchTurnWindow) chunk(read int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got++
	if w.got == w.want {
		w.at = time.Now()
		w.bytes = read - w.start
		close(w.done)
	}
}

func (w *benchTurnWindow) result() (time.Time, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at, w.bytes
}

// BenchmarkNotificationThroughput measures session/update notifications per
// second from the agent to a client over a pipe: each iteration is one turn
// whose provider streams throughputDeltas deltas of 8 bytes at once (so the
// provider is never the bottleneck), which the agent sends as that many
// agent_message_chunk notifications. Measured from just before the
// session/prompt request is written to the receipt of the last chunk; the
// prompt response that follows ends the iteration (ns/op includes it).
//
// raw: the client frames each line and recognizes a chunk by its
// discriminator bytes, without decoding it: the figure is the agent's and
// the pipe's. wire-bytes/s counts every byte read in the window.
//
// client: the Go client (acp.Dial, RemoteSession.Prompt, a Subscribe
// counting DeltaEvents): the figure includes its JSON-RPC dispatch, the
// decoding of every update and the RemoteSession's reduction. wire-bytes/s
// is the count read when the last DeltaEvent arrives; the client reads
// ahead, so it may include a few lines after the last chunk.
func BenchmarkNotificationThroughput(b *testing.B) {
	chunkKey := []byte(`"sessionUpdate":"agent_message_chunk"`)
	b.Run("raw", func(b *testing.B) {
		var win benchTurnWindow
		c, sid := startBenchRaw(b, newBenchStreamProvider(throughputDeltas), func(line []byte, read int64) bool {
			if !bytes.Contains(line, chunkKey) {
				return false
			}
			win.chunk(read)
			return true
		})
		var tp benchThroughput
		for i := range b.N {
			done := win.open(throughputDeltas, c.read.Load())
			start := time.Now()
			ch, err := c.send("session/prompt", schema.PromptRequest{SessionID: sid, Prompt: []schema.ContentBlock{schema.TextBlock(fmt.Sprintf("turn %d", i))}})
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(benchWait):
				b.Fatalf("turn %d: not every agent_message_chunk arrived", i)
			}
			if _, err := c.wait("session/prompt", ch); err != nil {
				b.Fatal(err)
			}
			at, n := win.result()
			tp.notes += throughputDeltas
			tp.bytes += n
			tp.elapsed += at.Sub(start)
		}
		tp.report(b)
	})
	b.Run("client", func(b *testing.B) {
		var win benchTurnWindow
		cr := &benchCountingReader{}
		rs := startBenchClient(b, newBenchStreamProvider(throughputDeltas), cr, func(ev session.Event) {
			if _, ok := ev.Payload.(*session.DeltaEvent); ok {
				win.chunk(cr.n.Load())
			}
		})
		var tp benchThroughput
		for i := range b.N {
			done := win.open(throughputDeltas, cr.n.Load())
			start := time.Now()
			h, err := rs.Prompt(context.Background(), session.PromptRequest{Text: fmt.Sprintf("turn %d", i)})
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(benchWait):
				b.Fatalf("turn %d: not every DeltaEvent arrived", i)
			}
			if res := benchWaitHandle(b, h); res.Err != nil {
				b.Fatal(res.Err)
			}
			at, n := win.result()
			tp.notes += throughputDeltas
			tp.bytes += n
			tp.elapsed += at.Sub(start)
		}
		tp.report(b)
	})
}

// BenchmarkSummaryChunkLatency measures the latency from a summary delta
// (the provider's timestamp just before it calls onDelta) to the client's
// receipt of the matching compaction_summary_chunk. Each iteration is one
// prompt turn (untimed: the compaction needs two messages to archive) and
// one manual compaction whose summary streams latencyChunks deltas in lock
// step with the client (see benchPacedProvider): latency, not queueing. It
// reports the median, p99 and maximum over every chunk of every iteration;
// ns/op is the time of one whole compaction (latencyChunks round trips).
//
// raw: the compaction is a /compact prompt (answered after every update of
// the compaction); the client decodes every line (jsonrpc.ReadMessage, then
// the params as an schema.SessionNotification) and takes its timestamp right
// after decoding a chunk.
//
// client: the compaction is RemoteSession.Compact (the _sessionkit/compact
// extension; its Handle finishes on compact_finished); the timestamp is
// taken when the PhaseDelta CompactionEvent comes out of Subscribe, so the
// figure includes the Go client's dispatch and RemoteSession's reduction.
func BenchmarkSummaryChunkLatency(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		prov := newBenchPacedProvider(latencyChunks)
		c, sid := startBenchRaw(b, prov, func(line []byte, _ int64) bool {
			m, err := jsonrpc.ReadMessage(line)
			if err != nil || m.Method != schema.MethodSessionUpdate {
				return false
			}
			var n schema.SessionNotification
			if err := json.Unmarshal(m.Params, &n); err != nil {
				return false
			}
			at := time.Now()
			if u, ok := n.Update.(*schema.CompactionSummaryChunk); ok && u.Content.Text != nil {
				prov.ack(u.Content.Text.Text, at)
			}
			return true
		})
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			c.prompt(sid, fmt.Sprintf("message %d", i))
			before := prov.count()
			b.StartTimer()
			c.prompt(sid, "/compact")
			if got := prov.count() - before; got != latencyChunks {
				b.Fatalf("compaction %d: %d chunks received, want %d", i, got, latencyChunks)
			}
		}
		b.StopTimer()
		prov.reportLatency(b)
	})
	b.Run("client", func(b *testing.B) {
		prov := newBenchPacedProvider(latencyChunks)
		rs := startBenchClient(b, prov, &benchCountingReader{}, func(ev session.Event) {
			if e, ok := ev.Payload.(*session.CompactionEvent); ok && e.Phase == session.PhaseDelta {
				prov.ack(e.Delta, time.Now())
			}
		})
		ctx := context.Background()
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			h, err := rs.Prompt(ctx, session.PromptRequest{Text: fmt.Sprintf("message %d", i)})
			if err != nil {
				b.Fatal(err)
			}
			if res := benchWaitHandle(b, h); res.Err != nil {
				b.Fatal(res.Err)
			}
			before := prov.count()
			b.StartTimer()
			ch, err := rs.Compact(ctx, session.CompactRequest{})
			if err != nil {
				b.Fatal(err)
			}
			if res := benchWaitHandle(b, ch); !res.Compacted {
				b.Fatalf("compaction %d: %+v", i, res)
			}
			if got := prov.count() - before; got != latencyChunks {
				b.Fatalf("compaction %d: %d chunks received, want %d", i, got, latencyChunks)
			}
		}
		b.StopTimer()
		prov.reportLatency(b)
	})
}
