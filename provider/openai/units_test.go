package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessionkit/sessionkit/internal/retry"
)

func unsetenv(key string) error { return os.Unsetenv(key) }

func toolCallFragment(id, name, args string) goopenai.ToolCall {
	return goopenai.ToolCall{ID: id, Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: name, Arguments: args}}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "0", want: 0, wantOK: true},
		{in: "1", want: time.Second, wantOK: true},
		{in: " 7 ", want: 7 * time.Second, wantOK: true},
		{in: "60", want: time.Minute, wantOK: true},
		{in: "61", want: MaxRetryAfter, wantOK: true},
		{in: "99999999999999999", want: MaxRetryAfter, wantOK: true},
		{in: "-3", wantOK: false},
		{in: "1.5", wantOK: false},
		{in: "soon", wantOK: false},
		{in: now.Add(20 * time.Second).Format(http.TimeFormat), want: 20 * time.Second, wantOK: true},
		{in: now.Add(time.Hour).Format(http.TimeFormat), want: MaxRetryAfter, wantOK: true},
		{in: now.Add(-time.Hour).Format(http.TimeFormat), want: 0, wantOK: true},
		{in: now.Add(30 * time.Second).Format(time.RFC850), want: 30 * time.Second, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBackoff(t *testing.T) {
	p, err := New(WithModel("m"))
	require.NoError(t, err)
	tests := []struct {
		retry    int
		min, max time.Duration
	}{
		{retry: 0, min: 250 * time.Millisecond, max: 500 * time.Millisecond},
		{retry: 1, min: 500 * time.Millisecond, max: time.Second},
		{retry: 3, min: 2 * time.Second, max: 4 * time.Second},
		{retry: 4, min: 4 * time.Second, max: 8 * time.Second},
		{retry: 5, min: 4 * time.Second, max: 8 * time.Second},
		{retry: 40, min: 4 * time.Second, max: 8 * time.Second},
		{retry: 100, min: 4 * time.Second, max: 8 * time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.retry), func(t *testing.T) {
			p.jitter = func(time.Duration) time.Duration { return 0 }
			assert.Equal(t, tt.min, p.backoff(tt.retry), "no jitter")
			p.jitter = func(n time.Duration) time.Duration { return n }
			assert.Equal(t, tt.max, p.backoff(tt.retry), "full jitter")
			p.jitter = randomJitter
			for range 50 {
				d := p.backoff(tt.retry)
				assert.GreaterOrEqual(t, d, tt.min)
				assert.LessOrEqual(t, d, tt.max)
			}
		})
	}
}

func TestSleepCtx(t *testing.T) {
	require.NoError(t, sleepCtx(t.Context(), time.Millisecond))
	require.NoError(t, sleepCtx(t.Context(), 0))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	require.ErrorIs(t, sleepCtx(ctx, time.Hour), context.Canceled)
	assert.Less(t, time.Since(start), time.Second)
}

func TestErrorText(t *testing.T) {
	base := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{name: "server error", err: &Error{StatusCode: 400, Type: "invalid_request_error", Code: "bad", Message: "nope"},
			want: "openai: HTTP 400: nope (type invalid_request_error, code bad)"},
		{name: "type only", err: &Error{StatusCode: 500, Type: "server_error", Message: "boom", Retries: 3, Retryable: true},
			want: "openai: HTTP 500: boom (type server_error) (after 3 retries)"},
		{name: "code only", err: &Error{StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow"},
			want: "openai: HTTP 429: slow (code rate_limit_exceeded)"},
		{name: "transport error", err: &Error{Err: base, Retries: 2},
			want: "openai: dial tcp 127.0.0.1:1: connect: connection refused (after 2 retries)"},
		{name: "one retry", err: &Error{StatusCode: 503, Message: "busy", Retries: 1},
			want: "openai: HTTP 503: busy (after 1 retry)"},
		{name: "nothing", err: &Error{}, want: "openai: request failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
	e := &Error{Err: base}
	assert.ErrorIs(t, e, base)
	assert.Same(t, base, errors.Unwrap(e))
}

func TestRedactedWrapper(t *testing.T) {
	p, err := New(WithModel("m"), WithAPIKey(testKey))
	require.NoError(t, err)
	inner := fmt.Errorf("server said %s: %w", testKey, context.DeadlineExceeded)
	e := p.classify(inner, &attempt{})
	assert.NotContains(t, e.Error(), testKey)
	assert.Contains(t, e.Error(), redactedText)
	assert.ErrorIs(t, e, context.DeadlineExceeded, "redaction keeps the chain")
}

func TestCodeString(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{in: nil, want: ""},
		{in: 0, want: ""}, // go-openai's decoding of "code": null
		{in: 429, want: "429"},
		{in: "rate_limit_exceeded", want: "rate_limit_exceeded"},
		{in: 1.5, want: "1.5"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, codeString(tt.in), "%v", tt.in)
	}
}

func TestBodySnippet(t *testing.T) {
	assert.Equal(t, "a b c", bodySnippet([]byte(" a\n b\t\tc "), ""))
	long := strings.Repeat("é", 300) // two bytes a rune
	s := bodySnippet([]byte(long), "")
	assert.True(t, strings.HasSuffix(s, "…"))
	assert.LessOrEqual(t, len(s), maxMessage+len("…"))
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(s, "…")), "cut on a rune boundary")
}

func TestLogsNeverContainAPIKey(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		apiError(500, "you sent "+r.Header.Get("Authorization"), "server_error", "")(w, r)
	})
	p, s := newProvider(t, f, WithMaxRetries(2), WithLogger(zap.New(core)))
	_, err := p.Complete(t.Context(), userRequest("hi"), nil)
	require.Error(t, err)
	assert.Len(t, s.all(), 2)
	require.Equal(t, 2, logs.FilterMessage("retrying request").Len(), "each retry is logged")
	for _, entry := range logs.All() {
		assert.NotContains(t, entry.Message, testKey)
		assert.NotContains(t, fmt.Sprint(entry.ContextMap()), testKey)
	}
}

func TestWrapClient(t *testing.T) {
	var closed bool
	base := closeCounter{closed: &closed}
	orig := &http.Client{Transport: base, Timeout: time.Second}
	hc := wrapClient(orig, testKey)
	assert.NotSame(t, orig, hc)
	assert.Equal(t, time.Second, hc.Timeout)
	assert.Equal(t, base, orig.Transport, "the original client is untouched")
	ct, ok := hc.Transport.(*captureTransport)
	require.True(t, ok)
	rt, ok := ct.base.(*retry.Transport)
	require.True(t, ok, "the time limits' transport is under the capture")
	assert.Equal(t, base, rt.Base)
	hc.CloseIdleConnections()
	assert.True(t, closed)

	def := wrapClient(nil, "")
	require.IsType(t, &captureTransport{}, def.Transport)
	assert.Equal(t, http.DefaultTransport, def.Transport.(*captureTransport).base.(*retry.Transport).Base)
}

type closeCounter struct{ closed *bool }

func (c closeCounter) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("unused")
}
func (c closeCounter) CloseIdleConnections() { *c.closed = true }
