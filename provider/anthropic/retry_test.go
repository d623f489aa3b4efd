package anthropic

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

var okUsage = at.Usage{Input: 11, Output: 7}

// TestRetryClasses: every transient failure before a delta is retried, with
// the backoff or the wait retry-after asks for, and the request then
// succeeds.
func TestRetryClasses(t *testing.T) {
	tests := []struct {
		name      string
		first     http.HandlerFunc
		wantWait  time.Duration // -1: the backoff
		streamed  bool          // the class exists only in a stream
		wantClass string        // in the retry log line
	}{
		{"429 with retry-after", at.HTTPError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry-after", "7"), 7 * time.Second, false, "429"},
		{"500", at.HTTPError(500, "api_error", "Internal server error"), -1, false, "500"},
		{"529 overloaded", at.HTTPError(529, "overloaded_error", "Overloaded"), -1, false, "overloaded_error"},
		{"529 with retry-after", at.HTTPError(529, "overloaded_error", "Overloaded", "retry-after", "2"), 2 * time.Second, false, "529"},
		{"connection reset", func(w http.ResponseWriter, _ *http.Request) { at.Abort(w) }, -1, false, "connection reset"},
		{"overloaded error event before any delta", at.Stream(at.MessageStart(okUsage), at.Ping(), at.ErrorEvent("overloaded_error", "Overloaded")), -1, true, "overloaded_error"},
		{"reset after message_start", streamThen(at.Abort, at.MessageStart(okUsage), at.TextStart(0)), -1, true, "reset"},
		{"truncated before any delta", at.Stream(at.MessageStart(okUsage), at.TextStart(0), at.Ping()), -1, true, "no message_stop"},
	}
	for _, tt := range tests {
		inModes(t, tt.name, tt.streamed, func(t *testing.T, streamed bool) {
			srv := at.NewServer(t, testKey, tt.first, at.Reply("fine", okUsage))
			core, logs := observer.New(zapcore.DebugLevel)
			p, waits := newTestProvider(t, srv, WithBackoff(time.Hour, time.Hour), WithLogger(zap.New(core)))
			p.jitter = func(time.Duration) time.Duration { return 0 }
			resp, deltas, err := call(t, p, userRequest("hi"), streamed)
			require.NoError(t, err)
			assert.Equal(t, "fine", resp.Message.Text)
			assert.Len(t, srv.Requests(), 2)
			want := tt.wantWait
			if want < 0 {
				want = 30 * time.Minute // an hour minus the (zero) jitter of half
			}
			assert.Equal(t, []time.Duration{want}, waits())
			retries := logs.FilterMessage("retrying request").All()
			require.Len(t, retries, 1)
			assert.Contains(t, retries[0].ContextMap()["error"], tt.wantClass)
			if streamed {
				assert.Equal(t, []string{"fine"}, deltas, "only the answer that succeeded was delivered")
			}
		})
	}
}

// TestNoRetryAfterDelta: once a delta reached the caller nothing is
// retried: not an error event, not a reset, not a truncated stream. No
// partial response is returned.
func TestNoRetryAfterDelta(t *testing.T) {
	partial := []at.Event{at.MessageStart(okUsage), at.TextStart(0), at.TextDelta(0, "partial "), at.Ping(), at.TextDelta(0, "answer")}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		text    string // in the error
	}{
		{"error event", at.Stream(append(partial, at.ErrorEvent("overloaded_error", "Overloaded"))...), "Overloaded"},
		{"reset", streamThen(at.Abort, partial...), "reset"},
		{"end of body without message_stop", at.Stream(append(partial, at.BlockStop(0), at.MessageDelta("end_turn", 3))...), "stream ended before the response was complete (no message_stop)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, tt.handler, at.Reply("must not be reached", okUsage))
			p, waits := newTestProvider(t, srv)
			resp, deltas, err := call(t, p, userRequest("hi"), true)
			require.Error(t, err)
			assert.Nil(t, resp, "never a partial response")
			assert.Contains(t, err.Error(), tt.text)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.True(t, e.Retryable, "transient, but deltas were delivered")
			assert.Zero(t, e.Retries)
			assert.Len(t, srv.Requests(), 1)
			assert.Empty(t, waits())
			assert.Equal(t, []string{"partial ", "answer"}, deltas)
		})
	}
}

// TestNotRetried: errors that trying again would not fix.
func TestNotRetried(t *testing.T) {
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		streamed   bool
		wantStatus int
		wantType   string
	}{
		{"400", at.HTTPError(400, "invalid_request_error", "messages: roles must alternate"), false, 400, "invalid_request_error"},
		{"401", at.HTTPError(401, "authentication_error", "invalid x-api-key"), false, 401, "authentication_error"},
		{"403", at.HTTPError(403, "permission_error", "no access"), false, 403, "permission_error"},
		{"404", at.HTTPError(404, "not_found_error", "model: claude-test"), false, 404, "not_found_error"},
		{"invalid request error event", at.Stream(at.MessageStart(okUsage), at.ErrorEvent("invalid_request_error", "bad")), true, 0, "invalid_request_error"},
		{"malformed event", at.Stream(at.MessageStart(okUsage), at.Event{Type: "content_block_delta", Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"br`}), true, 0, ""},
	}
	for _, tt := range tests {
		inModes(t, tt.name, tt.streamed, func(t *testing.T, streamed bool) {
			srv := at.NewServer(t, testKey, tt.handler, at.Reply("must not be reached", okUsage))
			p, _ := newTestProvider(t, srv)
			_, _, err := call(t, p, userRequest("hi"), streamed)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable, "%v", err)
			assert.Equal(t, tt.wantStatus, e.StatusCode)
			assert.Equal(t, tt.wantType, e.Type)
			assert.Len(t, srv.Requests(), 1)
		})
	}
	t.Run("malformed event is a syntax error", func(t *testing.T) {
		srv := at.NewServer(t, testKey, at.Stream(at.Event{Type: "message_start", Data: `{not json}`}))
		p, _ := newTestProvider(t, srv)
		_, err := p.Complete(t.Context(), userRequest("hi"), func(string) {})
		var syn *json.SyntaxError
		assert.ErrorAs(t, err, &syn)
	})
}

// TestRetriesExhausted: the last failure is returned with the number of
// retries made.
func TestRetriesExhausted(t *testing.T) {
	t.Run("529", func(t *testing.T) {
		srv := at.NewServer(t, testKey, at.HTTPError(529, "overloaded_error", "Overloaded"))
		p, waits := newTestProvider(t, srv, WithMaxRetries(2))
		_, err := p.Complete(t.Context(), userRequest("hi"), func(string) {})
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 529, e.StatusCode)
		assert.Equal(t, "overloaded_error", e.Type)
		assert.Equal(t, "Overloaded", e.Message)
		assert.True(t, e.Retryable)
		assert.Equal(t, 2, e.Retries)
		assert.Equal(t, "anthropic: HTTP 529: Overloaded (type overloaded_error) (after 2 retries)", e.Error())
		assert.Len(t, srv.Requests(), 3)
		assert.Len(t, waits(), 2)
	})
	t.Run("dial error", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		p, waits := newTestProvider(t, at.NewServer(t, testKey), WithBaseURL("http://"+addr), WithHTTPClient(nil), WithMaxRetries(1))
		_, err = p.Complete(t.Context(), userRequest("hi"), nil)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Retryable)
		assert.Equal(t, 1, e.Retries)
		assert.Zero(t, e.StatusCode)
		assert.Len(t, waits(), 1)
	})
}

// TestContextEndsRequest: cancelling the context ends a hanging request
// and a backoff wait, with an error wrapping ctx.Err(), without retrying.
func TestContextEndsRequest(t *testing.T) {
	t.Run("during the request", func(t *testing.T) {
		srv := at.NewServer(t, testKey) // never answers
		p, _ := newTestProvider(t, srv)
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-srv.Arrived()
			cancel()
		}()
		_, err := p.Complete(ctx, userRequest("hi"), func(string) {})
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, srv.Requests(), 1)
	})
	t.Run("during the backoff", func(t *testing.T) {
		srv := at.NewServer(t, testKey, at.HTTPError(500, "api_error", "Internal server error"))
		p, _ := newTestProvider(t, srv)
		ctx, cancel := context.WithCancel(t.Context())
		p.sleep = func(context.Context, time.Duration) error {
			cancel()
			return ctx.Err()
		}
		_, err := p.Complete(ctx, userRequest("hi"), nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, srv.Requests(), 1)
	})
}

// TestAPIKeyNeverLeaked: a server that echoes the key header back (as
// Authorization, the way the SDK sends it, and under x-api-key) in error
// messages, error types and error events: neither the error nor any log
// line shows the key.
func TestAPIKeyNeverLeaked(t *testing.T) {
	echoed := func(r *http.Request) string {
		return "x-api-key=" + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + " authorization=" + r.Header.Get("Authorization")
	}
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		streamed bool
	}{
		{"401 message", func(w http.ResponseWriter, r *http.Request) {
			at.HTTPError(401, "authentication_error", "invalid "+echoed(r))(w, r)
		}, false},
		{"500 after retries, in the type", func(w http.ResponseWriter, r *http.Request) {
			at.HTTPError(500, "api_error "+echoed(r), "boom "+echoed(r))(w, r)
		}, true},
		{"non-JSON 502", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = w.Write([]byte("<html>you sent " + echoed(r) + "</html>"))
		}, false},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			at.WriteSSE(w, at.MessageStart(okUsage), at.ErrorEvent("overloaded_error", "key "+echoed(r)))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, tt.handler)
			core, logs := observer.New(zapcore.DebugLevel)
			p, _ := newTestProvider(t, srv, WithMaxRetries(2), WithLogger(zap.New(core)))
			_, _, err := call(t, p, userRequest("hi"), tt.streamed)
			require.Error(t, err)
			noKey(t, err.Error())
			var e *Error
			require.ErrorAs(t, err, &e)
			noKey(t, e.Message)
			noKey(t, e.Type)
			if e.Err != nil {
				noKey(t, e.Err.Error())
			}
			assert.Contains(t, err.Error(), "[REDACTED]", "the echoed key shows as redacted")
			require.NotEmpty(t, logs.All())
			for _, entry := range logs.All() {
				noKey(t, entry.Message)
				for k, v := range entry.ContextMap() {
					noKey(t, k)
					if s, ok := v.(string); ok {
						noKey(t, s)
					}
				}
			}
		})
	}
}

// TestRetryIsReported: every retry is reported through the ctx
// (provider.ReportRetry) before its wait, with its number, the wait and
// whether the server rate-limited the request.
func TestRetryIsReported(t *testing.T) {
	tests := []struct {
		name    string
		first   http.HandlerFunc
		limited bool
	}{
		{"429", at.HTTPError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", "retry-after", "7"), true},
		{"529 overloaded", at.HTTPError(529, "overloaded_error", "Overloaded"), true},
		{"500", at.HTTPError(500, "api_error", "Internal server error"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, tt.first, at.Reply("fine", okUsage))
			p, waits := newTestProvider(t, srv, WithBackoff(time.Second, time.Second))
			p.jitter = func(time.Duration) time.Duration { return 0 }
			var got []provider.Retry
			ctx := provider.WithRetryReports(t.Context(), func(r provider.Retry) { got = append(got, r) })
			_, err := p.Complete(ctx, userRequest("hi"), nil)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, 1, got[0].Retry)
			assert.Equal(t, DefaultMaxRetries, got[0].MaxRetries)
			assert.Equal(t, waits(), []time.Duration{got[0].Wait})
			assert.Equal(t, tt.limited, got[0].RateLimited)
			assert.Error(t, got[0].Err)
		})
	}
}
