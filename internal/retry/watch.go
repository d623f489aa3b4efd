package retry

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"
)

// TimeoutError is the failure of an attempt that hit one of its time
// limits: the whole request took longer than the request timeout, or no
// byte arrived (response headers or body) for the idle timeout. It is
// transient: trying again may succeed.
type TimeoutError struct {
	// Limit names the limit, for example "request timeout (WithTimeout)" or
	// "idle timeout (WithIdleTimeout)".
	Limit string
	// After is the limit's duration.
	After time.Duration
	// Idle reports the idle timeout (no byte for After), else the whole
	// request took After.
	Idle bool
}

// Error says which limit was hit and how long it is.
func (e *TimeoutError) Error() string {
	if e.Idle {
		return fmt.Sprintf("no byte from the server for %v: %s", e.After, e.Limit)
	}
	return fmt.Sprintf("the request took longer than %v: %s", e.After, e.Limit)
}

// Timeout reports true: the error is a timeout (net.Error's convention).
func (e *TimeoutError) Timeout() bool { return true }

// Temporary reports true (net.Error's method): another attempt may
// succeed.
func (e *TimeoutError) Temporary() bool { return true }

// Limits are the time limits of one attempt; 0 means none.
type Limits struct {
	// Request bounds the whole attempt, from sending the request to the
	// last byte of the response; RequestName names it in the error.
	Request     time.Duration
	RequestName string
	// Idle bounds the time without a byte of the response (its headers, or
	// between reads of its body); IdleName names it in the error.
	Idle     time.Duration
	IdleName string
}

// watchKey is the context key of the *Watch of an attempt.
type watchKey struct{}

// Watch enforces the [Limits] of one attempt: the attempt runs with the
// context Start returns, whose cause is the [*TimeoutError] of the limit
// that ended it. A [Transport] in the attempt's HTTP client tells the watch
// about every byte that arrives.
type Watch struct {
	cancel  context.CancelCauseFunc
	ctx     context.Context
	idle    *time.Timer
	request *time.Timer
	l       Limits

	mu      sync.Mutex
	stopped bool
}

// Start returns the context of one attempt bounded by l, and its watch;
// call [Watch.Stop] when the attempt is over.
func Start(ctx context.Context, l Limits) (context.Context, *Watch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watch{cancel: cancel, l: l}
	if l.Idle > 0 {
		w.idle = time.AfterFunc(l.Idle, func() {
			cancel(&TimeoutError{Limit: l.IdleName, After: l.Idle, Idle: true})
		})
	}
	if l.Request > 0 {
		w.request = time.AfterFunc(l.Request, func() {
			cancel(&TimeoutError{Limit: l.RequestName, After: l.Request})
		})
	}
	w.ctx = context.WithValue(ctx, watchKey{}, w)
	return w.ctx, w
}

// Touch restarts the idle limit: a byte has arrived.
func (w *Watch) Touch() {
	if w == nil || w.idle == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.idle.Reset(w.l.Idle)
	}
}

// Stop ends the watch (its timers) and the attempt's context.
func (w *Watch) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	if w.idle != nil {
		w.idle.Stop()
	}
	if w.request != nil {
		w.request.Stop()
	}
	w.cancel(nil)
}

// Err returns the [*TimeoutError] of the limit that ended the attempt, or
// nil when none did.
func (w *Watch) Err() *TimeoutError {
	if w == nil {
		return nil
	}
	te, _ := context.Cause(w.ctx).(*TimeoutError)
	return te
}

// BodyError is the failure of a response whose status is a success but
// whose body is neither JSON nor an event stream, for example a proxy's
// HTML page: it is not transient, and Line quotes the body's first line.
type BodyError struct {
	StatusCode  int
	ContentType string
	// Line is the first non-blank line of the body, on one line, with the
	// secret redacted and cut at the limit (see [Snippet]).
	Line string
}

// Error says what came instead of the API's answer.
func (e *BodyError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no Content-Type"
	}
	return fmt.Sprintf("the server answered HTTP %d with a body that is not the API's JSON (%s), starting %q", e.StatusCode, ct, e.Line)
}

// Transport wraps the HTTP transport of a provider: the response of a
// request made with a context from [Start] tells its watch about every
// byte that arrives, and a success response whose body is not JSON or an
// event stream fails with a [*BodyError] (never retried) instead of being
// read as an empty or truncated answer.
type Transport struct {
	Base http.RoundTripper
	// Secret is redacted from a quoted body line; Limit bounds the line.
	Secret string
	Limit  int
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	w, _ := r.Context().Value(watchKey{}).(*Watch)
	w.Touch()
	resp.Body = &touchBody{ReadCloser: resp.Body, w: w}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return resp, nil
	}
	br := bufio.NewReader(resp.Body)
	if line, bad := t.notAPIBody(resp.Header.Get("Content-Type"), br); bad {
		resp.Body.Close()
		return nil, &BodyError{StatusCode: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Line: line}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{br, resp.Body}
	return resp, nil
}

// notAPIBody reports a body that is HTML by its Content-Type or whose first
// non-blank byte cannot begin JSON or an event stream, and then its first
// line. An empty body is left to the API client.
func (t *Transport) notAPIBody(contentType string, br *bufio.Reader) (string, bool) {
	html := false
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		html = mt == "text/html" || mt == "application/xhtml+xml"
	}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return "", false // empty (or failing) body: the client reports it
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		case '{', '[', 'd', 'e', 'i', 'r', ':': // JSON, or data:, event:, id:, retry:, a comment
			if !html {
				return "", false
			}
		}
		return t.firstLine(br), true
	}
}

// maxLine bounds how much of a body is read to quote its first line.
const maxLine = 4 << 10

func (t *Transport) firstLine(br *bufio.Reader) string {
	head, _ := io.ReadAll(io.LimitReader(br, maxLine))
	line, _, _ := bytes.Cut(head, []byte("\n"))
	return Snippet(line, t.Limit, t.Secret)
}

// CloseIdleConnections forwards to the wrapped transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.Base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// touchBody tells a watch about every byte read from a response body.
type touchBody struct {
	io.ReadCloser
	w *Watch
}

func (b *touchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.Touch()
	}
	return n, err
}
