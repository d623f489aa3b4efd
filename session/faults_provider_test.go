package session_test

// Provider faults (issue "Reliability", item 2): a session.Session above a
// real HTTP provider, which talks to an httptest server speaking its wire
// format. Every test runs on each wire of faultWires: provider/openai (Chat
// Completions: streamed SSE, final usage chunk) and provider/anthropic
// (Messages API: message_start ... message_stop events). Each test names the
// fault and checks its defined outcome: the turn error or compact_failed,
// history unchanged where docs/design.md promises it (memory equal to the store,
// Active compared before and after), and the Handle finished. Ordering uses
// gates and channels only.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/session"
)

// chatRequest is what the server decoded of one request.
type chatRequest struct {
	Purpose string // "turn" or "summary" (its system prompt is the summarizer's)
	Stream  bool
}

// chatServer is an httptest server speaking a wire format through a script:
// request n gets script[n], the last repeating; with no script it never
// answers. A request its wire's decode refuses gets 400.
type chatServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []chatRequest
	script  []http.HandlerFunc
	arrived chan string   // the purpose of every request, as it arrives
	release chan struct{} // closed when the test ends: hanging handlers return
}

func newChatServer(t *testing.T, w *faultWire, script ...http.HandlerFunc) *chatServer {
	t.Helper()
	cs := &chatServer{t: t, script: script, arrived: make(chan string, 100), release: make(chan struct{})}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		req, ok := w.decode(r, raw)
		if !ok {
			http.Error(rw, "bad request", http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		n := len(cs.reqs)
		cs.reqs = append(cs.reqs, req)
		h := cs.hang
		if len(cs.script) > 0 {
			h = cs.script[min(n, len(cs.script)-1)]
		}
		cs.mu.Unlock()
		select {
		case cs.arrived <- req.Purpose:
		default:
		}
		r.Body = io.NopCloser(bytes.NewReader(raw)) // for a handler that reads it again
		h(rw, r)
	}))
	t.Cleanup(cs.srv.Close)
	t.Cleanup(func() { close(cs.release) }) // runs before srv.Close
	return cs
}

// setScript replaces the script and forgets the requests so far.
func (cs *chatServer) setScript(script ...http.HandlerFunc) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.script = script
	cs.reqs = nil
}

func (cs *chatServer) requests() []chatRequest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]chatRequest(nil), cs.reqs...)
}

func (cs *chatServer) purposes() []string {
	var out []string
	for _, r := range cs.requests() {
		out = append(out, r.Purpose)
	}
	return out
}

// waitArrived waits until a request of purpose has reached the server.
func (cs *chatServer) waitArrived(t *testing.T, purpose string) {
	t.Helper()
	ctx := ctxT(t)
	for {
		select {
		case p := <-cs.arrived:
			if p == purpose {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s request reached the server", purpose)
		}
	}
}

// hang never answers: it returns when the client goes away or the test ends.
func (cs *chatServer) hang(_ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-cs.release:
	}
}

// wireOptions are what a fault test sets on a provider; zero values keep
// the suite's defaults (the server's client, two retries, a millisecond
// backoff, a test logger).
type wireOptions struct {
	client     *http.Client
	maxRetries int // 0 = 2
	backoff    time.Duration
	logger     *zap.Logger
}

func (o wireOptions) with(t *testing.T, cs *chatServer) wireOptions {
	if o.client == nil {
		o.client = cs.srv.Client()
	}
	if o.maxRetries == 0 {
		o.maxRetries = 2
	}
	if o.backoff == 0 {
		o.backoff = time.Millisecond
	}
	if o.logger == nil {
		o.logger = zaptest.NewLogger(t)
	}
	return o
}

// faultErr is what the fault tests read of a provider's error.
type faultErr struct {
	StatusCode int
	Retries    int
	Retryable  bool
}

// faultWire is one provider and its wire format.
type faultWire struct {
	name string
	// decode reads one request; false means the server answers 400.
	decode func(r *http.Request, raw []byte) (chatRequest, bool)
	// newProvider returns the real provider talking to cs.
	newProvider func(t *testing.T, cs *chatServer, o wireOptions) provider.Provider
	// text is a complete streamed answer made of the deltas.
	text func(deltas ...string) http.HandlerFunc
	// deltas streams the start of an answer, the deltas, and returns
	// without ending it.
	deltas func(deltas ...string) http.HandlerFunc
	// httpError answers status with the wire's error object and the given
	// header name/value pairs.
	httpError func(status int, headers ...string) http.HandlerFunc
	// asErr finds the provider's error in err.
	asErr func(err error) (faultErr, bool)
	// serverErrors are the statuses retried before an answer (each a
	// sequence of failures).
	serverErrors [][]int
	// malformed streams a data line that is not JSON, before and after
	// text deltas.
	malformed map[string]http.HandlerFunc
	// truncated are streams that end early; requests is how many attempts
	// each gets (one once a delta was delivered, all three without).
	truncated []truncation
	// truncatedText is in the error of a truncated stream.
	truncatedText string
}

type truncation struct {
	name     string
	handler  http.HandlerFunc
	requests int
}

// errOf returns the provider's error that err holds.
func (w *faultWire) errOf(t *testing.T, err error) faultErr {
	t.Helper()
	require.Error(t, err)
	e, ok := w.asErr(err)
	require.True(t, ok, "not a %s error: %T %v", w.name, err, err)
	return e
}

// faultWires are the wires every fault test runs on.
var faultWires = []*faultWire{openAIWire(), anthropicWire()}

// forEachWire runs f as a subtest per wire.
func forEachWire(t *testing.T, f func(t *testing.T, w *faultWire)) {
	for _, w := range faultWires {
		t.Run(w.name, func(t *testing.T) { f(t, w) })
	}
}

// newWireSession opens session seededID (two exchanges) above w's provider
// talking to a new server with the script.
func newWireSession(t *testing.T, w *faultWire, o wireOptions, script ...http.HandlerFunc) (*chatServer, *session.Session) {
	t.Helper()
	cs := newChatServer(t, w, script...)
	return cs, openSeeded(t, w.newProvider(t, cs, o.with(t, cs)))
}

// The OpenAI wire: Chat Completions.

func openAIWire() *faultWire {
	return &faultWire{
		name: "openai",
		decode: func(r *http.Request, raw []byte) (chatRequest, bool) {
			var body struct {
				Stream   bool `json:"stream"`
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(raw, &body); err != nil || r.URL.Path != "/v1/chat/completions" {
				return chatRequest{}, false
			}
			req := chatRequest{Purpose: "turn", Stream: body.Stream}
			if len(body.Messages) > 0 && body.Messages[0].Role == "system" && body.Messages[0].Content == compact.SystemPrompt() {
				req.Purpose = "summary"
			}
			return req, true
		},
		newProvider: func(t *testing.T, cs *chatServer, o wireOptions) provider.Provider {
			p, err := openai.New(
				openai.WithBaseURL(cs.srv.URL+"/v1"),
				openai.WithModel("test-model"),
				openai.WithAPIKey("sk-faults"),
				openai.WithHTTPClient(o.client),
				openai.WithMaxRetries(o.maxRetries),
				openai.WithBackoff(o.backoff, 2*o.backoff),
				openai.WithLogger(o.logger),
			)
			require.NoError(t, err)
			return p
		},
		text: func(deltas ...string) http.HandlerFunc {
			return streamLines(append(openAIDeltas(deltas), openaitest.FinishChunk("stop"), openaitest.UsageChunk(11, 7), "[DONE]")...)
		},
		deltas: func(deltas ...string) http.HandlerFunc { return streamLines(openAIDeltas(deltas)...) },
		httpError: func(status int, headers ...string) http.HandlerFunc {
			body := mustWireJSON(map[string]any{"error": map[string]any{"message": http.StatusText(status), "type": "server_error", "param": nil, "code": nil}})
			return func(w http.ResponseWriter, _ *http.Request) {
				for i := 0; i+1 < len(headers); i += 2 {
					w.Header().Set(headers[i], headers[i+1])
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, body)
			}
		},
		asErr: func(err error) (faultErr, bool) {
			if e := (*openai.Error)(nil); errors.As(err, &e) {
				return faultErr{StatusCode: e.StatusCode, Retries: e.Retries, Retryable: e.Retryable}, true
			}
			return faultErr{}, false
		},
		serverErrors: [][]int{{500}, {503}, {500, 503}},
		malformed: map[string]http.HandlerFunc{
			"before deltas": streamLines(`{not json}`, "[DONE]"),
			"after deltas":  streamLines(openaitest.RoleChunk(), openaitest.TextChunk("so far so good"), `{"id":"x","choices":[{"index":0,"delta":{"content":"br`, "[DONE]"),
		},
		truncated: []truncation{
			{"deltas then end of body", streamLines(openaitest.RoleChunk(), openaitest.TextChunk("I was about to")), 1},
			{"deltas, usage and [DONE]", streamLines(openaitest.RoleChunk(), openaitest.TextChunk("I was about to"), openaitest.UsageChunk(3, 3), "[DONE]"), 1},
			{"no delta, every attempt", streamLines(openaitest.RoleChunk()), 3},
		},
		truncatedText: "stream ended before the response was complete (no finish_reason)",
	}
}

// openAIDeltas is the start of an answer: the role chunk and a chunk per
// delta.
func openAIDeltas(deltas []string) []string {
	lines := []string{openaitest.RoleChunk()}
	for _, d := range deltas {
		lines = append(lines, openaitest.TextChunk(d))
	}
	return lines
}

func mustWireJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// streamLines streams the data lines as they are (no [DONE] unless given).
func streamLines(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { openaitest.WriteSSE(w, lines...) }
}

// resetConn aborts the connection with a TCP RST.
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// Session side.

const seededID = "faults"

// seeded returns a memstore holding session seededID with n exchanges
// (2n user and assistant messages).
func seeded(t *testing.T, n int) *memstore.Store {
	t.Helper()
	store := memstore.New()
	seedStore(t, store, seededID, n)
	return store
}

func seedStore(t *testing.T, store history.Store, id string, n int) {
	t.Helper()
	snap, err := store.Create(ctxT(t), history.NewSession{ID: id})
	require.NoError(t, err)
	msgs := make([]history.Message, 0, 2*n)
	for i := range n {
		msgs = append(msgs,
			history.Message{ID: fmt.Sprintf("seed-u%d", i), Role: history.RoleUser, Text: fmt.Sprintf("question %d", i), CreatedAt: time.Now()},
			history.Message{ID: fmt.Sprintf("seed-a%d", i), Role: history.RoleAssistant, Text: fmt.Sprintf("answer %d", i), CreatedAt: time.Now()},
		)
	}
	if len(msgs) > 0 {
		_, err = store.Append(ctxT(t), id, snap.Version, msgs)
		require.NoError(t, err)
	}
}

// openSeeded opens session seededID (two exchanges) above p.
func openSeeded(t *testing.T, p provider.Provider) *session.Session {
	t.Helper()
	return newSession(t, p, session.Config{ID: seededID, Store: seeded(t, 2)})
}

func activeTexts(t *testing.T, s *session.Session) []string {
	t.Helper()
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	return texts(active)
}

func storedTexts(t *testing.T, s *session.Session) []string {
	t.Helper()
	snap, err := s.Store().Load(ctxT(t), s.ID())
	require.NoError(t, err)
	return texts(snap.Active)
}

func plus(a []string, more ...string) []string {
	return append(append([]string(nil), a...), more...)
}

// assertTurnFailedKeepingPrompt checks the outcome every failed turn step
// promises: the Handle finished with an error, the user message was kept,
// no assistant message was committed or published, and memory equals the
// store.
func assertTurnFailedKeepingPrompt(t *testing.T, s *session.Session, rec *recorder, res session.TurnResult, before []string, prompt string) {
	t.Helper()
	require.Error(t, res.Err)
	assert.Equal(t, []string{"user:" + prompt}, texts(res.Messages), "the turn appended its user message only")
	assert.Equal(t, plus(before, "user:"+prompt), activeTexts(t, s))
	sameAsStore(t, s)
	evs := rec.until(t, func(evs []session.Event) bool { return turnFinished(evs) })
	for _, ev := range evs {
		if m, ok := ev.Payload.(*session.MessageEvent); ok {
			assert.NotEqual(t, history.RoleAssistant, m.Message.Role, "no partial assistant message is committed")
		}
	}
}

func turnFinished(evs []session.Event) bool {
	for _, ev := range evs {
		if te, ok := ev.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
			return true
		}
	}
	return false
}

func deltas(evs []session.Event) []string {
	var out []string
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *session.DeltaEvent:
			out = append(out, p.Text)
		case *session.CompactionEvent:
			if p.Phase == session.PhaseDelta {
				out = append(out, p.Delta)
			}
		}
	}
	return out
}

// assertCompactFailedUnchanged checks compact_failed before the commit:
// nothing committed, no action, no summary, no segment, memory equals the
// store.
func assertCompactFailedUnchanged(t *testing.T, s *session.Session, rec *recorder, h *session.Handle[session.CompactResult], res session.CompactResult, before []string) {
	t.Helper()
	assert.Equal(t, h.ID(), res.CompactID)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.False(t, res.Success)
	assert.False(t, res.Compacted)
	assert.NotEmpty(t, res.Error)
	assert.Nil(t, res.Segment)
	assert.Equal(t, before, activeTexts(t, s), "Active unchanged")
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, sum, "no fallback summary")
	sameAsStore(t, s)
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, segs)
	if rec != nil {
		evs := rec.until(t, func(evs []session.Event) bool {
			p := phases(evs, h.ID())
			return len(p) > 0 && p[len(p)-1] == session.PhaseFinished
		})
		assert.Empty(t, actions(evs), "the canonical commit never started")
		assert.NotContains(t, phases(evs, h.ID()), session.PhaseCommitting)
	}
}

// lastCompaction returns the store's last compaction record.
func lastCompaction(t *testing.T, s *session.Session) *history.CompactionRecord {
	t.Helper()
	tl, err := s.Store().Timeline(ctxT(t), s.ID())
	require.NoError(t, err)
	for i := len(tl) - 1; i >= 0; i-- {
		if tl[i].Compaction != nil {
			return tl[i].Compaction
		}
	}
	t.Fatal("no compaction record")
	return nil
}

// TestProviderFault_TurnNeverAnswered: a server that never answers. The
// turn ends when its Handle is cancelled (ErrCancelled) or when the session
// closes (ErrClosed); the user message stays, nothing else is committed.
func TestProviderFault_TurnNeverAnswered(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		for _, how := range []string{"cancel", "close"} {
			t.Run(how, func(t *testing.T) {
				cs, s := newWireSession(t, w, wireOptions{}) // never answers
				before := activeTexts(t, s)
				h := mustPrompt(t, s, "hello?")
				cs.waitArrived(t, "turn")
				assert.Nil(t, h.Result(), "pending while the server is silent")
				if how == "cancel" {
					rec := record(t, s)
					h.Cancel()
					res := wait(t, h)
					assert.ErrorIs(t, res.Err, session.ErrCancelled)
					assertTurnFailedKeepingPrompt(t, s, rec, res, before, "hello?")
				} else {
					require.NoError(t, s.Close())
					res := h.Result()
					require.NotNil(t, res, "Close finishes the turn's Handle")
					assert.ErrorIs(t, res.Err, session.ErrClosed)
					assert.Equal(t, plus(before, "user:hello?"), storedTexts(t, s))
				}
				assert.Len(t, cs.requests(), 1, "a cancellation is not retried")
			})
		}
	})
}

// TestProviderFault_RequestTimeout: a per-request timeout of the
// http.Client. Each attempt times out, is retried, and the turn (or the
// summary) fails once the retries are spent.
func TestProviderFault_RequestTimeout(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		setup := func(t *testing.T) (*chatServer, *session.Session) {
			cs := newChatServer(t, w) // never answers
			client := &http.Client{Timeout: 50 * time.Millisecond, Transport: cs.srv.Client().Transport}
			return cs, openSeeded(t, w.newProvider(t, cs, wireOptions{client: client, maxRetries: 1}.with(t, cs)))
		}
		// An attempt may time out before its request reaches the handler, so
		// the server sees one or two of them.
		assertAttempts := func(t *testing.T, cs *chatServer, purpose string) {
			got := cs.purposes()
			assert.NotEmpty(t, got)
			assert.LessOrEqual(t, len(got), 2)
			for _, p := range got {
				assert.Equal(t, purpose, p)
			}
		}
		checkErr := func(t *testing.T, err error) {
			e := w.errOf(t, err)
			assert.True(t, e.Retryable)
			assert.Equal(t, 1, e.Retries)
			assert.Zero(t, e.StatusCode)
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			assert.True(t, ne.Timeout(), "a client timeout: %v", err)
		}
		t.Run("turn", func(t *testing.T) {
			cs, s := setup(t)
			before := activeTexts(t, s)
			rec := record(t, s)
			res := wait(t, mustPrompt(t, s, "slow"))
			checkErr(t, res.Err)
			assertTurnFailedKeepingPrompt(t, s, rec, res, before, "slow")
			assertAttempts(t, cs, "turn")
		})
		t.Run("summary", func(t *testing.T) {
			cs, s := setup(t)
			before := activeTexts(t, s)
			rec := record(t, s)
			h := mustCompact(t, s, "")
			res := wait(t, h)
			assertCompactFailedUnchanged(t, s, rec, h, res, before)
			assert.False(t, res.Cancelled, "a timeout is a failure, not a cancellation")
			assert.Regexp(t, `Client\.Timeout|deadline exceeded`, res.Error)
			assert.Contains(t, res.Error, "(after 1 retry)")
			assertAttempts(t, cs, "summary")
			assert.Equal(t, history.StatusFailed, lastCompaction(t, s).Status)
		})
	})
}

// TestProviderFault_ResetMidStream: the connection is reset after deltas
// reached the timeline. The provider does not retry once text was
// delivered; the turn fails, its user message stays, and no partial
// assistant message is committed. A summary cut the same way gives
// compact_failed with history unchanged.
func TestProviderFault_ResetMidStream(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		partial := func(gate <-chan struct{}) http.HandlerFunc {
			return func(rw http.ResponseWriter, r *http.Request) {
				w.deltas("partial ", "answer")(rw, r)
				select { // reset only once the deltas are on the timeline
				case <-gate:
				case <-r.Context().Done():
				}
				resetConn(rw)
			}
		}
		t.Run("turn", func(t *testing.T) {
			gate := make(chan struct{})
			cs, s := newWireSession(t, w, wireOptions{}, partial(gate), w.text("must not be reached"))
			before := activeTexts(t, s)
			rec := record(t, s)
			h := mustPrompt(t, s, "tell me")
			rec.until(t, func(evs []session.Event) bool { return len(deltas(evs)) == 2 })
			close(gate)
			res := wait(t, h)
			e := w.errOf(t, res.Err)
			assert.True(t, e.Retryable, "a reset is transient")
			assert.Zero(t, e.Retries, "not retried after deltas were delivered")
			assertTurnFailedKeepingPrompt(t, s, rec, res, before, "tell me")
			assert.Equal(t, []string{"partial ", "answer"}, deltas(rec.all()))
			assert.Len(t, cs.requests(), 1)

			// The next turn works and sees no trace of the partial answer.
			cs.setScript(w.text("whole answer"))
			require.NoError(t, wait(t, mustPrompt(t, s, "again")).Err)
			assert.Equal(t, plus(before, "user:tell me", "user:again", "assistant:whole answer"), activeTexts(t, s))
			sameAsStore(t, s)
		})
		t.Run("summary", func(t *testing.T) {
			gate := make(chan struct{})
			cs, s := newWireSession(t, w, wireOptions{}, partial(gate), w.text("must not be reached"))
			before := activeTexts(t, s)
			rec := record(t, s)
			h := mustCompact(t, s, "")
			rec.until(t, func(evs []session.Event) bool { return len(deltas(evs)) == 2 })
			close(gate)
			res := wait(t, h)
			assertCompactFailedUnchanged(t, s, rec, h, res, before)
			assert.False(t, res.Cancelled)
			assert.Len(t, cs.requests(), 1)
		})
	})
}

// TestProviderFault_RateLimitedThenSuccess: 429 with Retry-After, then a
// good answer. The provider waits what Retry-After asks (0 s here; the
// backoff is an hour, so only Retry-After can make the test finish) and the
// turn succeeds after one retry.
func TestProviderFault_RateLimitedThenSuccess(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		core, logs := observer.New(zapcore.DebugLevel)
		cs, s := newWireSession(t, w, wireOptions{backoff: time.Hour, logger: zap.New(core)},
			w.httpError(http.StatusTooManyRequests, "Retry-After", "0"), w.text("fine ", "now"))
		before := activeTexts(t, s)
		res := wait(t, mustPrompt(t, s, "busy?"))
		require.NoError(t, res.Err)
		assert.Equal(t, plus(before, "user:busy?", "assistant:fine now"), activeTexts(t, s))
		sameAsStore(t, s)
		assert.Equal(t, []string{"turn", "turn"}, cs.purposes())
		retries := logs.FilterMessage("retrying request").All()
		require.Len(t, retries, 1, "one retry observed")
		assert.Equal(t, time.Duration(0), retries[0].ContextMap()["wait"], "the Retry-After wait")
		assert.Contains(t, retries[0].ContextMap()["error"], "429")
	})
}

// TestProviderFault_ServerErrorThenSuccess: 5xx answers (500 and 503, and
// Anthropic's 529 overloaded; without Retry-After: backoff) are retried;
// the turn succeeds.
func TestProviderFault_ServerErrorThenSuccess(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		for _, first := range w.serverErrors {
			t.Run(fmt.Sprint(first), func(t *testing.T) {
				var script []http.HandlerFunc
				for _, st := range first {
					script = append(script, w.httpError(st))
				}
				cs, s := newWireSession(t, w, wireOptions{}, append(script, w.text("recovered"))...)
				before := activeTexts(t, s)
				res := wait(t, mustPrompt(t, s, "try"))
				require.NoError(t, res.Err)
				assert.Equal(t, plus(before, "user:try", "assistant:recovered"), activeTexts(t, s))
				sameAsStore(t, s)
				assert.Len(t, cs.requests(), len(first)+1)
			})
		}
	})
}

// TestProviderFault_ServerErrorForever: 500 on every attempt. The turn fails
// after the retries with the server's status; history holds the user
// message only. A summary that meets the same gives compact_failed.
func TestProviderFault_ServerErrorForever(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		t.Run("turn", func(t *testing.T) {
			cs, s := newWireSession(t, w, wireOptions{}, w.httpError(http.StatusInternalServerError))
			before := activeTexts(t, s)
			rec := record(t, s)
			res := wait(t, mustPrompt(t, s, "anyone?"))
			e := w.errOf(t, res.Err)
			assert.Equal(t, http.StatusInternalServerError, e.StatusCode)
			assert.Equal(t, 2, e.Retries)
			assert.True(t, e.Retryable)
			assertTurnFailedKeepingPrompt(t, s, rec, res, before, "anyone?")
			assert.Len(t, cs.requests(), 3, "one attempt and two retries")
		})
		t.Run("summary", func(t *testing.T) {
			cs, s := newWireSession(t, w, wireOptions{}, w.httpError(http.StatusInternalServerError))
			before := activeTexts(t, s)
			rec := record(t, s)
			h := mustCompact(t, s, "")
			res := wait(t, h)
			assertCompactFailedUnchanged(t, s, rec, h, res, before)
			assert.Contains(t, res.Error, "HTTP 500")
			assert.Len(t, cs.requests(), 3)
		})
	})
}

// TestProviderFault_MalformedSSE: a data line that is not JSON, before or
// after text deltas. Not transient: no retry; the turn fails.
func TestProviderFault_MalformedSSE(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		for name, bad := range w.malformed {
			t.Run(name, func(t *testing.T) {
				cs, s := newWireSession(t, w, wireOptions{}, bad, w.text("must not be reached"))
				before := activeTexts(t, s)
				rec := record(t, s)
				res := wait(t, mustPrompt(t, s, "parse this"))
				e := w.errOf(t, res.Err)
				assert.False(t, e.Retryable)
				var syn *json.SyntaxError
				assert.ErrorAs(t, res.Err, &syn)
				assertTurnFailedKeepingPrompt(t, s, rec, res, before, "parse this")
				assert.Len(t, cs.requests(), 1)
			})
		}
	})
}

// TestProviderFault_NoFinishReason: a stream that ends before it is
// complete (OpenAI: without a finish reason; Anthropic: without
// message_stop) is truncated: after text deltas the turn fails at once;
// before any delta the attempt is retried until the retries are spent.
func TestProviderFault_NoFinishReason(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		for _, tc := range w.truncated {
			t.Run(tc.name, func(t *testing.T) {
				cs, s := newWireSession(t, w, wireOptions{}, tc.handler)
				before := activeTexts(t, s)
				rec := record(t, s)
				res := wait(t, mustPrompt(t, s, "finish it"))
				e := w.errOf(t, res.Err)
				assert.True(t, e.Retryable, "truncation is transient")
				assert.Contains(t, res.Err.Error(), w.truncatedText)
				assertTurnFailedKeepingPrompt(t, s, rec, res, before, "finish it")
				assert.Len(t, cs.requests(), tc.requests)
			})
		}
	})
}

// TestProviderFault_EmptySummary: the summary call succeeds with no text,
// or white space only: compact_failed, history unchanged, no fallback
// summary, no running action.
func TestProviderFault_EmptySummary(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		cases := map[string]http.HandlerFunc{
			"no content":  w.text(),
			"white space": w.text(" \n", "\t "),
		}
		for name, h := range cases {
			t.Run(name, func(t *testing.T) {
				cs, s := newWireSession(t, w, wireOptions{}, h)
				before := activeTexts(t, s)
				rec := record(t, s)
				ch := mustCompact(t, s, "")
				res := wait(t, ch)
				assertCompactFailedUnchanged(t, s, rec, ch, res, before)
				assert.False(t, res.Cancelled)
				assert.Contains(t, res.Error, compact.ErrEmptySummary.Error())
				assert.Equal(t, []string{"summary"}, cs.purposes(), "exactly one summary call, not retried")
				assert.Equal(t, history.StatusFailed, lastCompaction(t, s).Status)
			})
		}
	})
}

// TestProviderFault_SummaryNeverAnswered: the summary call never returns.
// Handle.Cancel gives compact_failed with Cancelled and history unchanged;
// Session.Close during it finishes the Handle the same way.
func TestProviderFault_SummaryNeverAnswered(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		t.Run("cancel", func(t *testing.T) {
			cs, s := newWireSession(t, w, wireOptions{}) // never answers
			before := activeTexts(t, s)
			rec := record(t, s)
			h := mustCompact(t, s, "")
			cs.waitArrived(t, "summary")
			assert.Nil(t, h.Result())
			h.Cancel()
			res := wait(t, h)
			assertCompactFailedUnchanged(t, s, rec, h, res, before)
			assert.True(t, res.Cancelled)
			assert.Equal(t, session.ErrCancelled.Error(), res.Error)
			assert.Equal(t, history.StatusCancelled, lastCompaction(t, s).Status)
			assert.Len(t, cs.requests(), 1)

			// The session keeps working.
			cs.setScript(w.text("a summary"))
			res = wait(t, mustCompact(t, s, ""))
			assert.True(t, res.Compacted, res.Error)
			sameAsStore(t, s)
		})
		t.Run("close", func(t *testing.T) {
			cs, s := newWireSession(t, w, wireOptions{}) // never answers
			before := activeTexts(t, s)
			h := mustCompact(t, s, "")
			cs.waitArrived(t, "summary")
			require.NoError(t, s.Close())
			res := h.Result()
			require.NotNil(t, res, "Close finishes the Handle")
			assert.Equal(t, session.ReasonCompactFailed, res.Reason)
			assert.True(t, res.Cancelled)
			assert.Equal(t, session.ErrClosed.Error(), res.Error)
			snap, err := s.Store().Load(ctxT(t), s.ID())
			require.NoError(t, err)
			assert.Equal(t, before, texts(snap.Active), "history unchanged")
			assert.Empty(t, snap.Summary)
			assert.Empty(t, snap.Interrupted, "the cancellation was recorded")
			assert.Equal(t, history.StatusCancelled, lastCompaction(t, s).Status)
		})
	})
}
