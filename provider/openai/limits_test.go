package openai

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// hang accepts the request and never answers (until the client goes away).
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// complete calls p streamed or not and returns the deltas seen.
func completeIn(t *testing.T, p *Provider, streamed bool) (*provider.Response, *collector, error) {
	t.Helper()
	c := &collector{}
	var onDelta func(string)
	if streamed {
		onDelta = c.add
	}
	resp, err := p.Complete(t.Context(), userReq("hi"), onDelta)
	return resp, c, err
}

func userReq(text string) *provider.Request {
	return &provider.Request{Purpose: provider.PurposeTurn, Messages: []history.Message{{ID: "u1", Role: history.RoleUser, Text: text}}}
}

// TestIdleTimeoutServerNeverAnswers: a server that accepts the connection
// and sends nothing ends each attempt after the idle timeout; the failure
// is retryable, retried, names the limit and is a timeout.
func TestIdleTimeoutServerNeverAnswers(t *testing.T) {
	for _, streamed := range []bool{true, false} {
		f := newFake(t, hang)
		p, _ := newProvider(t, f, WithIdleTimeout(50*time.Millisecond), WithMaxRetries(1))
		_, _, err := completeIn(t, p, streamed)
		require.Error(t, err)
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, e.Retryable)
		assert.Equal(t, 1, e.Retries)
		assert.Equal(t, 2, f.count(), "the timeout is retried")
		assert.Contains(t, err.Error(), "idle timeout (WithIdleTimeout)")
		assert.Contains(t, err.Error(), "50ms")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
		assert.NoError(t, t.Context().Err())
	}
}

// TestIdleTimeoutStreamStalls: a stream that stops sending after its first
// chunk (before any text) is ended by the idle timeout and retried, and the
// retry succeeds; one that stalls after text reached the caller is not
// retried and says why it ended.
func TestIdleTimeoutStreamStalls(t *testing.T) {
	stall := func(chunks ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			writeSSE(w, chunks...)
			hang(w, r)
		}
	}
	f := newFake(t, stall(roleChunk()), reply("fine"))
	p, _ := newProvider(t, f, WithIdleTimeout(50*time.Millisecond))
	resp, c, err := completeIn(t, p, true)
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text)
	assert.Equal(t, "fine", c.text())
	assert.Equal(t, 2, f.count())

	f = newFake(t, stall(roleChunk(), textChunk("half")))
	p, _ = newProvider(t, f, WithIdleTimeout(50*time.Millisecond))
	_, c, err = completeIn(t, p, true)
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Retryable)
	assert.Equal(t, 1, f.count(), "text was delivered: not retried")
	assert.Equal(t, "half", c.text())
	assert.Contains(t, err.Error(), "idle timeout")
}

// TestRequestTimeout: a server that keeps sending (so the idle timeout is
// never reached) but never finishes is ended by the request timeout, which
// the error names.
func TestRequestTimeout(t *testing.T) {
	trickle := func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, roleChunk())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				_, _ = w.Write([]byte(": keep-alive\n\n"))
				w.(http.Flusher).Flush()
			}
		}
	}
	f := newFake(t, trickle)
	p, _ := newProvider(t, f, WithTimeout(150*time.Millisecond), WithIdleTimeout(5*time.Second), WithMaxRetries(0))
	_, _, err := completeIn(t, p, true)
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Retryable)
	assert.Contains(t, err.Error(), "request timeout (WithTimeout)")
	assert.Contains(t, err.Error(), "150ms")
}

// TestTimeoutOptionsChecked: negative limits are configuration errors; the
// defaults are 10 minutes and 2 minutes.
func TestTimeoutOptionsChecked(t *testing.T) {
	for _, o := range []Option{WithTimeout(-time.Second), WithIdleTimeout(-time.Second)} {
		_, err := New(WithModel("m"), o)
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "negative")
	}
	p, err := New(WithModel("m"))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, p.limits.Request)
	assert.Equal(t, 2*time.Minute, p.limits.Idle)
	assert.Equal(t, DefaultTimeout, p.limits.Request)
	assert.Equal(t, DefaultIdleTimeout, p.limits.Idle)
}

// TestNonJSONSuccessBody: a 200 whose body is an HTML page (a proxy's, a
// captive portal's) or other text is one error, not retried, that quotes
// the body's first line; it is not taken for a truncated stream.
func TestNonJSONSuccessBody(t *testing.T) {
	page := "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Please sign in</body></html>\n"
	for _, tt := range []struct {
		name, contentType, body, quoted string
	}{
		{"html", "text/html; charset=utf-8", page, "<!DOCTYPE html>"},
		{"html without content type", "", "\n  <html>\n<body>oops</body></html>", "<html>"},
		{"plain text", "text/plain", "upstream connect error or disconnect/reset before headers\nmore", "upstream connect error or disconnect/reset before headers"},
	} {
		for _, streamed := range []bool{true, false} {
			t.Run(tt.name, func(t *testing.T) {
				f := newFake(t, respond(http.StatusOK, tt.contentType, tt.body))
				p, sl := newProvider(t, f)
				_, _, err := completeIn(t, p, streamed)
				require.Error(t, err)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.False(t, e.Retryable)
				assert.Equal(t, 1, f.count(), "not retried")
				assert.Empty(t, sl.all())
				assert.Contains(t, err.Error(), `"`+tt.quoted+`"`)
				assert.NotContains(t, err.Error(), "finish_reason")
				assert.NotContains(t, err.Error(), "\n")
			})
		}
	}
}

// TestKeyRedactedBeforeCut: an error body that echoes the key across the
// 200-byte cut of its message shows no part of the key.
func TestKeyRedactedBeforeCut(t *testing.T) {
	for _, at := range []int{maxMessage - 12, maxMessage - 3, maxMessage - 1} {
		body := strings.Repeat("x", at) + testKey + " trailing text"
		f := newFake(t, respond(http.StatusBadGateway, "text/plain", body))
		p, _ := newProvider(t, f, WithMaxRetries(0))
		_, _, err := completeIn(t, p, false)
		require.Error(t, err)
		for n := 4; n <= len(testKey); n++ {
			require.NotContains(t, err.Error(), testKey[:n], "key at byte %d", at)
		}
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.True(t, strings.HasPrefix(e.Message, strings.Repeat("x", at)))
	}
	// The same through the non-JSON success body's quoted line.
	body := strings.Repeat("x", maxMessage-5) + testKey + "\n"
	f := newFake(t, respond(http.StatusOK, "text/html", "<p>"+body))
	p, _ := newProvider(t, f)
	_, _, err := completeIn(t, p, true)
	require.Error(t, err)
	for n := 4; n <= len(testKey); n++ {
		require.NotContains(t, err.Error(), testKey[:n])
	}
}

// TestBaseURLForms: the base URL works with and without "/v1" (the form
// provider/anthropic documents), and a blank OPENAI_API_KEY is an error
// that names it.
func TestBaseURLForms(t *testing.T) {
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		f := newFake(t, reply("fine"))
		p, _ := newProvider(t, f, WithBaseURL(f.srv.URL+suffix))
		resp, _, err := completeIn(t, p, true)
		require.NoError(t, err, suffix)
		assert.Equal(t, "fine", resp.Message.Text)
		assert.Equal(t, "/v1/chat/completions", f.requests()[0].Path)
	}
	t.Setenv("OPENAI_API_KEY", "   ")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "OPENAI_API_KEY is blank")
}

// TestIdleTimeoutRestartsOnEveryByte: a stream that goes on for longer
// than the idle timeout, with shorter gaps between its chunks, is not
// ended by it: every byte restarts the limit.
func TestIdleTimeoutRestartsOnEveryByte(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, roleChunk())
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 15 {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				writeSSE(w, textChunk("x"))
			}
		}
		writeSSE(w, finishChunk("stop"), usageChunk(3, 15), "[DONE]")
	}
	f := newFake(t, slow)
	p, _ := newProvider(t, f, WithIdleTimeout(time.Second), WithMaxRetries(0))
	resp, _, err := completeIn(t, p, true)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 15), resp.Message.Text)
}
