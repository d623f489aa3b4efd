package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey is the API key of every test provider; no error may show it.
const testKey = "sk-test-SECRET-0123456789"

// recorded is one request the fake server received.
type recorded struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// fake is an httptest server speaking the Chat Completions wire format
// through scripted handlers: request n gets handlers[n], the last one
// repeating.
type fake struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []recorded
	handlers []http.HandlerFunc
}

func newFake(t *testing.T, handlers ...http.HandlerFunc) *fake {
	t.Helper()
	require.NotEmpty(t, handlers)
	f := &fake{t: t, handlers: handlers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, Body: body})
		h := f.handlers[min(n, len(f.handlers)-1)]
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// sleeps records the waits a provider asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newProvider returns a provider talking to f, with a recording sleep hook.
func newProvider(t *testing.T, f *fake, opts ...Option) (*Provider, *sleeps) {
	t.Helper()
	base := []Option{
		WithBaseURL(f.srv.URL + "/v1"),
		WithAPIKey(testKey),
		WithModel("test-model"),
		WithHTTPClient(f.srv.Client()),
		WithLogger(zaptest.NewLogger(t)),
	}
	p, err := New(append(base, opts...)...)
	require.NoError(t, err)
	s := &sleeps{}
	p.sleep = s.sleep
	return p, s
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The wire format comes from openaitest.
var (
	chunk       = openaitest.Chunk
	roleChunk   = openaitest.RoleChunk
	textChunk   = openaitest.TextChunk
	finishChunk = openaitest.FinishChunk
	usageChunk  = openaitest.UsageChunk
	toolChunk   = openaitest.ToolChunk
	writeSSE    = openaitest.WriteSSE
)

// sse streams the chunks and then [DONE].
func sse(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, append(chunks, "[DONE]")...)
	}
}

// sseNoDone streams the chunks and ends the body cleanly without [DONE].
func sseNoDone(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeSSE(w, chunks...) }
}

// completion returns a non-streaming chat.completion body.
func completion(content string, toolCalls []map[string]any, in, out int) string {
	msg := map[string]any{"role": "assistant", "content": content}
	finish := "stop"
	if len(toolCalls) > 0 {
		msg["tool_calls"] = toolCalls
		finish = "tool_calls"
	}
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// respond writes a body with a status, content type and extra headers.
func respond(status int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func apiError(status int, message, typ, code string, headers ...string) http.HandlerFunc {
	body := mustJSON(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}})
	return respond(status, "application/json", body, headers...)
}

// reply answers "text" with usage 11/7, streamed or not as requested.
func reply(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			sse(roleChunk(), textChunk(text), finishChunk("stop"), usageChunk(11, 7))(w, r)
			return
		}
		respond(http.StatusOK, "application/json", completion(text, nil, 11, 7))(w, r)
	}
}

// reset aborts the connection with a TCP RST, after flushing what was
// written.
func reset(w http.ResponseWriter) {
	if fl, ok := w.(http.Flusher); ok && w.Header().Get("Content-Type") != "" {
		fl.Flush()
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// collector gathers deltas.
type collector struct {
	mu     sync.Mutex
	deltas []string
}

func (c *collector) add(s string) {
	c.mu.Lock()
	c.deltas = append(c.deltas, s)
	c.mu.Unlock()
}

func (c *collector) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.deltas, "")
}

func (c *collector) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.deltas...)
}
