package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/internal/poll"
)

const waitTimeout = 10 * time.Second

// newPair connects two Conns with two io.Pipes.
func newPair(t *testing.T, a, b Options) (*Conn, *Conn) {
	t.Helper()
	r1, w1 := io.Pipe()
	r2, w2 := io.Pipe()
	ca := NewConn(r1, w2, a)
	cb := NewConn(r2, w1, b)
	t.Cleanup(func() {
		ca.Close()
		cb.Close()
		_ = ca.Wait()
		_ = cb.Wait()
	})
	return ca, cb
}

// rawPeer drives a Conn with raw lines.
type rawPeer struct {
	t     *testing.T
	conn  *Conn
	in    *io.PipeWriter
	lines chan string
}

func newRaw(t *testing.T, opts Options) *rawPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	p := &rawPeer{t: t, conn: NewConn(inR, outW, opts), in: inW, lines: make(chan string)}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		defer close(p.lines)
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				p.lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.conn.Close()
		go func() {
			for range p.lines {
			}
		}()
		<-collected
		_ = p.conn.Wait()
	})
	return p
}

func (p *rawPeer) send(lines ...string) {
	p.t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(p.in, l)
		require.NoError(p.t, err)
	}
}

// next returns the next output line, decoded.
func (p *rawPeer) next() *Message {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(p.t, ok, "output closed")
		require.True(p.t, strings.HasSuffix(l, "\n"))
		require.NotContains(p.t, strings.TrimSuffix(l, "\n"), "\n")
		m, err := ReadMessage([]byte(strings.TrimSuffix(l, "\n")))
		require.NoError(p.t, err, "output line %q", l)
		return m
	case <-time.After(waitTimeout):
		p.t.Fatal("timed out waiting for output")
		return nil
	}
}

func echoHandler(ctx context.Context, req *Request) (any, error) {
	switch req.Method {
	case "echo":
		return req.Params, nil
	case "fail":
		return nil, &Error{Code: ResourceNotFound, Message: "session not found", Data: json.RawMessage(`{"sessionId":"s"}`)}
	case "params":
		var p newSessionParams
		if err := UnmarshalParams(req.Params, &p); err != nil {
			return nil, err
		}
		return p.Cwd, nil
	case "panic":
		panic("boom")
	case "cancelled":
		return nil, fmt.Errorf("stopping: %w", context.Canceled)
	case "plain":
		return nil, errors.New("disk full")
	case "unencodable":
		return func() {}, nil
	}
	return nil, MethodNotFoundError(req.Method)
}

func TestCallRoundTrip(t *testing.T) {
	a, _ := newPair(t, Options{}, Options{Handler: echoHandler, Logger: zaptest.NewLogger(t)})
	ctx := context.Background()

	var got map[string]any
	require.NoError(t, a.Call(ctx, "echo", map[string]any{"x": "y\nz"}, &got))
	assert.Equal(t, map[string]any{"x": "y\nz"}, got)

	var cwd string
	require.NoError(t, a.Call(ctx, "params", map[string]any{"cwd": "/w", "mcpServers": []any{}}, &cwd))
	assert.Equal(t, "/w", cwd)
	require.NoError(t, a.Call(ctx, "echo", nil, nil), "a nil result is allowed")

	tests := []struct {
		method string
		params any
		code   int
		msg    string
	}{
		{"fail", nil, ResourceNotFound, "session not found"},
		{"nope", nil, MethodNotFound, `method not found: "nope"`},
		{"params", map[string]any{"cwd": 1}, InvalidParams, `invalid params: field "cwd": expected string, got number`},
		{"panic", nil, InternalError, `internal error: handler for "panic" panicked`},
		{"cancelled", nil, RequestCancelled, "request cancelled"},
		{"plain", nil, InternalError, "internal error: disk full"},
		{"unencodable", nil, InternalError, "internal error: cannot encode the result"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			err := a.Call(ctx, tt.method, tt.params, nil)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Contains(t, e.Message, tt.msg)
		})
	}

	err := a.Call(ctx, "fail", nil, nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.JSONEq(t, `{"sessionId":"s"}`, string(e.Data))

	assert.ErrorContains(t, a.Call(ctx, "echo", "scalar", nil), "params must encode as an object or an array")
	var wrong int
	assert.ErrorContains(t, a.Call(ctx, "echo", map[string]any{"x": 1}, &wrong), `decoding the result of "echo"`)
}

func TestNilHandler(t *testing.T) {
	a, _ := newPair(t, Options{}, Options{})
	err := a.Call(context.Background(), "x", nil, nil)
	assert.ErrorIs(t, err, &Error{Code: MethodNotFound})
	require.NoError(t, a.Notify(context.Background(), "ignored", nil))
}

// A handler's notifications precede its response, and the caller has handled
// them all by the time Call returns.
func TestNotificationsBeforeResponse(t *testing.T) {
	const calls, perCall = 20, 25
	var mu sync.Mutex
	seen := map[string][]int{}
	clientHandler := func(ctx context.Context, req *Request) (any, error) {
		var p struct {
			Call string `json:"call"`
			I    int    `json:"i"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		mu.Lock()
		seen[p.Call] = append(seen[p.Call], p.I)
		mu.Unlock()
		return nil, nil
	}
	var server *Conn
	serverHandler := func(ctx context.Context, req *Request) (any, error) {
		var p struct {
			Call string `json:"call"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		for i := range perCall {
			if err := server.Notify(ctx, "progress", map[string]any{"call": p.Call, "i": i}); err != nil {
				return nil, err
			}
		}
		return "done", nil
	}
	client, srv := newPair(t, Options{Handler: clientHandler}, Options{Handler: serverHandler})
	server = srv

	var wg sync.WaitGroup
	for c := range calls {
		wg.Go(func() {
			name := fmt.Sprint("call", c)
			var res string
			assert.NoError(t, client.Call(context.Background(), "work", map[string]any{"call": name}, &res))
			assert.Equal(t, "done", res)
			mu.Lock()
			defer mu.Unlock()
			want := make([]int, perCall)
			for i := range want {
				want[i] = i
			}
			assert.Equal(t, want, seen[name], "all notifications of %s, in order, before Call returned", name)
		})
	}
	wg.Wait()
}

func TestConcurrentBothDirections(t *testing.T) {
	var a, b *Conn
	mk := func(peer **Conn) Handler {
		return func(ctx context.Context, req *Request) (any, error) {
			switch req.Method {
			case "echo":
				return req.Params, nil
			case "nested": // call back into the peer from a handler
				var out json.RawMessage
				err := (*peer).Call(ctx, "echo", req.Params, &out)
				return out, err
			}
			return nil, nil
		}
	}
	a, b = newPair(t, Options{Handler: mk(&a)}, Options{Handler: mk(&b)})
	var wg sync.WaitGroup
	for i := range 50 {
		for _, c := range []*Conn{a, b} {
			wg.Go(func() {
				method := "echo"
				if i%3 == 0 {
					method = "nested"
				}
				var got map[string]int
				assert.NoError(t, c.Call(context.Background(), method, map[string]int{"i": i}, &got))
				assert.Equal(t, i, got["i"])
				assert.NoError(t, c.Notify(context.Background(), "note", map[string]int{"i": i}))
			})
		}
	}
	wg.Wait()
}

func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	h := func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return req.Method, nil
	}
	a, _ := newPair(t, Options{}, Options{Handler: h})
	slowDone := make(chan error, 1)
	go func() { slowDone <- a.Call(context.Background(), "slow", nil, nil) }()
	var got string
	require.NoError(t, a.Call(context.Background(), "fast", nil, &got))
	assert.Equal(t, "fast", got)
	select {
	case <-slowDone:
		t.Fatal("slow call finished before it was released")
	default:
	}
	close(release)
	require.NoError(t, <-slowDone)
}

func TestOrderRequests(t *testing.T) {
	var mu sync.Mutex
	var log []string
	record := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	finish := make(chan struct{})
	h := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "prompt":
			record("prompt registered")
			Detach(ctx)
			<-finish
			return "end_turn", nil
		case "cancel":
			record("cancel seen")
			close(finish)
		case "quick":
			record("quick")
			return "ok", nil
		}
		return nil, nil
	}
	p := newRaw(t, Options{Handler: h, OrderRequests: true})
	p.send(
		`{"jsonrpc":"2.0","id":1,"method":"prompt"}`+"\n",
		`{"jsonrpc":"2.0","method":"cancel"}`+"\n",
		`{"jsonrpc":"2.0","id":2,"method":"quick"}`+"\n",
	)
	first, second := p.next(), p.next()
	// The prompt finishes only after cancel, but quick is only dispatched once
	// cancel was handled; so both answers arrive, prompt's possibly first.
	ids := []string{string(first.ID), string(second.ID)}
	assert.ElementsMatch(t, []string{"1", "2"}, ids)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"prompt registered", "cancel seen", "quick"}, log)
}

func TestOrderedResponsesWithoutDetach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(ctx context.Context, req *Request) (any, error) {
			if req.Method == "slow" {
				time.Sleep(time.Second)
			}
			return req.Method, nil
		}
		p := newRaw(t, Options{Handler: h, OrderRequests: true})
		p.send(
			`{"jsonrpc":"2.0","id":1,"method":"slow"}`+"\n",
			`{"jsonrpc":"2.0","id":2,"method":"fast"}`+"\n",
		)
		assert.Equal(t, "1", string(p.next().ID))
		assert.Equal(t, "2", string(p.next().ID))
	})
}

func TestUnorderedRequestsOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := func(ctx context.Context, req *Request) (any, error) {
			if req.Method == "slow" {
				time.Sleep(time.Second)
			}
			return req.Method, nil
		}
		p := newRaw(t, Options{Handler: h})
		p.send(
			`{"jsonrpc":"2.0","id":1,"method":"slow"}`+"\n",
			`{"jsonrpc":"2.0","id":2,"method":"fast"}`+"\n",
		)
		assert.Equal(t, "2", string(p.next().ID), "the fast request is not held back by the slow one")
		assert.Equal(t, "1", string(p.next().ID))
	})
}

// A notification handler may Call the peer: Call detaches it, so the
// response can be dispatched.
func TestCallFromNotificationHandler(t *testing.T) {
	var a, b *Conn
	got := make(chan string, 1)
	aHandler := func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "note" {
			var s string
			if err := a.Call(ctx, "echo", []string{"from note"}, &[]*string{&s}); err != nil {
				return nil, err
			}
			got <- s
		}
		return nil, nil
	}
	bHandler := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "ping":
			return "pong", b.Notify(ctx, "note", nil)
		case "echo":
			return req.Params, nil
		}
		return nil, nil
	}
	a, b = newPair(t, Options{Handler: aHandler}, Options{Handler: bHandler})
	var res string
	require.NoError(t, a.Call(context.Background(), "ping", nil, &res))
	assert.Equal(t, "pong", res)
	select {
	case s := <-got:
		assert.Equal(t, "from note", s)
	case <-time.After(waitTimeout):
		t.Fatal("the notification handler's Call did not complete")
	}
}

// A deferred response is written by whoever holds the Responder, in the
// order that writer chooses: here after a notification it sends first. The
// dispatcher moves on as soon as the handler returns.
func TestDeferredResponse(t *testing.T) {
	var conn *Conn
	responders := make(chan *Responder, 2)
	h := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "later", "laterErr":
			r := Defer(ctx)
			require.Same(t, r, Defer(ctx), "Defer is idempotent")
			responders <- r
			return "ignored", errors.New("ignored too")
		}
		return "next", nil
	}
	p := newRaw(t, Options{Handler: h, OrderRequests: true})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","id":1,"method":"later"}`+"\n", `{"jsonrpc":"2.0","id":2,"method":"other"}`+"\n")
	assert.Equal(t, "2", string(p.next().ID), "the next request is dispatched once the deferring handler returned")
	r := <-responders
	wrote := make(chan error, 1)
	go func() { // the peer reads one line at a time
		if err := conn.Notify(context.Background(), "update", map[string]int{"n": 1}); err != nil {
			wrote <- err
			return
		}
		wrote <- r.Respond(map[string]string{"stopReason": "end_turn"}, nil)
	}()
	note := p.next()
	assert.Equal(t, KindNotification, note.Kind)
	resp := p.next()
	assert.Equal(t, "1", string(resp.ID))
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(resp.Result))
	require.NoError(t, <-wrote)
	assert.Error(t, r.Respond("again", nil), "only the first Respond answers")

	p.send(`{"jsonrpc":"2.0","id":3,"method":"laterErr"}` + "\n")
	r = <-responders
	go func() { wrote <- r.Respond(nil, NewError(InvalidParams, "bad")) }()
	resp = p.next()
	require.NoError(t, <-wrote)
	require.NotNil(t, resp.Error)
	assert.Equal(t, InvalidParams, resp.Error.Code)
}

// A $/cancel_request reaches a deferred request's ctx until it is answered;
// once answered, its id is forgotten.
func TestDeferredResponseCancel(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	responders := make(chan *Responder, 1)
	h := func(ctx context.Context, req *Request) (any, error) {
		responders <- Defer(ctx)
		ctxs <- ctx
		return nil, nil
	}
	p := newRaw(t, Options{Handler: h, OrderRequests: true})
	p.send(`{"jsonrpc":"2.0","id":"p1","method":"prompt"}` + "\n")
	r, ctx := <-responders, <-ctxs
	require.NoError(t, ctx.Err(), "the handler returned, the request is still in flight")
	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p1"}}` + "\n")
	select {
	case <-ctx.Done():
	case <-time.After(waitTimeout):
		t.Fatal("$/cancel_request did not cancel the deferred request")
	}
	wrote := make(chan error, 1)
	go func() { wrote <- r.Respond(nil, ctx.Err()) }()
	resp := p.next()
	require.NoError(t, <-wrote)
	require.NotNil(t, resp.Error)
	assert.Equal(t, RequestCancelled, resp.Error.Code)
	assert.Nil(t, Defer(context.Background()), "no Responder outside a handler")
}

// Respond after shutdown reports ErrClosed.
func TestDeferredResponseAfterClose(t *testing.T) {
	responders := make(chan *Responder, 1)
	h := func(ctx context.Context, req *Request) (any, error) {
		responders <- Defer(ctx)
		return nil, nil
	}
	p := newRaw(t, Options{Handler: h})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"prompt"}` + "\n")
	r := <-responders
	_ = p.conn.Close()
	assert.ErrorIs(t, r.Respond("late", nil), ErrClosed)
}

// While the dispatcher is held, the reader queues a bounded amount and then
// stops reading, which pushes back on the peer.
func TestIncomingQueueIsBounded(t *testing.T) {
	release := make(chan struct{})
	var notes sync.WaitGroup
	h := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "block":
			<-release
		case "note":
			notes.Done()
		}
		return nil, nil
	}
	p := newRaw(t, Options{Handler: h, OrderRequests: true, MaxLineBytes: 100})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}` + "\n")
	const n = 50 // 50 lines of ~40 bytes: more than 4*100 bytes
	notes.Add(n)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range n {
			if _, err := io.WriteString(p.in, `{"jsonrpc":"2.0","method":"note"}`+"\n"); err != nil {
				return
			}
		}
	}()
	assert.Never(t, func() bool {
		select {
		case <-sent:
			return true
		default:
			return false
		}
	}, 200*time.Millisecond, 10*time.Millisecond, "the reader kept reading although the queue is full")
	close(release)
	assert.Equal(t, "1", string(p.next().ID))
	<-sent
	notes.Wait()
}

func TestCallContextCancelSendsCancelRequest(t *testing.T) {
	handlerCancelled := make(chan struct{})
	started := make(chan struct{})
	h := func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		close(handlerCancelled)
		return nil, ctx.Err()
	}
	a, _ := newPair(t, Options{}, Options{Handler: h})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Call(ctx, "block", nil, nil) }()
	<-started
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	select {
	case <-handlerCancelled:
	case <-time.After(waitTimeout):
		t.Fatal("the peer's handler was not cancelled by $/cancel_request")
	}
	a.mu.Lock()
	assert.Empty(t, a.pending, "the pending entry is cleaned up")
	a.mu.Unlock()
}

func TestCancelRequestAnswersRequestCancelled(t *testing.T) {
	h := func(ctx context.Context, req *Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	p := newRaw(t, Options{Handler: h})
	p.send(`{"jsonrpc":"2.0","id":"r1","method":"block"}`+"\n",
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"r1"}}`+"\n")
	m := p.next()
	assert.Equal(t, `"r1"`, string(m.ID))
	require.NotNil(t, m.Error)
	assert.Equal(t, RequestCancelled, m.Error.Code)
}

func TestMalformedInputKeepsGoing(t *testing.T) {
	p := newRaw(t, Options{Handler: echoHandler, MaxLineBytes: 200})
	long := `{"jsonrpc":"2.0","id":41,"method":"echo","params":{"x":"` + strings.Repeat("a", 300) + `"}}`
	longNoID := `{"jsonrpc":"2.0","method":"echo","params":{"x":"` + strings.Repeat("a", 300) + `"}}`
	longGarbage := strings.Repeat("z", 10_000)
	p.send(
		"not json\n",
		"\n",     // blank lines are ignored
		"  \r\n", // and so are whitespace-only ones
		`[{"jsonrpc":"2.0","id":1,"method":"echo"}]`+"\n",
		`{"jsonrpc":"1.0","id":2,"method":"echo"}`+"\n",
		`{"jsonrpc":"2.0","id":3}`+"\n", // a malformed response is not answered
		`{"jsonrpc":"2.0","id":4,"method":"echo","params":"x"}`+"\n",
		long+"\n",
		longNoID+"\n",
		longGarbage+"\n",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"echo\",\"params\":{\"t\":\"\xff\"}}\r\n",
		`{"jsonrpc":"2.0","id":6,"method":"echo","params":{"ok":true}}`, // last line without newline
	)
	type want struct {
		id   string
		code int
		msg  string
	}
	for _, w := range []want{
		{"null", ParseError, "parse error"},
		{"null", InvalidRequest, "batches are not supported"},
		{"2", InvalidRequest, `"jsonrpc" must be "2.0"`},
		{"4", InvalidRequest, `"params" must be an object or an array`},
		{"41", InvalidRequest, "message longer than 200 bytes discarded"},
		{"null", InvalidRequest, "message longer than 200 bytes discarded"},
		{"null", InvalidRequest, "message longer than 200 bytes discarded"},
	} {
		m := p.next()
		assert.Equal(t, w.id, string(m.ID))
		if assert.NotNil(t, m.Error) {
			assert.Equal(t, w.code, m.Error.Code)
			assert.Contains(t, m.Error.Message, w.msg)
		}
	}
	m := p.next()
	assert.Equal(t, "5", string(m.ID))
	assert.JSONEq(t, `{"t":"\ufffd"}`, string(m.Result))
	require.NoError(t, p.in.Close()) // EOF flushes the unterminated last line
	// The last request is dispatched, but the connection is shutting down, so
	// its answer may or may not make it; the connection ends cleanly either way.
	require.NoError(t, p.conn.Wait())
}

func TestOversizedResponseFailsItsCall(t *testing.T) {
	p := newRaw(t, Options{MaxLineBytes: 100})
	errc := make(chan error, 1)
	go func() { errc <- p.conn.Call(context.Background(), "big", nil, nil) }()
	req := p.next()
	require.Equal(t, KindRequest, req.Kind)
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"` + strings.Repeat("b", 500) + `"}` + "\n")
	err := <-errc
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Message, "invalid response: message longer than 100 bytes")
}

func TestMalformedResponseFailsItsCall(t *testing.T) {
	p := newRaw(t, Options{})
	errc := make(chan error, 1)
	go func() { errc <- p.conn.Call(context.Background(), "x", nil, nil) }()
	req := p.next()
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":"bad"}` + "\n")
	var e *Error
	require.ErrorAs(t, <-errc, &e)
	assert.Equal(t, InvalidRequest, e.Code)
}

func TestIDsEchoedVerbatim(t *testing.T) {
	p := newRaw(t, Options{Handler: echoHandler})
	for _, id := range []string{`"abc"`, `"x\u0041"`, `0`, `-7`, `1.50`, `1e3`, `null`, `"<&>"`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"echo","params":[]}` + "\n")
		m := p.next()
		assert.Equal(t, id, string(m.ID))
	}
}

func TestEOFFailsPendingCallsAndCancelsHandlers(t *testing.T) {
	handlerCtxDone := make(chan struct{})
	started := make(chan struct{})
	h := func(ctx context.Context, req *Request) (any, error) {
		close(started)
		<-ctx.Done()
		close(handlerCtxDone)
		return nil, ctx.Err()
	}
	p := newRaw(t, Options{Handler: h})
	errc := make(chan error, 1)
	go func() { errc <- p.conn.Call(context.Background(), "x", nil, nil) }()
	p.next() // our request went out
	p.send(`{"jsonrpc":"2.0","id":1,"method":"block"}` + "\n")
	<-started
	require.NoError(t, p.in.Close())

	err := <-errc
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, io.EOF)
	<-handlerCtxDone
	require.NoError(t, p.conn.Wait())
	assert.ErrorIs(t, p.conn.Notify(context.Background(), "late", nil), ErrClosed)
	assert.ErrorIs(t, p.conn.Call(context.Background(), "late", nil, nil), ErrClosed)
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadErrorIsTheCause(t *testing.T) {
	boom := errors.New("boom")
	_, w := io.Pipe()
	c := NewConn(failingReader{boom}, w, Options{})
	err := c.Wait()
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, c.Call(context.Background(), "x", nil, nil), boom)
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
}

// A peer that stops reading blocks writers; Close unblocks them.
func TestBackpressureAndCloseUnblocksWriters(t *testing.T) {
	inR, inW := io.Pipe()
	_, outW := io.Pipe() // nobody reads
	defer inW.Close()
	c := NewConn(inR, outW, Options{})
	errc := make(chan error, 3)
	go func() { errc <- c.Notify(context.Background(), "n", map[string]int{"x": 1}) }()
	poll.Until(t, waitTimeout, func() bool { return len(c.wsem) == 1 },
		"the first writer holds the write lock, blocked in Write")
	for range 2 {
		go func() { errc <- c.Notify(context.Background(), "n", map[string]int{"x": 2}) }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, c.Notify(ctx, "n", nil), context.DeadlineExceeded, "a writer waiting for the lock honours ctx")
	select {
	case err := <-errc:
		t.Fatalf("a write finished although nobody reads: %v", err)
	default:
	}
	require.NoError(t, c.Close())
	for range 3 {
		assert.ErrorIs(t, <-errc, ErrClosed)
	}
	require.NoError(t, c.Wait())
}

func TestCloseFromHandler(t *testing.T) {
	var b *Conn
	h := func(ctx context.Context, req *Request) (any, error) {
		b.Close()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a, bb := newPair(t, Options{}, Options{Handler: h})
	b = bb
	err := a.Call(context.Background(), "x", nil, nil)
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, b.Wait())
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		limit   int
		lines   []string
		tooLong []bool
	}{
		{"plain", "a\nbb\n", 10, []string{"a", "bb"}, []bool{false, false}},
		{"crlf", "a\r\nb", 10, []string{"a", "b"}, []bool{false, false}},
		{"exact limit with CR", "abc\r\n", 3, []string{"abc"}, []bool{false}},
		{"over limit", "abcd\nok\n", 3, []string{"abcd", "ok"}, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
			var lines []string
			var long []bool
			for {
				l, tl, err := readLine(br, tt.limit, nil)
				if len(l) > 0 || tl {
					lines = append(lines, string(l))
					long = append(long, tl)
				}
				if err != nil {
					break
				}
			}
			assert.Equal(t, tt.lines, lines)
			assert.Equal(t, tt.tooLong, long)
		})
	}
	// A line much longer than the reader's buffer keeps only a prefix.
	br := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100_000)+"\nnext\n"), 16)
	l, tl, err := readLine(br, 1000, nil)
	require.NoError(t, err)
	assert.True(t, tl)
	assert.Len(t, l, sniffBytes)
	l, tl, _ = readLine(br, 1000, nil)
	assert.False(t, tl)
	assert.Equal(t, "next", string(l))
}

func TestSniff(t *testing.T) {
	tests := []struct {
		prefix string
		id     string
		kind   Kind
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"x","params":{"a":"tru`, "3", KindRequest},
		{`{"jsonrpc":"2.0","method":"x","id":"s","params":[`, `"s"`, KindRequest},
		{`{"jsonrpc":"2.0","id":9,"result":{"a":"tru`, "9", KindResponse},
		{`{"jsonrpc":"2.0","id":9,"params":{"a":"tru`, "", 0},
		{`{"id":{},"method":"x"`, "", KindRequest},
		{`garbage`, "", 0},
	}
	for _, tt := range tests {
		id, kind := sniff([]byte(tt.prefix))
		assert.Equal(t, tt.id, string(id), tt.prefix)
		assert.Equal(t, tt.kind, kind, tt.prefix)
	}
}

// Send hands the response to its callback on the dispatcher, after every
// notification the peer sent before it; a call the connection's shutdown
// ends hears ErrClosed; a Send refused at once never calls back.
func TestSend(t *testing.T) {
	var notes atomic.Int32
	var b *Conn
	a, b := newPair(t, Options{Handler: func(ctx context.Context, req *Request) (any, error) {
		notes.Add(1)
		return nil, nil
	}}, Options{Handler: func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		_ = b.Notify(ctx, "note", nil)
		return "pong", nil
	}})
	type answer struct {
		result json.RawMessage
		err    error
		notes  int32
	}
	got := make(chan answer, 2)
	require.NoError(t, a.Send(context.Background(), "ping", nil, func(r json.RawMessage, err error) {
		got <- answer{r, err, notes.Load()}
	}))
	first := <-got
	require.NoError(t, first.err)
	assert.JSONEq(t, `"pong"`, string(first.result))
	assert.EqualValues(t, 1, first.notes, "the notification sent before the response was handled first")

	require.NoError(t, a.Send(context.Background(), "slow", nil, func(r json.RawMessage, err error) { got <- answer{r, err, 0} }))
	_ = a.Close()
	assert.ErrorIs(t, (<-got).err, ErrClosed, "shutdown ends the pending call")

	called := false
	err := a.Send(context.Background(), "ping", nil, func(json.RawMessage, error) { called = true })
	assert.ErrorIs(t, err, ErrClosed)
	_ = a.Wait()
	assert.False(t, called, "a Send that returned an error never calls back")
}

// With FinishOnEOF, requests a peer writes just before it closes its end
// are all answered, in order, and then the connection ends cleanly.
func TestFinishOnEOFAnswersWhatWasRead(t *testing.T) {
	p := newRaw(t, Options{Handler: echoHandler, FinishOnEOF: true, OrderRequests: true})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":["a"]}`+"\n",
		`{"jsonrpc":"2.0","id":2,"method":"echo","params":["b"]}`+"\n",
		`{"jsonrpc":"2.0","id":3,"method":"echo","params":["c"]}`) // no newline: the last line
	require.NoError(t, p.in.Close())
	for i, want := range []string{`["a"]`, `["b"]`, `["c"]`} {
		m := p.next()
		assert.Equal(t, strconv.Itoa(i+1), string(m.ID))
		assert.JSONEq(t, want, string(m.Result))
	}
	require.NoError(t, p.conn.Wait())
	<-p.conn.Done()
}

// With FinishOnEOF, a request still running at the EOF keeps its live
// context and is answered, after a notification it sends; the calls the
// connection waits on fail with ErrClosed and io.EOF once the input is
// done (a response read before the EOF still completes its call), and the
// connection ends only when the request has been answered.
func TestFinishOnEOFWaitsForRunningRequests(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var conn *Conn
	h := func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "slow":
			r := Defer(ctx)
			close(started)
			go func() {
				<-release
				if ctx.Err() != nil {
					_ = r.Respond(nil, ctx.Err())
					return
				}
				_ = conn.Notify(ctx, "progress", map[string]int{"n": 1})
				_ = r.Respond("done", nil)
			}()
			return nil, nil
		}
		return nil, nil
	}
	p := newRaw(t, Options{Handler: h, FinishOnEOF: true, OrderRequests: true})
	conn = p.conn
	answered := make(chan error, 1)
	go func() { answered <- p.conn.Call(context.Background(), "answered", nil, nil) }()
	first := p.next()
	waiting := make(chan error, 1)
	go func() { waiting <- p.conn.Call(context.Background(), "unanswered", nil, nil) }()
	p.next()
	p.send(`{"jsonrpc":"2.0","id":7,"method":"slow"}`+"\n",
		`{"jsonrpc":"2.0","id":`+string(first.ID)+`,"result":"ok"}`+"\n")
	<-started
	require.NoError(t, p.in.Close())

	require.NoError(t, <-answered, "a response read before the EOF completes its call")
	err := <-waiting
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, io.EOF)
	<-p.conn.Finishing()
	assert.ErrorIs(t, p.conn.Call(context.Background(), "late", nil, nil), io.EOF, "no call after the EOF")
	select {
	case <-p.conn.Done():
		t.Fatal("the connection ended with a request unanswered")
	default:
	}

	close(release)
	m := p.next()
	assert.Equal(t, "progress", m.Method, "the handler still writes")
	m = p.next()
	assert.Equal(t, "7", string(m.ID))
	assert.JSONEq(t, `"done"`, string(m.Result), "answered with its context live")
	require.NoError(t, p.conn.Wait())
}

// Without FinishOnEOF, Finishing is never closed: EOF ends the connection
// at once.
func TestEOFWithoutFinishOnEOF(t *testing.T) {
	p := newRaw(t, Options{Handler: echoHandler})
	require.NoError(t, p.in.Close())
	require.NoError(t, p.conn.Wait())
	select {
	case <-p.conn.Finishing():
		t.Fatal("Finishing closed without FinishOnEOF")
	default:
	}
}
