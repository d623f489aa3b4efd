package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	waits := map[string]time.Duration{
		"0": 0, " 7 ": 7 * time.Second, "99999999999": time.Minute,
		date(30 * time.Second): 30 * time.Second, date(-time.Hour): 0, date(time.Hour): time.Minute,
	}
	for in, want := range waits {
		d, ok := ParseRetryAfter(in, now, time.Minute)
		assert.True(t, ok, "%q", in)
		assert.Equal(t, want, d, "%q", in)
	}
	for _, in := range []string{"", "-1", "soon"} {
		_, ok := ParseRetryAfter(in, now, time.Minute)
		assert.False(t, ok, "%q", in)
	}
}

func TestBackoff(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	full := func(n time.Duration) time.Duration { return n }
	assert.Equal(t, 250*time.Millisecond, Backoff(500*time.Millisecond, 8*time.Second, 0, none))
	assert.Equal(t, 500*time.Millisecond, Backoff(500*time.Millisecond, 8*time.Second, 0, full))
	assert.Equal(t, 8*time.Second, Backoff(500*time.Millisecond, 8*time.Second, 10, full), "capped")
	assert.Equal(t, 8*time.Second, Backoff(500*time.Millisecond, 8*time.Second, 200, full), "no overflow")
	for range 100 {
		d := Backoff(time.Second, time.Second, 0, Jitter)
		assert.True(t, d >= 500*time.Millisecond && d <= time.Second, "%v", d)
	}
}

func TestSleep(t *testing.T) {
	require.NoError(t, Sleep(t.Context(), time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
}

func TestRedact(t *testing.T) {
	err := fmt.Errorf("dial: key sk-1 refused: %w", io.ErrUnexpectedEOF)
	r := RedactErr(err, "sk-1")
	assert.Equal(t, "dial: key [REDACTED] refused: unexpected EOF", r.Error())
	assert.ErrorIs(t, r, io.ErrUnexpectedEOF)
	assert.Same(t, err, RedactErr(err, ""))
	assert.NoError(t, RedactErr(nil, "sk-1"))
	assert.Equal(t, "a b", Redact("a b", ""))
}

func TestIsConnError(t *testing.T) {
	assert.True(t, IsConnError(fmt.Errorf("read: %w", io.ErrUnexpectedEOF)))
	assert.False(t, IsConnError(errors.New("bad JSON")))
}

func TestSnippet(t *testing.T) {
	assert.Equal(t, "a b c", Snippet([]byte(" a\n b\t\tc "), 10, ""))
	assert.Equal(t, "ab…", Snippet([]byte("abé"), 3, ""), "cut on a rune boundary")
}

func TestPolicyRun(t *testing.T) {
	var waits []time.Duration
	policy := func(max int) *Policy {
		waits = nil
		return &Policy{
			MaxRetries: max,
			Backoff:    func(n int) time.Duration { return time.Duration(n+1) * time.Second },
			Sleep: func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				return ctx.Err()
			},
			Log: zap.NewNop(),
		}
	}
	cancelled := func(retries int) error { return fmt.Errorf("cancelled after %d", retries) }
	failing := func(v Verdict) func(context.Context, int) (bool, Verdict) {
		return func(context.Context, int) (bool, Verdict) { return false, v }
	}
	boom := errors.New("boom")

	t.Run("retried until spent, backoff or retry-after", func(t *testing.T) {
		var seen []int
		err := policy(3).Run(t.Context(), func(_ context.Context, retries int) (bool, Verdict) {
			seen = append(seen, retries)
			after := time.Duration(-1)
			if retries == 1 {
				after = 0
			}
			return false, Verdict{Err: boom, Retryable: true, RetryAfter: after}
		}, cancelled)
		assert.Same(t, boom, err)
		assert.Equal(t, []int{0, 1, 2, 3}, seen)
		assert.Equal(t, []time.Duration{time.Second, 0, 3 * time.Second}, waits)
	})
	t.Run("success", func(t *testing.T) {
		n := 0
		err := policy(3).Run(t.Context(), func(context.Context, int) (bool, Verdict) {
			n++
			return n == 2, Verdict{Err: boom, Retryable: true, RetryAfter: -1}
		}, cancelled)
		assert.NoError(t, err)
		assert.Equal(t, 2, n)
	})
	t.Run("not retryable", func(t *testing.T) {
		assert.Same(t, boom, policy(3).Run(t.Context(), failing(Verdict{Err: boom, RetryAfter: -1}), cancelled))
		assert.Empty(t, waits)
	})
	t.Run("delivered", func(t *testing.T) {
		assert.Same(t, boom, policy(3).Run(t.Context(), failing(Verdict{Err: boom, Retryable: true, Delivered: true, RetryAfter: -1}), cancelled))
		assert.Empty(t, waits, "never retried once the caller saw part of it")
	})
	t.Run("context done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		err := policy(3).Run(ctx, func(context.Context, int) (bool, Verdict) {
			cancel()
			return false, Verdict{Err: boom, Retryable: true, RetryAfter: -1}
		}, cancelled)
		assert.EqualError(t, err, "cancelled after 0")
	})
}
