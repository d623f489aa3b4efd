package anthropic

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

// TestIdleTimeoutServerNeverAnswers: a server that accepts the request and
// sends nothing (the test server's script is empty: it hangs) ends each
// attempt after the idle timeout; the failure is retryable, retried, names
// the limit and is a timeout.
func TestIdleTimeoutServerNeverAnswers(t *testing.T) {
	inModes(t, "hang", false, func(t *testing.T, streamed bool) {
		srv := at.NewServer(t, testKey)
		p, _ := newTestProvider(t, srv, WithIdleTimeout(50*time.Millisecond), WithMaxRetries(1))
		_, _, err := call(t, p, userRequest("hi"), streamed)
		require.Error(t, err)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Retryable)
		assert.Equal(t, 1, e.Retries)
		assert.Len(t, srv.Requests(), 2, "the timeout is retried")
		assert.Contains(t, err.Error(), "idle timeout (WithIdleTimeout)")
		assert.Contains(t, err.Error(), "50ms")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
	})
}

// TestIdleTimeoutStreamStalls: a stream that stops after message_start
// (before any text) is ended by the idle timeout and retried; one that
// stalls after text reached the caller is not retried.
func TestIdleTimeoutStreamStalls(t *testing.T) {
	stall := func(events ...at.Event) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			at.WriteSSE(w, events...)
			<-r.Context().Done()
		}
	}
	srv := at.NewServer(t, testKey, stall(at.MessageStart(okUsage)), at.Reply("fine", okUsage))
	p, _ := newTestProvider(t, srv, WithIdleTimeout(50*time.Millisecond))
	resp, deltas, err := call(t, p, userRequest("hi"), true)
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text)
	assert.Equal(t, []string{"fine"}, deltas)
	assert.Len(t, srv.Requests(), 2)

	srv = at.NewServer(t, testKey, stall(at.MessageStart(okUsage), at.TextStart(0), at.TextDelta(0, "half")))
	p, _ = newTestProvider(t, srv, WithIdleTimeout(50*time.Millisecond))
	_, deltas, err = call(t, p, userRequest("hi"), true)
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Retryable)
	assert.Len(t, srv.Requests(), 1, "text was delivered: not retried")
	assert.Equal(t, []string{"half"}, deltas)
	assert.Contains(t, err.Error(), "idle timeout")
}

// TestRequestTimeout: a stream of pings (so the idle timeout is never
// reached) that never ends is ended by the request timeout.
func TestRequestTimeout(t *testing.T) {
	pings := func(w http.ResponseWriter, r *http.Request) {
		at.WriteSSE(w, at.MessageStart(okUsage))
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				at.WriteSSE(w, at.Ping())
			}
		}
	}
	srv := at.NewServer(t, testKey, pings)
	p, _ := newTestProvider(t, srv, WithTimeout(150*time.Millisecond), WithIdleTimeout(5*time.Second), WithMaxRetries(0))
	_, _, err := call(t, p, userRequest("hi"), true)
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Retryable)
	assert.Contains(t, err.Error(), "request timeout (WithTimeout)")
	assert.Contains(t, err.Error(), "150ms")
}

// TestTimeoutOptionsChecked: negative limits are configuration errors; the
// defaults are 10 minutes and 2 minutes; a blank key is refused.
func TestTimeoutOptionsChecked(t *testing.T) {
	for _, o := range []Option{WithTimeout(-time.Second), WithIdleTimeout(-time.Second)} {
		_, err := New(WithAPIKey("k"), WithModel("m"), o)
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "negative")
	}
	p, err := New(WithAPIKey("k"), WithModel("m"))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, p.limits.Request)
	assert.Equal(t, 2*time.Minute, p.limits.Idle)
	_, err = New(WithAPIKey("   "), WithModel("m"))
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "blank")
}

// TestNonJSONSuccessBody: a 200 whose body is an HTML page or other text
// is one error, not retried, that quotes the body's first line.
func TestNonJSONSuccessBody(t *testing.T) {
	page := func(contentType, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", contentType)
			_, _ = w.Write([]byte(body))
		}
	}
	for _, tt := range []struct{ name, contentType, body, quoted string }{
		{"html", "text/html; charset=utf-8", "<!DOCTYPE html>\n<html><body>Sign in</body></html>\n", "<!DOCTYPE html>"},
		{"plain text", "text/plain", "upstream connect error\nmore", "upstream connect error"},
	} {
		inModes(t, tt.name, false, func(t *testing.T, streamed bool) {
			srv := at.NewServer(t, testKey, page(tt.contentType, tt.body))
			p, waits := newTestProvider(t, srv)
			_, _, err := call(t, p, userRequest("hi"), streamed)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Len(t, srv.Requests(), 1, "not retried")
			assert.Empty(t, waits())
			assert.Contains(t, err.Error(), `"`+tt.quoted+`"`)
			assert.NotContains(t, err.Error(), "message_st")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// TestKeyRedactedBeforeCut: an error body that echoes the key across the
// 200-byte cut of its message shows no part of the key.
func TestKeyRedactedBeforeCut(t *testing.T) {
	for _, n := range []int{maxMessage - 12, maxMessage - 3, maxMessage - 1} {
		body := strings.Repeat("x", n) + testKey + " trailing text"
		srv := at.NewServer(t, testKey, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(body))
		})
		p, _ := newTestProvider(t, srv, WithMaxRetries(0))
		_, _, err := call(t, p, userRequest("hi"), false)
		require.Error(t, err)
		for k := 4; k <= len(testKey); k++ {
			require.NotContains(t, err.Error(), testKey[:k], "key at byte %d", n)
		}
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, strings.HasPrefix(e.Message, strings.Repeat("x", n)), e.Message)
	}
}

// TestBaseURLForms: the base URL works with and without "/v1" (the form
// provider/openai documents), and a blank ANTHROPIC_API_KEY is an error
// that names it.
func TestBaseURLForms(t *testing.T) {
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		srv := at.NewServer(t, testKey, at.Reply("fine", okUsage))
		p, _ := newTestProvider(t, srv, WithBaseURL(srv.URL+suffix))
		resp, _, err := call(t, p, userRequest("hi"), true)
		require.NoError(t, err, suffix)
		assert.Equal(t, "fine", resp.Message.Text)
	}
	t.Setenv("ANTHROPIC_API_KEY", "   ")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "ANTHROPIC_API_KEY is blank")
}
