// Package retry holds what the HTTP providers (provider/openai,
// provider/anthropic) share about retrying a model request: the retry loop
// ([Policy]), the backoff between attempts, the Retry-After header, which
// transport errors are transient, and keeping the API key out of error
// texts.
//
//	wait := retry.Backoff(500*time.Millisecond, 8*time.Second, n, retry.Jitter)
//	if d, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now(), time.Minute); ok {
//		wait = d
//	}
//	if err := retry.Sleep(ctx, wait); err != nil {
//		return err // ctx is done
//	}
package retry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// ParseRetryAfter parses a Retry-After value, delay-seconds or an HTTP
// date, relative to now. The result is capped at limit, so that a server
// cannot stall a session for ever; a date in the past means no wait. ok is
// false when v is empty or malformed.
func ParseRetryAfter(v string, now time.Time, limit time.Duration) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(limit/time.Second) {
			return limit, true
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, limit), true
}

// Backoff returns the wait before retry n+1 (n counts from 0): base·2ⁿ
// capped at limit, minus jitter(d/2), which should be a random duration in
// [0, d/2] (see [Jitter]).
func Backoff(base, limit time.Duration, n int, jitter func(time.Duration) time.Duration) time.Duration {
	d := limit
	if n < 62 {
		if e := base << n; e > 0 && e < d && e>>n == base {
			d = e
		}
	}
	half := d / 2
	return d - half + jitter(half)
}

// Jitter returns a uniformly random duration in [0, n].
func Jitter(n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	return rand.N(n + 1)
}

// Sleep waits d, or less when ctx is done first (then it returns
// ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// IsConnError reports whether err is a transient connection failure:
// refused or reset connections, a connection closed early, a timeout, a
// DNS failure other than "no such host".
func IsConnError(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return !dnsErr.IsNotFound
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE)
}

// Redacted is what [Redact] puts in place of a secret.
const Redacted = "[REDACTED]"

// Redact replaces every occurrence of secret in s with [Redacted]. An
// empty secret leaves s as it is.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, Redacted)
}

// RedactErr returns err with secret hidden in its text; errors.Is and
// errors.As still see err. nil and an empty secret return err itself.
func RedactErr(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	return &redacted{err: err, secret: secret}
}

// redacted hides a secret in the text of an error it wraps.
type redacted struct {
	err    error
	secret string
}

func (r *redacted) Error() string { return Redact(r.err.Error(), r.secret) }
func (r *redacted) Unwrap() error { return r.err }

// Snippet returns the start of an error body on one line: white space runs
// become one space, secret is redacted (see [Redact]) and then a body
// longer than limit bytes is cut on a rune boundary and ends with "…".
// Redacting first means a secret that crosses the cut never shows its
// first part.
func Snippet(body []byte, limit int, secret string) string {
	s := Redact(strings.Join(strings.Fields(string(body)), " "), secret)
	if len(s) > limit {
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Policy is how a provider retries a request: [Policy.Run] makes attempts
// until one succeeds, one fails for good, the retries are spent or the
// context ends.
type Policy struct {
	// MaxRetries is the number of retries after the first attempt.
	MaxRetries int
	// Backoff returns the wait before retry n+1 when the server asked for
	// none (see [Backoff]).
	Backoff func(n int) time.Duration
	// Sleep waits (see [Sleep]); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Log receives a warning for every retry and a debug line for the
	// failure returned; never nil.
	Log *zap.Logger
	// OnRetry, when set, is called before the wait of every retry with the
	// retry's number (1 for the first), the wait and the failure retried;
	// providers report it with provider.ReportRetry.
	OnRetry func(ctx context.Context, retry int, wait time.Duration, err error)
}

// Verdict is what a failed attempt says about trying again.
type Verdict struct {
	// Err is returned when the attempt is not retried. Its text is logged:
	// it must not hold secrets.
	Err error
	// Retryable reports a transient failure.
	Retryable bool
	// Delivered reports that the caller has already seen part of the
	// response (a streamed delta): the attempt is then never retried.
	Delivered bool
	// RetryAfter is the wait the server asked for; negative when it asked
	// for none.
	RetryAfter time.Duration
}

// Run calls attempt, with the number of retries made so far, until it
// reports success (ok) or a failure that is not retried: one not
// Retryable, one Delivered, or the last one allowed; it then returns that
// failure's Err. When ctx is done before an attempt, after a failed one or
// during a wait, it returns cancelled(retries) instead.
func (p *Policy) Run(ctx context.Context, attempt func(ctx context.Context, retries int) (ok bool, v Verdict), cancelled func(retries int) error) error {
	for retries := 0; ; retries++ {
		if ctx.Err() != nil {
			return cancelled(retries)
		}
		ok, v := attempt(ctx, retries)
		if ok {
			return nil
		}
		if ctx.Err() != nil {
			return cancelled(retries)
		}
		if !v.Retryable || v.Delivered || retries >= p.MaxRetries {
			p.Log.Debug("request failed",
				zap.Int("retries", retries),
				zap.Bool("delivered", v.Delivered),
				zap.String("error", v.Err.Error()))
			return v.Err
		}
		wait := p.Backoff(retries)
		if v.RetryAfter >= 0 {
			wait = v.RetryAfter
		}
		p.Log.Warn("retrying request",
			zap.Int("retry", retries+1),
			zap.Int("max_retries", p.MaxRetries),
			zap.Duration("wait", wait),
			zap.String("error", v.Err.Error()))
		if p.OnRetry != nil {
			p.OnRetry(ctx, retries+1, wait, v.Err)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			return cancelled(retries)
		}
	}
}
