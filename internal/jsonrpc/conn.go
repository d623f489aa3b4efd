package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// DefaultMaxLineBytes is the default limit on the length of one input line
// (one message), line ending excluded.
const DefaultMaxLineBytes = 8 << 20

// maxQueued bounds the messages read but not yet dispatched, and
// queuedLines their size in units of MaxLineBytes. When the queue is full
// the reader stops reading, which pushes back on the peer.
const (
	maxQueued   = 1024
	queuedLines = 4
)

// sniffBytes is how much of an oversized line is kept to find its id.
const sniffBytes = 4096

// ErrClosed is returned by [Conn.Call] and [Conn.Notify] once the connection
// has shut down. It wraps the cause when there is one (io.EOF when the peer
// closed its end, or the read or write error).
var ErrClosed = errors.New("jsonrpc: connection closed")

// Handler handles incoming requests and notifications.
//
// For a request (req.ID != nil) the returned value is encoded as the result
// (nil becomes null) unless err is non-nil. An err is turned into a JSON-RPC
// error: an [*Error] anywhere in its chain is sent as is;
// context.Canceled and context.DeadlineExceeded become [RequestCancelled];
// anything else becomes [InternalError] with err's text. A panic becomes an
// [InternalError] and the connection keeps going. For a notification the
// return values are ignored (errors are logged).
//
// ctx is cancelled when the connection shuts down and, for a request, when
// the peer sends $/cancel_request for it. A handler must return soon after
// ctx is done: [Conn.Wait] waits for it. A notification handler holds back
// the next incoming message until it returns or calls [Detach]; it must not
// wait for a [Conn.Call] made with another ctx than its own.
type Handler func(ctx context.Context, req *Request) (any, error)

// Request is an incoming request or notification.
type Request struct {
	// ID is the raw JSON id, echoed verbatim in the response; nil for a
	// notification.
	ID     json.RawMessage
	Method string
	// Params is the raw params value (an object or an array); nil when absent
	// or null. Decode it with [UnmarshalParams].
	Params json.RawMessage
}

// IsNotification reports whether r expects no response.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Options configure a [Conn]. The zero value is usable.
type Options struct {
	// Handler handles incoming requests and notifications. Nil answers every
	// request with [MethodNotFound] and ignores notifications.
	Handler Handler

	// MaxLineBytes limits one input line; 0 means DefaultMaxLineBytes.
	MaxLineBytes int

	// OrderRequests makes request handling ordered like notification
	// handling: the next incoming message is dispatched only after the
	// request's handler has returned and its response has been written, or
	// the handler has called [Detach]. A handler uses this to register its
	// request (queue a prompt, say) before a later message (a cancel) is
	// looked at, then calls Detach and keeps working. Without it every
	// request runs concurrently from the moment it is dispatched.
	OrderRequests bool

	// Logger receives diagnostics (unanswerable messages, handler panics,
	// notification errors). Nil means no logging.
	Logger *zap.Logger

	// FinishOnEOF makes the end of the input (EOF from the peer) end the
	// connection gracefully rather than at once: nothing more is read, the
	// messages read before the EOF are still dispatched in order, and then
	// calls waiting for a response fail with [ErrClosed] wrapping io.EOF
	// (no response can come any more), later calls too, [Conn.Finishing]
	// is closed, and the connection shuts down (cause io.EOF) once every
	// request read has been answered. Until then handler contexts stay
	// live and responses and notifications are written as usual. Without
	// it, EOF shuts the connection down at once, like a read error: queued
	// messages are dropped and handler contexts cancelled. A server whose
	// peer may write its last requests and close its end at once (a
	// command fed by a pipe) sets it.
	FinishOnEOF bool

	// OnMalformed, when set, is called (from the reader goroutine) with
	// every input line that is not a valid JSON-RPC message, after it has
	// been answered. A client that cannot trust a peer sending garbage calls
	// [Conn.CloseWithError] from it.
	OnMalformed func(err error)
}

// Conn is a JSON-RPC 2.0 connection over newline-delimited JSON.
//
// # Dispatch and ordering
//
// One reader goroutine reads lines. Every message is dispatched in receive
// order by one dispatcher goroutine: a response completes its [Conn.Call]; a
// notification runs the handler in a goroutine and the dispatcher waits for it
// to return (or to call [Detach]) before dispatching the next message; a
// request runs the handler in its own goroutine, so a slow request does not
// hold back others (see [Options.OrderRequests] for the ordered variant).
// Hence a Call returns only after every notification received before its
// response has been handled (or has detached).
//
// # Writing
//
// Writes are serialized: every message is written whole, with one Write
// call, in the order the writers acquired the connection. Notify and Call
// return only after the message was written, so a handler's notifications
// sent before it returns precede its response on the wire. When the peer
// stops reading, writes block (memory stays bounded) until the peer reads or
// the connection shuts down.
//
// # Shutdown
//
// The connection shuts down when the reader hits EOF (with
// [Options.FinishOnEOF]: once the requests read before it are answered) or
// an error, when a write fails, or on [Conn.Close]. Then pending Calls fail
// with [ErrClosed] wrapping the cause, every handler context is cancelled,
// queued messages are dropped, later writes fail with ErrClosed, and the
// reader and the writer are closed if they implement io.Closer: that is
// what unblocks a Read or a Write in progress. If they do not, [Conn.Wait]
// waits for the Read or Write to return by itself (so does a Read of an
// os.File in blocking mode, such as a process's stdin, which Close does
// not interrupt). A Conn therefore owns r and w; their Close must be safe
// to call concurrently with Read and Write (as for os.File, net.Conn and
// io.Pipe).
type Conn struct {
	r    io.Reader
	w    io.Writer
	opts Options
	log  *zap.Logger

	ctx    context.Context // parent of every handler context
	cancel context.CancelFunc
	done   chan struct{} // closed when shutdown starts
	// finishing is closed when the dispatcher has reached the EOF
	// (FinishOnEOF): the connection ends once inflight is empty.
	finishing chan struct{}
	wg        sync.WaitGroup
	wsem      chan struct{} // the write lock (capacity 1)
	nextID    atomic.Int64

	mu       sync.Mutex
	closed   bool
	cause    error // why the connection shut down; nil for Close
	closeErr error // what pending and later operations fail with
	pending  map[int64]*pendingCall
	inflight map[string]*inflight // incoming requests (queued or running) by id
	ended    error                // set at the EOF (FinishOnEOF): what calls fail with
	answered chan struct{}        // signalled when inflight loses a request (capacity 1)
	queue    []item
	queued   int           // bytes of the messages in queue
	ready    chan struct{} // signalled when the queue gets an item (capacity 1)
	space    chan struct{} // signalled when the queue loses an item (capacity 1)

	closeOnce sync.Once
}

type pendingCall struct {
	done chan struct{} // closed once msg or err is set
	msg  *Message
	err  error
	then func(result json.RawMessage, err error) // Send's callback
}

// finish completes the call with a response or an error.
func (p *pendingCall) finish(m *Message, err error) {
	p.msg, p.err = m, err
	close(p.done)
	if p.then == nil {
		return
	}
	switch {
	case err != nil:
		p.then(nil, err)
	case m.Error != nil:
		p.then(nil, m.Error)
	default:
		p.then(m.Result, nil)
	}
}

type inflight struct{ cancel context.CancelFunc }

// item is one unit of work for the dispatcher.
type item struct {
	msg   *Message        // a request, notification or response; nil for a reply
	ctx   context.Context // request context
	req   *inflight
	reply *Message // an error response to write (for a bad line)
	size  int      // bytes of the line it came from
	eof   bool     // the end of the input (FinishOnEOF): the last item
}

// NewConn starts a connection reading r and writing w. Call [Conn.Close]
// and [Conn.Wait] to stop it.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		r: r, w: w, opts: opts, log: log,
		ctx: ctx, cancel: cancel,
		done:      make(chan struct{}),
		finishing: make(chan struct{}),
		answered:  make(chan struct{}, 1),
		wsem:      make(chan struct{}, 1),
		pending:   make(map[int64]*pendingCall),
		inflight:  make(map[string]*inflight),
		ready:     make(chan struct{}, 1),
		space:     make(chan struct{}, 1),
	}
	c.wg.Add(2)
	go c.readLoop()
	go c.dispatchLoop()
	return c
}

// Call sends a request and waits for its response, which is decoded into
// result unless result is nil. params is encoded with encoding/json and must
// encode as an object or an array (or be nil).
//
// It returns the peer's [*Error] when the peer answered with an error,
// [ErrClosed] (wrapping the cause) when the connection shut down first, and
// ctx.Err() when ctx ended first; then the pending entry is dropped, a
// $/cancel_request notification is sent for the request, and a late response
// is ignored. Called from a handler with the handler's ctx, Call first
// [Detach]es the handler, since the response can only be dispatched once the
// dispatcher moves on.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	p, err := c.Go(ctx, method, params)
	if err != nil {
		return err
	}
	return p.Wait(ctx, result)
}

// Pending is a request that has been written and waits for its response.
type Pending struct {
	c      *Conn
	method string
	id     int64
	call   *pendingCall
}

// Go sends a request and returns once it has been written, so that requests
// sent one after the other reach the peer in that order. Wait for the
// response with [Pending.Wait]. Errors are those of Call for the write.
func (c *Conn) Go(ctx context.Context, method string, params any) (*Pending, error) {
	return c.send(ctx, method, params, nil)
}

// Send sends a request like [Conn.Go] and hands its response to then
// instead of a waiter: the result, or the peer's [*Error], or [ErrClosed]
// when the connection shut down first. then runs on the dispatcher
// goroutine, in receive order with the notifications around the response
// (so a notification the peer sent before its response has been handled
// when then runs), or, for ErrClosed, on a goroutine of the shutdown's
// (which [Conn.Wait] waits for). It must return promptly: the next message
// waits for it. Send returns an error, and then is never called, when the
// request was not sent (ctx ended before the write, or the params do not
// encode); a write that fails because the connection shut down reaches
// then as ErrClosed. ctx governs the write only.
func (c *Conn) Send(ctx context.Context, method string, params any, then func(result json.RawMessage, err error)) error {
	_, err := c.send(ctx, method, params, then)
	return err
}

// SendID is [Conn.Send] that also returns the request's ID, which
// [Conn.Abandon] takes.
func (c *Conn) SendID(ctx context.Context, method string, params any, then func(result json.RawMessage, err error)) (json.RawMessage, error) {
	p, err := c.send(ctx, method, params, then)
	if err != nil || p == nil {
		return nil, err
	}
	return json.RawMessage(strconv.FormatInt(p.id, 10)), nil
}

// Abandon gives up a request sent with [Conn.SendID] whose response has not
// arrived: its then is never called and a late response is ignored. It
// reports whether the request was still waiting; the caller then tells the
// peer, e.g. with $/cancel_request, in the order it writes its messages.
func (c *Conn) Abandon(id json.RawMessage) bool {
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && c.forget(n)
}

func (c *Conn) send(ctx context.Context, method string, params any, then func(json.RawMessage, error)) (*Pending, error) {
	Detach(ctx)
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	id := c.nextID.Add(1)
	idRaw := json.RawMessage(strconv.FormatInt(id, 10))
	p := &pendingCall{done: make(chan struct{}), then: then}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, c.closeErr
	case c.ended != nil:
		c.mu.Unlock()
		return nil, c.ended
	}
	c.pending[id] = p
	c.mu.Unlock()

	if err := c.write(ctx, &Message{Kind: KindRequest, ID: idRaw, Method: method, Params: raw}); err != nil {
		if !c.forget(id) && then != nil {
			// The write failed because the connection shut down, which
			// has finished the call: then hears of it.
			return &Pending{c: c, method: method, id: id, call: p}, nil
		}
		return nil, err
	}
	return &Pending{c: c, method: method, id: id, call: p}, nil
}

// Done is closed when the response has arrived or the connection shut down.
func (p *Pending) Done() <-chan struct{} { return p.call.done }

// Wait waits for the response and decodes it into result unless result is
// nil. Errors are those of [Conn.Call]; when ctx ends first the request is
// abandoned and a $/cancel_request is sent for it.
func (p *Pending) Wait(ctx context.Context, result any) error {
	select {
	case <-p.call.done:
	case <-ctx.Done():
		if p.c.forget(p.id) {
			p.c.cancelRemote(json.RawMessage(strconv.FormatInt(p.id, 10)))
		}
		return ctx.Err()
	}
	if p.call.err != nil {
		return p.call.err
	}
	if p.call.msg.Error != nil {
		return p.call.msg.Error
	}
	if result != nil {
		if err := json.Unmarshal(p.call.msg.Result, result); err != nil {
			return fmt.Errorf("jsonrpc: decoding the result of %q: %w", p.method, err)
		}
	}
	return nil
}

// Notify sends a notification. It returns once the notification has been
// written, ctx.Err() if ctx ends while waiting for the writer, or
// [ErrClosed].
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.write(ctx, &Message{Kind: KindNotification, Method: method, Params: raw})
}

// Close shuts the connection down (see [Conn] for what that does) without
// waiting; use [Conn.Wait] for that. It is idempotent and safe to call from
// a handler. It always returns nil.
func (c *Conn) Close() error {
	c.shutdown(nil)
	return nil
}

// CloseWithError shuts the connection down like Close, with err as the cause
// that pending and later calls fail with and that [Conn.Wait] returns.
func (c *Conn) CloseWithError(err error) {
	c.shutdown(err)
}

// Done is closed when the connection starts shutting down.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Finishing is closed when, with [Options.FinishOnEOF], the peer has closed
// its end and every message read before has been dispatched: the
// connection shuts down once the requests still running are answered. It
// is never closed without FinishOnEOF, nor when the connection shut down
// otherwise first.
func (c *Conn) Finishing() <-chan struct{} { return c.finishing }

// Wait blocks until the connection has shut down and every goroutine it
// started (reader, dispatcher, handlers) has returned. It returns nil when
// the connection ended by [Conn.Close] or by EOF from the peer, and the read
// or write error otherwise.
func (c *Conn) Wait() error {
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil || errors.Is(c.cause, io.EOF) {
		return nil
	}
	return c.cause
}

// Responder answers one request later, from any goroutine: see [Defer].
type Responder struct {
	c    *Conn
	id   json.RawMessage
	req  *inflight
	once sync.Once
}

type deferKey struct{}

// Defer takes over the response of the request whose handler received ctx:
// the handler's return values are then ignored, and the request stays in
// flight (its ctx live, a $/cancel_request for it cancelling that ctx) until
// [Responder.Respond] writes its response. The writer that calls Respond
// decides where the response stands among its own notifications, so a
// response can follow the updates it belongs to without any signal between
// goroutines. With [Options.OrderRequests] the next message is dispatched as
// soon as the handler returns. Defer returns nil for a notification's ctx or
// any ctx that is not a handler's; calling it twice returns the same
// Responder.
func Defer(ctx context.Context) *Responder {
	f, ok := ctx.Value(deferKey{}).(func() *Responder)
	if !ok {
		return nil
	}
	return f()
}

// Respond writes the response: the error if err is non-nil (mapped as
// [Handler] says), the result otherwise. It blocks until the response is
// written and reports why it was not: [ErrClosed] after shutdown, or an
// error when it was already called (only the first call responds).
func (r *Responder) Respond(result any, err error) error {
	done := false
	var werr error
	r.once.Do(func() {
		done = true
		werr = r.c.respond(r.id, result, err)
		r.c.mu.Lock()
		if key := idKey(r.id); r.c.inflight[key] == r.req {
			delete(r.c.inflight, key)
		}
		r.c.mu.Unlock()
		signal(r.c.answered)
		r.req.cancel()
	})
	if !done {
		return errors.New("jsonrpc: the request was already answered")
	}
	return werr
}

type detachKey struct{}

// Detach lets the dispatcher move on to the next incoming message while the
// handler that received ctx keeps running. It matters for notifications and,
// with [Options.OrderRequests], for requests; otherwise, and for any ctx
// that is not a handler's, it does nothing. It is idempotent.
func Detach(ctx context.Context) {
	if f, ok := ctx.Value(detachKey{}).(func()); ok {
		f()
	}
}

func (c *Conn) shutdown(cause error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.cause = cause
		if cause == nil {
			c.closeErr = ErrClosed
		} else {
			c.closeErr = fmt.Errorf("%w: %w", ErrClosed, cause)
		}
		pending := c.pending
		c.pending = nil
		c.queue, c.queued = nil, 0
		// Send's callbacks run on a goroutine of their own: shutdown can
		// happen on any goroutine (a failed write), also one that a
		// callback waits for. The reader is still counted, so the counter
		// is not zero.
		c.wg.Add(1)
		c.mu.Unlock()

		close(c.done)
		c.cancel()
		go func() {
			defer c.wg.Done()
			for _, p := range pending {
				p.finish(nil, c.closeErr)
			}
		}()
		if cl, ok := c.r.(io.Closer); ok {
			_ = cl.Close()
		}
		if cl, ok := c.w.(io.Closer); ok {
			_ = cl.Close()
		}
	})
}

// forget drops a pending call; it reports whether the call was still pending.
func (c *Conn) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancelRemote sends $/cancel_request for an abandoned call, in the
// background so that the caller does not wait for the writer.
func (c *Conn) cancelRemote(id json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	// wg.Add is safe here: while the connection is open, the reader and the
	// dispatcher are still counted, so the counter is not zero.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		_ = c.Notify(c.ctx, CancelRequestMethod, map[string]json.RawMessage{"requestId": id})
	}()
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: encoding params: %w", err)
	}
	switch JSONKind(raw) {
	case "object", "array":
		return raw, nil
	case "null":
		return nil, nil
	}
	return nil, fmt.Errorf("jsonrpc: params must encode as an object or an array, not a %s", JSONKind(raw))
}

// write encodes m and writes it as one line under the write lock.
func (c *Conn) write(ctx context.Context, m *Message) error {
	b, err := EncodeMessage(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	select {
	case c.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.closedErr()
	}
	defer func() { <-c.wsem }()
	select {
	case <-c.done:
		return c.closedErr()
	default:
	}
	if _, err := c.w.Write(b); err != nil {
		c.shutdown(fmt.Errorf("jsonrpc: write: %w", err))
		return c.closedErr()
	}
	return nil
}

func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// ---- reading ----

func (c *Conn) readLoop() {
	defer c.wg.Done()
	br := bufio.NewReaderSize(c.r, 64<<10)
	var buf []byte
	for {
		line, tooLong, err := readLine(br, c.opts.MaxLineBytes, buf[:0])
		if tooLong {
			c.handleOversized(line)
		} else if len(line) > 0 {
			c.handleLine(line)
		}
		if cap(line) <= 1<<20 {
			buf = line // reuse moderate buffers only
		} else {
			buf = nil
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF) && c.opts.FinishOnEOF:
				c.enqueue(item{eof: true}) // dispatched after what was read
			case errors.Is(err, io.EOF):
				c.shutdown(io.EOF)
			default:
				c.shutdown(fmt.Errorf("jsonrpc: read: %w", err))
			}
			return
		}
		select {
		case <-c.done:
			return
		default:
		}
	}
}

// readLine reads one line into buf, without its line ending. When the line
// is longer than max, the rest of it is read and discarded, tooLong is true
// and line holds its first bytes. A final line without a newline is returned
// together with io.EOF.
func readLine(br *bufio.Reader, limit int, buf []byte) (line []byte, tooLong bool, err error) {
	for {
		var frag []byte
		frag, err = br.ReadSlice('\n')
		if err == nil {
			frag = frag[:len(frag)-1]
		}
		switch {
		case !tooLong && len(buf)+len(frag) <= limit+1: // one extra byte for a '\r' trimmed below
			buf = append(buf, frag...)
		default:
			tooLong = true
			if len(buf) < sniffBytes {
				buf = append(buf, frag[:min(len(frag), sniffBytes-len(buf))]...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !tooLong {
			buf = bytes.TrimSuffix(buf, []byte("\r"))
			if len(buf) > limit {
				tooLong = true
				buf = buf[:min(len(buf), sniffBytes)]
			}
		}
		return buf, tooLong, err
	}
}

func (c *Conn) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	m, err := ReadMessage(line)
	if err != nil {
		if c.opts.OnMalformed != nil {
			defer c.opts.OnMalformed(err)
		}
		e := toWireError(err)
		if m.Kind == KindResponse {
			// Never answer a response; fail the call it belongs to, if any.
			c.log.Warn("jsonrpc: malformed response", zap.String("error", e.Message))
			c.enqueue(item{msg: &Message{Kind: KindResponse, ID: m.ID, Error: e}, size: len(line)})
			return
		}
		c.enqueue(item{reply: &Message{Kind: KindResponse, ID: m.ID, Error: e}, size: len(line)})
		return
	}
	switch m.Kind {
	case KindNotification:
		if m.Method == CancelRequestMethod {
			c.cancelIncoming(m.Params)
			return
		}
		c.enqueue(item{msg: m, size: len(line)})
	case KindRequest:
		ctx, cancel := context.WithCancel(c.ctx)
		req := &inflight{cancel: cancel}
		c.mu.Lock()
		if !c.closed {
			c.inflight[idKey(m.ID)] = req
		}
		c.mu.Unlock()
		c.enqueue(item{msg: m, ctx: ctx, req: req, size: len(line)})
	case KindResponse:
		c.enqueue(item{msg: m, size: len(line)})
	}
}

// handleOversized answers a discarded line. Its first bytes tell whether it
// was a request (answered with its id when found), a response (the call it
// answers fails) or unknown (answered with id null).
func (c *Conn) handleOversized(prefix []byte) {
	e := NewError(InvalidRequest, "invalid request: message longer than %d bytes discarded", c.opts.MaxLineBytes)
	id, kind := sniff(prefix)
	switch kind {
	case KindResponse:
		c.log.Warn("jsonrpc: oversized response discarded")
		e := NewError(InvalidRequest, "invalid response: message longer than %d bytes discarded", c.opts.MaxLineBytes)
		c.enqueue(item{msg: &Message{Kind: KindResponse, ID: id, Error: e}})
		return
	case KindRequest:
	default:
		id = nil
	}
	c.enqueue(item{reply: &Message{Kind: KindResponse, ID: id, Error: e}})
}

// sniff looks at the top-level members of a truncated JSON object for an id
// and for what kind of message it is.
func sniff(prefix []byte) (id json.RawMessage, kind Kind) {
	if !startsLikeObject(prefix) {
		return nil, 0
	}
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, 0
	}
	var hasMethod, hasResult bool
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, ok := tok.(string)
		if !ok {
			break
		}
		switch key {
		case "method":
			hasMethod = true
		case "result", "error":
			hasResult = true
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if k := JSONKind(raw); key == "id" && (k == "string" || k == "number") {
			id = raw
		}
	}
	switch {
	case hasMethod:
		return id, KindRequest
	case hasResult:
		return id, KindResponse
	}
	return nil, 0
}

// startsLikeObject reports whether b starts like a JSON object.
func startsLikeObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r")
	return len(b) > 0 && b[0] == '{'
}

func (c *Conn) cancelIncoming(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	c.mu.Lock()
	req := c.inflight[idKey(p.RequestID)]
	c.mu.Unlock()
	if req != nil {
		req.cancel()
	}
}

// idKey is a canonical map key for a request id: equal ids spelled
// differently ("1" and "1.0", "a" and "\u0061") get the same key.
func idKey(raw json.RawMessage) string {
	switch JSONKind(raw) {
	case "string":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	case "number":
		if n, ok := numericID(raw); ok {
			return "n" + strconv.FormatInt(n, 10)
		}
		var f float64
		if json.Unmarshal(raw, &f) == nil {
			return "f" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return string(raw)
}

// numericID parses an integer id (such as the ones Call sends).
func numericID(raw json.RawMessage) (int64, bool) {
	if JSONKind(raw) != "number" {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// ---- the queue and the dispatcher ----

// enqueue adds it to the dispatch queue, waiting while the queue is full.
func (c *Conn) enqueue(it item) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		if len(c.queue) == 0 || len(c.queue) < maxQueued && c.queued+it.size <= queuedLines*c.opts.MaxLineBytes {
			c.queue = append(c.queue, it)
			c.queued += it.size
			c.mu.Unlock()
			signal(c.ready)
			return
		}
		c.mu.Unlock()
		select {
		case <-c.space:
		case <-c.done:
			return
		}
	}
}

func (c *Conn) dequeue() (item, bool) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return item{}, false
		}
		if len(c.queue) > 0 {
			it := c.queue[0]
			c.queue[0] = item{}
			c.queue = c.queue[1:]
			c.queued -= it.size
			c.mu.Unlock()
			signal(c.space)
			return it, true
		}
		c.mu.Unlock()
		select {
		case <-c.ready:
		case <-c.done:
			return item{}, false
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *Conn) dispatchLoop() {
	defer c.wg.Done()
	for {
		it, ok := c.dequeue()
		if !ok {
			return
		}
		switch {
		case it.eof:
			c.finish()
			return
		case it.reply != nil:
			if err := c.write(c.ctx, it.reply); err != nil {
				c.log.Debug("jsonrpc: error reply not sent", zap.Error(err))
			}
		case it.msg.Kind == KindResponse:
			c.deliver(it.msg)
		case it.msg.Kind == KindNotification:
			c.run(it.msg, c.ctx, nil, true)
		default:
			c.run(it.msg, it.ctx, it.req, c.opts.OrderRequests)
		}
	}
}

// finish ends the connection after the EOF (FinishOnEOF), on the
// dispatcher once everything read before it has been dispatched: the calls
// waiting for a response fail (none can come), later ones too, and the
// connection shuts down once every request read has been answered.
func (c *Conn) finish() {
	ended := fmt.Errorf("%w: %w", ErrClosed, io.EOF)
	c.mu.Lock()
	c.ended = ended
	pending := c.pending
	c.pending = make(map[int64]*pendingCall)
	c.mu.Unlock()
	close(c.finishing)
	for _, p := range pending {
		p.finish(nil, ended)
	}
	for {
		c.mu.Lock()
		busy := len(c.inflight)
		c.mu.Unlock()
		if busy == 0 {
			c.shutdown(io.EOF)
			return
		}
		select {
		case <-c.answered:
		case <-c.done:
			return
		}
	}
}

func (c *Conn) deliver(m *Message) {
	id, ok := numericID(m.ID)
	var p *pendingCall
	if ok {
		c.mu.Lock()
		p = c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if p == nil {
		c.log.Debug("jsonrpc: response to an unknown request", zap.ByteString("id", m.ID))
		return
	}
	p.finish(m, nil)
}

// run runs the handler for one request or notification in a goroutine and,
// when wait is set, blocks until it returns (and its response is written) or
// detaches.
func (c *Conn) run(m *Message, ctx context.Context, req *inflight, wait bool) {
	detached := make(chan struct{})
	var once sync.Once
	detach := func() { once.Do(func() { close(detached) }) }
	hctx := context.WithValue(ctx, detachKey{}, detach)
	r := &Request{ID: m.ID, Method: m.Method, Params: m.Params}
	if m.Kind == KindRequest {
		resp := &Responder{c: c, id: m.ID, req: req} // handed out by Defer
		var deferred atomic.Bool
		hctx = context.WithValue(hctx, deferKey{}, func() *Responder { deferred.Store(true); return resp })
		c.spawn(detach, func() {
			result, err := c.handle(hctx, r)
			if !deferred.Load() {
				_ = resp.Respond(result, err)
			}
		})
	} else {
		c.spawn(detach, func() {
			if _, err := c.handle(hctx, r); err != nil {
				c.log.Warn("jsonrpc: notification handler failed", zap.String("method", m.Method), zap.Error(err))
			}
		})
	}
	c.await(detached, wait)
}

// spawn runs handler in a goroutine of the connection's wait group, and
// detaches when it returns.
func (c *Conn) spawn(detach func(), handler func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer detach()
		handler()
	}()
}

// await blocks the dispatcher, when wait is set, until the handler has
// returned or detached, or the connection is shutting down.
func (c *Conn) await(detached <-chan struct{}, wait bool) {
	if !wait {
		return
	}
	select {
	case <-detached:
	case <-c.done:
	}
}

func (c *Conn) handle(ctx context.Context, r *Request) (result any, err error) {
	if c.opts.Handler == nil {
		if r.IsNotification() {
			return nil, nil
		}
		return nil, MethodNotFoundError(r.Method)
	}
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: handler panicked", zap.String("method", r.Method), zap.Any("panic", p), zap.StackSkip("stack", 2))
			err = NewError(InternalError, "internal error: handler for %q panicked", r.Method)
		}
	}()
	return c.opts.Handler(ctx, r)
}

// respond writes the response to a request.
func (c *Conn) respond(id json.RawMessage, result any, err error) error {
	resp := &Message{Kind: KindResponse, ID: id}
	if err != nil {
		resp.Error = toWireError(err)
	} else {
		raw, merr := json.Marshal(result)
		if merr != nil {
			c.log.Error("jsonrpc: cannot encode a result", zap.Error(merr))
			resp.Error = NewError(InternalError, "internal error: cannot encode the result: %s", merr.Error())
		} else {
			resp.Result = raw
		}
	}
	if err := c.write(context.Background(), resp); err != nil {
		c.log.Debug("jsonrpc: response not sent", zap.Error(err))
		return err
	}
	return nil
}
