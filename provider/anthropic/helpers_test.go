package anthropic

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey is the API key of every test provider; no error or log line may
// show it.
const testKey = "sk-ant-test-SECRET-0123456789"

// newTestProvider returns a provider talking to srv whose backoff waits
// are recorded instead of slept; waits returns them.
func newTestProvider(t *testing.T, srv *at.Server, opts ...Option) (p *Provider, waits func() []time.Duration) {
	t.Helper()
	p, err := New(append([]Option{
		WithBaseURL(srv.URL),
		WithAPIKey(testKey),
		WithModel("claude-test"),
		WithHTTPClient(srv.Client()),
		WithLogger(zaptest.NewLogger(t)),
	}, opts...)...)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []time.Duration
	)
	p.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		return ctx.Err()
	}
	return p, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func userRequest(text string) *provider.Request {
	return &provider.Request{
		Purpose:  provider.PurposeTurn,
		Messages: []history.Message{{ID: "u1", Role: history.RoleUser, Text: text}},
	}
}

// call runs Complete streamed or plain and returns the deltas it passed to
// onDelta (Complete calls onDelta on its own goroutine).
func call(t *testing.T, p *Provider, req *provider.Request, streamed bool) (*provider.Response, []string, error) {
	t.Helper()
	if !streamed {
		resp, err := p.Complete(t.Context(), req, nil)
		return resp, nil, err
	}
	var deltas []string
	resp, err := p.Complete(t.Context(), req, func(s string) { deltas = append(deltas, s) })
	return resp, deltas, err
}

// inModes runs f as subtests name/streamed and, unless the case exists
// only in a stream, name/plain.
func inModes(t *testing.T, name string, streamedOnly bool, f func(t *testing.T, streamed bool)) {
	for _, m := range bothModes {
		if !m.streamed && streamedOnly {
			continue
		}
		t.Run(name+"/"+m.name, func(t *testing.T) { f(t, m.streamed) })
	}
}

// bothModes are the two ways of calling Complete.
var bothModes = []struct {
	name     string
	streamed bool
}{{"streamed", true}, {"plain", false}}

// streamThen streams the events, then runs then.
func streamThen(then func(http.ResponseWriter), events ...at.Event) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at.WriteSSE(w, events...)
		then(w)
	}
}

func noKey(t *testing.T, s string) {
	t.Helper()
	require.NotContains(t, s, testKey)
	require.False(t, strings.Contains(s, strings.TrimPrefix(testKey, "sk-ant-")), "no part of the key: %s", s)
}
