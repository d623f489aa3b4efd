package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

func TestNewConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"no key", []Option{WithModel("m")}, "API key"},
		{"no model", []Option{WithAPIKey("k")}, "model"},
		{"max tokens", []Option{WithAPIKey("k"), WithModel("m"), WithMaxTokens(-1)}, "max tokens"},
		{"retries", []Option{WithAPIKey("k"), WithModel("m"), WithMaxRetries(-1)}, "max retries"},
		{"backoff", []Option{WithAPIKey("k"), WithModel("m"), WithBackoff(time.Second, time.Millisecond)}, "backoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	p, err := New(WithAPIKey("k"), WithModel("m"))
	require.NoError(t, err)
	assert.Equal(t, "m", p.Model())
	assert.Equal(t, DefaultMaxTokens, p.o.maxTokens)
	assert.Equal(t, DefaultMaxRetries, p.o.maxRetries)
	assert.Equal(t, DefaultBackoffBase, p.o.backoffBase)
	assert.Equal(t, DefaultBackoffMax, p.o.backoffMax)
	assert.False(t, p.o.noCache, "caching is on by default")
}

func TestFromEnv(t *testing.T) {
	t.Run("no key says what to set", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "")
		_, err := FromEnv()
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "set ANTHROPIC_API_KEY")
	})
	tests := []struct {
		name      string
		envModel  string // "-" means unset
		opts      []Option
		wantModel string
		wantAuth  string
	}{
		{name: "env", envModel: "claude-env", wantModel: "claude-env", wantAuth: "Bearer sk-ant-env"},
		{name: "default model when unset", envModel: "-", wantModel: DefaultEnvModel, wantAuth: "Bearer sk-ant-env"},
		{name: "default model when empty", envModel: "", wantModel: DefaultEnvModel, wantAuth: "Bearer sk-ant-env"},
		{name: "options override env", envModel: "claude-env", opts: []Option{WithModel("claude-opt")}, wantModel: "claude-opt", wantAuth: "Bearer sk-ant-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := at.NewServer(t, "sk-ant-env", at.Reply("ok", at.Usage{Input: 1, Output: 1}))
			t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
			t.Setenv("SESSIONKIT_MODEL", tt.envModel)
			if tt.envModel == "-" {
				require.NoError(t, os.Unsetenv("SESSIONKIT_MODEL"))
			}
			p, err := FromEnv(append([]Option{WithHTTPClient(srv.Client())}, tt.opts...)...)
			require.NoError(t, err)
			resp, err := p.Complete(t.Context(), userRequest("hi"), nil)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Message.Text)
			reqs := srv.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, tt.wantModel, reqs[0].Request.Model)
			assert.Equal(t, tt.wantAuth, reqs[0].Header.Get("Authorization"))
		})
	}
}

// TestStreamingText: every text delta reaches onDelta as soon as its event
// is decoded (the server sends the rest only after the first delta was
// seen), a ping in the stream is skipped, and the headers are those of the
// official SDK.
func TestStreamingText(t *testing.T) {
	firstSeen := make(chan struct{})
	var once sync.Once
	u := at.Usage{Input: 30, Output: 4}
	srv := at.NewServer(t, testKey, func(w http.ResponseWriter, r *http.Request) {
		at.WriteSSE(w, at.MessageStart(u), at.TextStart(0), at.Ping(), at.TextDelta(0, "Hel"))
		select {
		case <-firstSeen:
		case <-time.After(5 * time.Second):
			return
		case <-r.Context().Done():
			return
		}
		at.WriteSSE(w, at.TextDelta(0, "lo, "), at.Ping(), at.TextDelta(0, "world!"), at.BlockStop(0),
			at.MessageDelta("end_turn", 4), at.MessageStop())
	})
	p, _ := newTestProvider(t, srv)
	var deltas []string
	resp, err := p.Complete(t.Context(), userRequest("hi"), func(s string) {
		deltas = append(deltas, s)
		once.Do(func() { close(firstSeen) })
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo, ", "world!"}, deltas)
	assert.Equal(t, history.Message{Role: history.RoleAssistant, Text: "Hello, world!"}, resp.Message)
	assert.Equal(t, provider.Usage{InputTokens: 30, OutputTokens: 4}, resp.Usage)
	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	assert.True(t, reqs[0].Request.Stream)
	assert.Equal(t, "Bearer "+testKey, reqs[0].Header.Get("Authorization"))
	assert.Equal(t, at.APIVersion, reqs[0].Header.Get("anthropic-version"))
}

// TestToolCallsFromTheModel: tool_use blocks, streamed as input_json_delta
// fragments or sent whole, become the message's tool calls in block order;
// a call without input gets "{}".
func TestToolCallsFromTheModel(t *testing.T) {
	u := at.Usage{Input: 100, Output: 20}
	streamed := at.Stream(
		at.MessageStart(u),
		at.TextStart(0), at.TextDelta(0, "Let me look."), at.BlockStop(0),
		at.ToolStart(1, "toolu_1", "read_file"), at.InputJSONDelta(1, ""), at.InputJSONDelta(1, `{"pa`),
		at.Ping(), at.InputJSONDelta(1, `th":"a.go"}`), at.BlockStop(1),
		at.ToolStart(2, "toolu_2", "now"), at.BlockStop(2),
		at.MessageDelta("tool_use", 20), at.MessageStop(),
	)
	plain := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(at.MessageBody("tool_use", u, at.Text("Let me look."),
			at.ToolUse("toolu_1", "read_file", json.RawMessage(`{"path":"a.go"}`)),
			at.ToolUse("toolu_2", "now", json.RawMessage(`{}`)))))
	}
	want := history.Message{Role: history.RoleAssistant, Text: "Let me look.", ToolCalls: []history.ToolCall{
		{ID: "toolu_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
		{ID: "toolu_2", Name: "now", Arguments: json.RawMessage(`{}`)},
	}}
	for _, m := range bothModes {
		t.Run(m.name, func(t *testing.T) {
			h := plain
			if m.streamed {
				h = streamed
			}
			srv := at.NewServer(t, testKey, h)
			p, _ := newTestProvider(t, srv)
			resp, deltas, err := call(t, p, userRequest("look"), m.streamed)
			require.NoError(t, err)
			assert.Equal(t, want, resp.Message)
			assert.Equal(t, provider.Usage{InputTokens: 100, OutputTokens: 20}, resp.Usage)
			if m.streamed {
				assert.Equal(t, []string{"Let me look."}, deltas)
			}
		})
	}
}

// TestUsageWithCache: input_tokens excludes the cache figures, so
// InputTokens is their sum; the breakdown keeps each part. A message_delta
// that repeats the (cumulative) input figures replaces those of
// message_start.
func TestUsageWithCache(t *testing.T) {
	u := at.Usage{Input: 12, CacheWrite: 300, CacheRead: 40_000, Output: 25}
	want := provider.Usage{InputTokens: 40_312, OutputTokens: 25, CacheReadTokens: 40_000, CacheWriteTokens: 300}
	for _, m := range bothModes {
		t.Run(m.name, func(t *testing.T) {
			srv := at.NewServer(t, testKey, at.Reply("ok", u))
			p, _ := newTestProvider(t, srv)
			resp, _, err := call(t, p, userRequest("hi"), m.streamed)
			require.NoError(t, err)
			assert.Equal(t, want, resp.Usage)
			assert.Equal(t, 40_337, resp.Usage.Total(), "the trigger's figure is the full input plus output")
		})
	}
	t.Run("cumulative message_delta", func(t *testing.T) {
		delta := at.Event{Type: "message_delta", Data: `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},` +
			`"usage":{"input_tokens":13,"cache_creation_input_tokens":301,"cache_read_input_tokens":40001,"output_tokens":26}}`}
		srv := at.NewServer(t, testKey, at.Stream(at.MessageStart(u), at.TextStart(0), at.TextDelta(0, "ok"), at.BlockStop(0), delta, at.MessageStop()))
		p, _ := newTestProvider(t, srv)
		resp, err := p.Complete(t.Context(), userRequest("hi"), func(string) {})
		require.NoError(t, err)
		assert.Equal(t, provider.Usage{InputTokens: 40_315, OutputTokens: 26, CacheReadTokens: 40_001, CacheWriteTokens: 301}, resp.Usage)
	})
}

// TestContextOverflow: a 400 invalid_request_error "prompt is too long"
// is provider.ErrContextOverflow, not retried; other 400s are not overflow.
func TestContextOverflow(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		overflow bool
	}{
		{"prompt is too long", at.HTTPError(400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"), true},
		{"input and max_tokens", at.HTTPError(400, "invalid_request_error", "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or `max_tokens` and try again"), true},
		{"other 400", at.HTTPError(400, "invalid_request_error", "tools.0.name: String should match pattern"), false},
		{"413", at.HTTPError(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."), false},
	}
	for _, tt := range tests {
		for _, m := range bothModes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				srv := at.NewServer(t, testKey, tt.handler)
				p, waits := newTestProvider(t, srv)
				_, _, err := call(t, p, userRequest("hi"), m.streamed)
				require.Error(t, err)
				assert.Equal(t, tt.overflow, errors.Is(err, provider.ErrContextOverflow), "%v", err)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.False(t, e.Retryable)
				assert.Equal(t, "req_test", e.RequestID)
				assert.Len(t, srv.Requests(), 1, "not retried")
				assert.Empty(t, waits())
			})
		}
	}
}

// TestToolInputCutShort: a tool_use whose streamed input is not valid JSON
// (the model hit max_tokens inside it) is an error, never a message whose
// arguments would make every later request invalid.
func TestToolInputCutShort(t *testing.T) {
	srv := at.NewServer(t, testKey, at.Stream(at.MessageStart(at.Usage{Input: 5}),
		at.ToolStart(0, "toolu_1", "write_file"), at.InputJSONDelta(0, `{"path":"a.go","content":"pack`), at.BlockStop(0),
		at.MessageDelta("max_tokens", 100), at.MessageStop()))
	p, _ := newTestProvider(t, srv, WithMaxRetries(0))
	resp, _, err := call(t, p, userRequest("write it"), true)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.Contains(t, err.Error(), `tool_use "toolu_1": input is not valid JSON (stop reason "max_tokens")`)
}

// TestBaseURLChecked: a base URL that is not an absolute http or https URL
// is a configuration error of New, and of FromEnv naming the variable.
func TestBaseURLChecked(t *testing.T) {
	for _, bad := range []string{"not a url", "localhost:8080", "::", "ftp://host"} {
		_, err := New(WithModel("m"), WithAPIKey("k"), WithBaseURL(bad))
		require.ErrorIs(t, err, ErrConfig, bad)
		t.Setenv("ANTHROPIC_API_KEY", "k")
		t.Setenv("ANTHROPIC_BASE_URL", bad)
		_, err = FromEnv()
		require.ErrorIs(t, err, ErrConfig, bad)
		assert.Contains(t, err.Error(), "ANTHROPIC_BASE_URL", bad)
	}
}

// TestFromEnvMalformedBaseURL: an ANTHROPIC_BASE_URL that does not parse
// is said to be malformed, with why.
func TestFromEnvMalformedBaseURL(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("ANTHROPIC_BASE_URL", "http://[::1")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), `ANTHROPIC_BASE_URL "http://[::1" is not a valid URL (missing ']' in host)`)
}
