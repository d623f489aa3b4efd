package openai

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/internal/retry"
)

// maxErrorBody bounds how much of an error response body is read, so that a
// hostile server cannot make the client buffer without limit.
const maxErrorBody = 1 << 20

// attemptKey is the context key of the *attempt of one request.
type attemptKey struct{}

// attempt is what the transport saw of one attempt's HTTP response.
// go-openai exposes neither the status of a body it failed to read nor the
// Retry-After header, so the transport records them here.
type attempt struct {
	mu     sync.Mutex
	status int
	after  time.Duration
	hasRA  bool
}

func (a *attempt) record(resp *http.Response, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status = resp.StatusCode
	a.after, a.hasRA = 0, false
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		a.after, a.hasRA = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	}
}

func (a *attempt) statusCode() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// retryAfter returns the wait a Retry-After header asked for, if any.
func (a *attempt) retryAfter() (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.after, a.hasRA
}

// parseRetryAfter parses a Retry-After value relative to now, capped at
// [MaxRetryAfter].
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	return retry.ParseRetryAfter(v, now, MaxRetryAfter)
}

// captureTransport puts large message contents into the request body (see
// body.go), records each response in the request's *attempt and reads error
// bodies (bounded) so that their connection is always released.
type captureTransport struct{ base http.RoundTripper }

func (t *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r, err := spliceRequest(r)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if att, ok := r.Context().Value(attemptKey{}).(*attempt); ok {
		att.record(resp, time.Now())
	}
	if resp.StatusCode >= http.StatusBadRequest {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
	}
	return resp, nil
}

// CloseIdleConnections forwards to the wrapped transport.
func (t *captureTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// wrapClient returns a shallow copy of c (or a new client) whose transport
// is wrapped by captureTransport, over retry.Transport (the time limits of
// an attempt, and success bodies that are not the API's).
func wrapClient(c *http.Client, apiKey string) *http.Client {
	var hc http.Client
	if c != nil {
		hc = *c
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &captureTransport{base: &retry.Transport{Base: base, Secret: apiKey, Limit: maxMessage}}
	return &hc
}

// backoff returns the wait before retry n+1 (n counts from 0): base·2ⁿ
// capped at max, minus a random jitter of up to half of it.
func (p *Provider) backoff(n int) time.Duration {
	return retry.Backoff(p.backoffBase, p.backoffMax, n, p.jitter)
}

// randomJitter and sleepCtx are the real jitter and sleep (tests replace
// the Provider's).
var (
	randomJitter = retry.Jitter
	sleepCtx     = retry.Sleep
)
