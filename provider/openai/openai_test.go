package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

func userRequest(text string) *provider.Request {
	return &provider.Request{
		Purpose:  provider.PurposeTurn,
		Messages: []history.Message{{ID: "u1", Role: history.RoleUser, Text: text}},
	}
}

// modes runs a test streamed (with a collector) and not streamed.
var modes = []struct {
	name   string
	stream bool
}{{"stream", true}, {"plain", false}}

func complete(ctx context.Context, p *Provider, req *provider.Request, stream bool, c *collector) (*provider.Response, error) {
	if stream {
		return p.Complete(ctx, req, c.add)
	}
	return p.Complete(ctx, req, nil)
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{name: "model only", opts: []Option{WithModel("m")}},
		{name: "missing model", opts: nil, wantErr: true},
		{name: "empty model", opts: []Option{WithModel("")}, wantErr: true},
		{name: "negative retries", opts: []Option{WithModel("m"), WithMaxRetries(-1)}, wantErr: true},
		{name: "zero retries", opts: []Option{WithModel("m"), WithMaxRetries(0)}},
		{name: "zero backoff base", opts: []Option{WithModel("m"), WithBackoff(0, time.Second)}, wantErr: true},
		{name: "backoff max below base", opts: []Option{WithModel("m"), WithBackoff(time.Second, time.Millisecond)}, wantErr: true},
		{name: "negative temperature", opts: []Option{WithModel("m"), WithTemperature(-0.5)}, wantErr: true},
		{name: "zero temperature", opts: []Option{WithModel("m"), WithTemperature(0)}},
		{name: "nil option ignored", opts: []Option{nil, WithModel("m")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.opts...)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrConfig)
				assert.Nil(t, p)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "m", p.Model())
		})
	}
}

func TestNewDefaults(t *testing.T) {
	orig := &http.Client{Timeout: 3 * time.Second}
	p, err := New(WithModel("m"), WithHTTPClient(orig))
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxRetries, p.maxRetries)
	assert.Equal(t, 500*time.Millisecond, p.backoffBase)
	assert.Equal(t, 8*time.Second, p.backoffMax)
	assert.Nil(t, p.temperature)
	assert.Nil(t, orig.Transport, "the caller's client must not be modified")
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name      string
		envModel  string // "-" means unset
		envKey    string
		opts      []Option
		wantModel string
		wantAuth  string
	}{
		{name: "env", envModel: "env-model", envKey: "sk-env", wantModel: "env-model", wantAuth: "Bearer sk-env"},
		{name: "default model when unset", envModel: "-", envKey: "sk-env", wantModel: DefaultEnvModel, wantAuth: "Bearer sk-env"},
		{name: "default model when empty", envModel: "", envKey: "sk-env", wantModel: DefaultEnvModel, wantAuth: "Bearer sk-env"},
		{name: "options override env", envModel: "env-model", envKey: "sk-env",
			opts: []Option{WithModel("opt-model"), WithAPIKey("sk-opt")}, wantModel: "opt-model", wantAuth: "Bearer sk-opt"},
		{name: "no key no header", envModel: "env-model", envKey: "", wantModel: "env-model", wantAuth: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply("ok"))
			t.Setenv("OPENAI_BASE_URL", f.srv.URL+"/v1")
			t.Setenv("OPENAI_API_KEY", tt.envKey)
			t.Setenv("SESSIONKIT_MODEL", tt.envModel)
			if tt.envModel == "-" {
				require.NoError(t, unsetenv("SESSIONKIT_MODEL"))
			}
			p, err := FromEnv(append([]Option{WithHTTPClient(f.srv.Client())}, tt.opts...)...)
			require.NoError(t, err)
			resp, err := p.Complete(t.Context(), userRequest("hi"), nil)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Message.Text)
			reqs := f.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
			assert.Equal(t, tt.wantModel, reqs[0].Body["model"])
			assert.Equal(t, tt.wantAuth, reqs[0].Header.Get("Authorization"))
		})
	}
}

func TestCompleteNonStreaming(t *testing.T) {
	calls := []map[string]any{
		{"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a.go"}`}},
		{"id": "call_2", "type": "function", "function": map[string]any{"name": "now", "arguments": ""}},
	}
	tests := []struct {
		name    string
		body    string
		want    history.Message
		wantUse provider.Usage
	}{
		{
			name:    "text",
			body:    completion("Hello there.", nil, 42, 5),
			want:    history.Message{Role: history.RoleAssistant, Text: "Hello there."},
			wantUse: provider.Usage{InputTokens: 42, OutputTokens: 5},
		},
		{
			name: "tool calls, empty arguments become {}",
			body: completion("", calls, 100, 20),
			want: history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "call_2", Name: "now", Arguments: json.RawMessage(`{}`)},
			}},
			wantUse: provider.Usage{InputTokens: 100, OutputTokens: 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(http.StatusOK, "application/json", tt.body))
			p, _ := newProvider(t, f)
			resp, err := p.Complete(t.Context(), userRequest("hi"), nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Message)
			assert.Empty(t, resp.Message.ID)
			assert.True(t, resp.Message.CreatedAt.IsZero())
			assert.Equal(t, tt.wantUse, resp.Usage)
			assert.Equal(t, 1, f.count())
		})
	}
}

func TestStreamingTextDeltas(t *testing.T) {
	firstSeen := make(chan struct{})
	var once sync.Once
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, roleChunk(), textChunk("Hel"))
		// The rest is sent only once the client has forwarded the first
		// delta: a provider that buffers would never see it.
		select {
		case <-firstSeen:
		case <-time.After(5 * time.Second):
			return
		case <-r.Context().Done():
			return
		}
		writeSSE(w, textChunk("lo, "), textChunk("wor"), textChunk("ld!"), finishChunk("stop"), usageChunk(30, 4), "[DONE]")
	})
	p, _ := newProvider(t, f)
	var c collector
	resp, err := p.Complete(t.Context(), userRequest("hi"), func(s string) {
		c.add(s)
		once.Do(func() { close(firstSeen) })
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"Hel", "lo, ", "wor", "ld!"}, c.all())
	assert.Equal(t, history.Message{Role: history.RoleAssistant, Text: "Hello, world!"}, resp.Message)
	assert.Equal(t, provider.Usage{InputTokens: 30, OutputTokens: 4}, resp.Usage)
	assert.Equal(t, 34, resp.Usage.Total())
}

func TestStreamingToolCallsAssembled(t *testing.T) {
	f := newFake(t, sse(
		roleChunk(),
		textChunk("Let me look."),
		toolChunk(0, "call_a", "read_file", ""),
		toolChunk(1, "call_b", "search", `{"q":`),
		toolChunk(0, "", "", `{"pa`),
		toolChunk(1, "", "", `"go la`),
		toolChunk(0, "", "", `th":"a.go"}`),
		toolChunk(1, "", "", `ng"}`),
		toolChunk(2, "call_c", "now", ""),
		finishChunk("tool_calls"),
		usageChunk(50, 25),
	))
	p, _ := newProvider(t, f)
	var c collector
	resp, err := p.Complete(t.Context(), userRequest("find it"), c.add)
	require.NoError(t, err)
	assert.Equal(t, []string{"Let me look."}, c.all())
	assert.Equal(t, history.Message{
		Role: history.RoleAssistant,
		Text: "Let me look.",
		ToolCalls: []history.ToolCall{
			{ID: "call_a", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
			{ID: "call_b", Name: "search", Arguments: json.RawMessage(`{"q":"go lang"}`)},
			{ID: "call_c", Name: "now", Arguments: json.RawMessage(`{}`)},
		},
	}, resp.Message)
	for _, tc := range resp.Message.ToolCalls {
		assert.True(t, json.Valid(tc.Arguments), tc.ID)
	}
	assert.Equal(t, provider.Usage{InputTokens: 50, OutputTokens: 25}, resp.Usage)
}

func TestAssemblerWithoutIndex(t *testing.T) {
	// Some OpenAI-compatible servers omit the fragment index.
	a := newAssembler()
	frag := func(id, name, args string) {
		tc := toolCallFragment(id, name, args)
		a.add(&tc)
	}
	frag("c1", "one", `{"a":`)
	frag("", "", `1}`)
	frag("c2", "two", `{}`)
	require.Len(t, a.calls, 2)
	assert.Equal(t, toolCallParts{id: "c1", name: "one", args: []byte(`{"a":1}`)}, a.calls[0])
	assert.Equal(t, toolCallParts{id: "c2", name: "two", args: []byte(`{}`)}, a.calls[1])
}

func TestRequestBody(t *testing.T) {
	fullReq := &provider.Request{
		Purpose: provider.PurposeTurn,
		System:  "You are terse.",
		Summary: "The user asked about Go.",
		Messages: []history.Message{
			{ID: "1", Role: history.RoleUser, Text: "read a.go"},
			{ID: "2", Role: history.RoleAssistant, Text: "Reading.", ToolCalls: []history.ToolCall{
				{ID: "c1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				{ID: "c2", Name: "now"},
			}},
			{ID: "3", Role: history.RoleTool, ToolCallID: "c1", Text: "package a"},
			{ID: "4", Role: history.RoleTool, ToolCallID: "c2", Text: "noon"},
			{ID: "5", Role: history.RoleUser, Text: "and b.go", Steer: true},
		},
		Tools: []provider.ToolSpec{
			{Name: "read_file", Description: "Reads a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "now", Description: "Current time."},
		},
		MaxTokens: 128,
	}
	fullMessages := `[
		{"role":"system","content":"You are terse."},
		{"role":"system","content":` + mustJSON(provider.SummaryPreamble+"\n\n<summary>\nThe user asked about Go.\n</summary>") + `},
		{"role":"user","content":"read a.go"},
		{"role":"assistant","content":"Reading.","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.go\"}"}},
			{"id":"c2","type":"function","function":{"name":"now","arguments":"{}"}}]},
		{"role":"tool","content":"package a","tool_call_id":"c1"},
		{"role":"tool","content":"noon","tool_call_id":"c2"},
		{"role":"user","content":"and b.go"}
	]`
	fullTools := `[
		{"type":"function","function":{"name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
		{"type":"function","function":{"name":"now","description":"Current time.","parameters":{"type":"object","properties":{}}}}
	]`

	tests := []struct {
		name   string
		req    *provider.Request
		opts   []Option
		stream bool
		check  func(t *testing.T, body map[string]any, raw []byte, hdr http.Header)
	}{
		{
			name: "turn, streamed", req: fullReq, stream: true,
			check: func(t *testing.T, body map[string]any, _ []byte, hdr http.Header) {
				assert.Equal(t, "test-model", body["model"])
				assert.JSONEq(t, fullMessages, mustJSON(body["messages"]))
				assert.JSONEq(t, fullTools, mustJSON(body["tools"]))
				assert.EqualValues(t, 128, body["max_tokens"])
				assert.Equal(t, true, body["stream"])
				assert.Equal(t, map[string]any{"include_usage": true}, body["stream_options"])
				assert.NotContains(t, body, "temperature")
				assert.Equal(t, "Bearer "+testKey, hdr.Get("Authorization"))
				assert.Equal(t, "text/event-stream", hdr.Get("Accept"))
			},
		},
		{
			name: "empty tool output and empty reply get a stand-in content",
			req: &provider.Request{Purpose: provider.PurposeTurn, Messages: []history.Message{
				{ID: "1", Role: history.RoleUser, Text: "go"},
				{ID: "2", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: "now"}}},
				{ID: "3", Role: history.RoleTool, ToolCallID: "c1"},
				{ID: "4", Role: history.RoleAssistant},
			}},
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.JSONEq(t, `[
					{"role":"user","content":"go"},
					{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"now","arguments":"{}"}}]},
					{"role":"tool","content":"(empty)","tool_call_id":"c1"},
					{"role":"assistant","content":"(empty)"}
				]`, mustJSON(body["messages"]))
			},
		},
		{
			name: "turn, not streamed", req: fullReq,
			check: func(t *testing.T, body map[string]any, _ []byte, hdr http.Header) {
				assert.JSONEq(t, fullMessages, mustJSON(body["messages"]))
				assert.JSONEq(t, fullTools, mustJSON(body["tools"]))
				assert.Equal(t, false, body["stream"])
				assert.NotContains(t, body, "stream_options")
				assert.Equal(t, "Bearer "+testKey, hdr.Get("Authorization"))
			},
		},
		{
			name: "summary purpose sends no tools",
			req: &provider.Request{
				Purpose:  provider.PurposeSummary,
				System:   "Summarize.",
				Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "transcript"}},
				Tools:    fullReq.Tools,
			},
			stream: true,
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.NotContains(t, body, "tools")
				assert.NotContains(t, body, "max_tokens")
				assert.JSONEq(t, `[{"role":"system","content":"Summarize."},{"role":"user","content":"transcript"}]`, mustJSON(body["messages"]))
			},
		},
		{
			name: "summary without system prompt comes first",
			req: &provider.Request{
				Purpose:  provider.PurposeTurn,
				Summary:  "S",
				Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "next"}},
			},
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.JSONEq(t, `[{"role":"system","content":`+mustJSON(summaryMessage("S"))+`},{"role":"user","content":"next"}]`, mustJSON(body["messages"]))
				assert.NotContains(t, body, "tools")
			},
		},
		{
			name: "no temperature option sends none", req: userRequest("x"),
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.NotContains(t, body, "temperature")
			},
		},
		{
			name: "temperature zero is on the wire", req: userRequest("x"), opts: []Option{WithTemperature(0)},
			check: func(t *testing.T, body map[string]any, raw []byte, _ http.Header) {
				require.Contains(t, body, "temperature")
				temp, ok := body["temperature"].(float64)
				require.True(t, ok)
				assert.Greater(t, temp, 0.0)
				assert.Less(t, temp, 1e-30)
				assert.Contains(t, string(raw), `"temperature":1e-45`)
			},
		},
		{
			name: "temperature value", req: userRequest("x"), opts: []Option{WithTemperature(0.7)}, stream: true,
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.InDelta(t, 0.7, body["temperature"], 1e-6)
			},
		},
		{
			name: "reasoning model gets max_completion_tokens",
			req:  &provider.Request{Purpose: provider.PurposeTurn, Messages: userRequest("x").Messages, MaxTokens: 64},
			opts: []Option{WithModel("o3-mini")},
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.Equal(t, "o3-mini", body["model"])
				assert.EqualValues(t, 64, body["max_completion_tokens"])
				assert.NotContains(t, body, "max_tokens")
			},
		},
		{
			name: "the request's model wins over the configured one",
			req:  &provider.Request{Purpose: provider.PurposeTurn, Model: "gpt-picked", Messages: userRequest("x").Messages},
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.Equal(t, "gpt-picked", body["model"])
			},
		},
		{
			name: "a reasoning model named by the request gets max_completion_tokens",
			req:  &provider.Request{Purpose: provider.PurposeTurn, Model: "o3-mini", Messages: userRequest("x").Messages, MaxTokens: 64},
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.Equal(t, "o3-mini", body["model"])
				assert.EqualValues(t, 64, body["max_completion_tokens"])
				assert.NotContains(t, body, "max_tokens")
			},
		},
		{
			name: "no request model, the configured one", req: userRequest("x"),
			check: func(t *testing.T, body map[string]any, _ []byte, _ http.Header) {
				assert.Equal(t, "test-model", body["model"])
			},
		},
		{
			name: "no API key, no Authorization header", req: userRequest("x"), opts: []Option{WithAPIKey("")},
			check: func(t *testing.T, _ map[string]any, _ []byte, hdr http.Header) {
				assert.Empty(t, hdr.Get("Authorization"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply("ok"))
			p, _ := newProvider(t, f, tt.opts...)
			var c collector
			resp, err := complete(t.Context(), p, tt.req, tt.stream, &c)
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Message.Text)
			reqs := f.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, http.MethodPost, reqs[0].Method)
			assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
			tt.check(t, reqs[0].Body, reqs[0].Raw, reqs[0].Header)
		})
	}
}

func TestInvalidRequestIsNotSent(t *testing.T) {
	tests := []struct {
		name string
		req  *provider.Request
	}{
		{name: "nil request", req: nil},
		{name: "unknown role", req: &provider.Request{Messages: []history.Message{{ID: "1", Role: "system", Text: "x"}}}},
		{name: "tool parameters not JSON", req: &provider.Request{
			Messages: userRequest("x").Messages,
			Tools:    []provider.ToolSpec{{Name: "t", Parameters: json.RawMessage(`{nope`)}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply("ok"))
			p, _ := newProvider(t, f)
			resp, err := p.Complete(t.Context(), tt.req, nil)
			require.Error(t, err)
			assert.Nil(t, resp)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Zero(t, f.count())
		})
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(10 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name    string
		first   http.HandlerFunc
		minWait time.Duration
		maxWait time.Duration
	}{
		{name: "429 seconds", first: apiError(429, "slow down", "rate_limit_error", "rate_limit_exceeded", "Retry-After", "2"),
			minWait: 2 * time.Second, maxWait: 2 * time.Second},
		{name: "503 http date", first: apiError(503, "busy", "server_error", "", "Retry-After", future),
			minWait: 8 * time.Second, maxWait: 10 * time.Second},
		{name: "429 capped", first: apiError(429, "slow down", "", "", "Retry-After", "3600"),
			minWait: MaxRetryAfter, maxWait: MaxRetryAfter},
		{name: "429 without header uses backoff", first: apiError(429, "slow down", "", ""),
			minWait: 50 * time.Millisecond, maxWait: 100 * time.Millisecond},
		{name: "500 ignores Retry-After", first: apiError(500, "oops", "", "", "Retry-After", "30"),
			minWait: 50 * time.Millisecond, maxWait: 100 * time.Millisecond},
		{name: "429 invalid header uses backoff", first: apiError(429, "slow down", "", "", "Retry-After", "soon"),
			minWait: 50 * time.Millisecond, maxWait: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				f := newFake(t, tt.first, reply("done"))
				p, s := newProvider(t, f, WithBackoff(100*time.Millisecond, time.Second))
				var c collector
				resp, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
				require.NoError(t, err)
				assert.Equal(t, "done", resp.Message.Text)
				assert.Equal(t, 2, f.count())
				waits := s.all()
				require.Len(t, waits, 1)
				assert.GreaterOrEqual(t, waits[0], tt.minWait)
				assert.LessOrEqual(t, waits[0], tt.maxWait)
			})
		}
	}
}

func TestRetryServerErrorsThenSuccess(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := newFake(t,
				apiError(500, "internal", "server_error", ""),
				respond(503, "text/plain", "unavailable"),
				reply("third time lucky"),
			)
			p, s := newProvider(t, f, WithBackoff(100*time.Millisecond, time.Second))
			var c collector
			resp, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
			require.NoError(t, err)
			assert.Equal(t, "third time lucky", resp.Message.Text)
			assert.Equal(t, provider.Usage{InputTokens: 11, OutputTokens: 7}, resp.Usage)
			assert.Equal(t, 3, f.count())
			waits := s.all()
			require.Len(t, waits, 2)
			assert.GreaterOrEqual(t, waits[0], 50*time.Millisecond)
			assert.LessOrEqual(t, waits[0], 100*time.Millisecond)
			assert.GreaterOrEqual(t, waits[1], 100*time.Millisecond)
			assert.LessOrEqual(t, waits[1], 200*time.Millisecond)
			if m.stream {
				assert.Equal(t, []string{"third time lucky"}, c.all())
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name          string
		handler       http.HandlerFunc
		maxRetries    int
		wantStatus    int
		wantType      string
		wantCode      string
		wantMessage   string // substring of Message
		wantRetryable bool
		wantRequests  int
	}{
		{
			name:       "400 JSON error is not retried",
			handler:    apiError(400, "This model's maximum context length is 8192 tokens.", "invalid_request_error", "context_length_exceeded"),
			wantStatus: 400, wantType: "invalid_request_error", wantCode: "context_length_exceeded",
			wantMessage: "maximum context length", wantRequests: 1,
		},
		{
			name:       "401 is not retried",
			handler:    apiError(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
			wantStatus: 401, wantType: "invalid_request_error", wantCode: "invalid_api_key",
			wantMessage: "Incorrect API key", wantRequests: 1,
		},
		{
			name:       "404 plain text is not retried",
			handler:    respond(404, "text/plain", "404 page not found"),
			wantStatus: 404, wantMessage: "404 page not found", wantRequests: 1,
		},
		{
			name:       "numeric error code",
			handler:    respond(422, "application/json", `{"error":{"message":"bad","type":"invalid","code":422}}`),
			wantStatus: 422, wantType: "invalid", wantCode: "422", wantMessage: "bad", wantRequests: 1,
		},
		{
			name:       "500 retries exhausted",
			handler:    apiError(500, "The server had an error.", "server_error", ""),
			maxRetries: 2, wantStatus: 500, wantType: "server_error", wantMessage: "The server had an error.",
			wantRetryable: true, wantRequests: 3,
		},
		{
			name:       "HTML 502 body",
			handler:    respond(502, "text/html", "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>\n"),
			maxRetries: 1, wantStatus: 502, wantMessage: "<title>502 Bad Gateway</title>",
			wantRetryable: true, wantRequests: 2,
		},
		{
			name:       "429 retries exhausted",
			handler:    apiError(429, "Rate limit reached.", "requests", "rate_limit_exceeded", "Retry-After", "1"),
			maxRetries: 3, wantStatus: 429, wantType: "requests", wantCode: "rate_limit_exceeded",
			wantMessage: "Rate limit reached.", wantRetryable: true, wantRequests: 4,
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				f := newFake(t, tt.handler)
				p, s := newProvider(t, f, WithMaxRetries(tt.maxRetries))
				var c collector
				resp, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
				require.Error(t, err)
				assert.Nil(t, resp)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.wantStatus, e.StatusCode)
				assert.Equal(t, tt.wantType, e.Type)
				assert.Equal(t, tt.wantCode, e.Code)
				assert.Contains(t, e.Message, tt.wantMessage)
				assert.Equal(t, tt.wantRetryable, e.Retryable)
				assert.Equal(t, tt.maxRetries, e.Retries)
				assert.Equal(t, tt.wantRequests, f.count())
				assert.Len(t, s.all(), tt.wantRequests-1)
				assert.Contains(t, err.Error(), tt.wantMessage)
				assert.Empty(t, c.all())
			})
		}
	}
}

func TestAPIKeyNeverInError(t *testing.T) {
	echo := func(status int, contentType string, asJSON bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			body := "<html>you sent " + auth + "</html>"
			if asJSON {
				body = mustJSON(map[string]any{"error": map[string]any{
					"message": "Incorrect API key provided: " + auth, "type": "invalid_request_error " + auth, "code": auth,
				}})
			}
			respond(status, contentType, body)(w, r)
		}
	}
	streamEcho := func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, mustJSON(map[string]any{"error": map[string]any{"message": "key " + r.Header.Get("Authorization"), "type": "server_error"}}))
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		stream  bool
	}{
		{name: "JSON 401", handler: echo(401, "application/json", true)},
		{name: "HTML 400", handler: echo(400, "text/html", false)},
		{name: "JSON 500 after retries", handler: echo(500, "application/json", true)},
		{name: "HTML 503 after retries streamed", handler: echo(503, "text/html", false), stream: true},
		{name: "error inside the stream", handler: streamEcho, stream: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler)
			p, _ := newProvider(t, f, WithMaxRetries(2))
			var c collector
			_, err := complete(t.Context(), p, userRequest("hi"), tt.stream, &c)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), testKey)
			assert.Contains(t, err.Error(), redactedText, "the echoed key must show as redacted")
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.NotContains(t, e.Message, testKey)
			assert.NotContains(t, e.Type, testKey)
			assert.NotContains(t, e.Code, testKey)
			if e.Err != nil {
				assert.NotContains(t, e.Err.Error(), testKey)
			}
		})
	}
}

func TestStreamConnectionResetAfterDeltas(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		writeSSE(w, roleChunk(), textChunk("partial "), textChunk("answer"))
		reset(w)
	}, reply("must not be reached"))
	p, s := newProvider(t, f)
	var c collector
	resp, err := p.Complete(t.Context(), userRequest("hi"), c.add)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.Equal(t, "partial answer", c.text())
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Zero(t, e.Retries)
	assert.True(t, e.Retryable, "a reset is transient, but it is not retried after deltas")
	assert.Zero(t, e.StatusCode)
	assert.Equal(t, 1, f.count())
	assert.Empty(t, s.all())
}

func TestConnectionResetBeforeDeltasIsRetried(t *testing.T) {
	tests := []struct {
		name  string
		first http.HandlerFunc
	}{
		{name: "reset before headers", first: func(w http.ResponseWriter, _ *http.Request) { reset(w) }},
		{name: "reset after the role chunk", first: func(w http.ResponseWriter, _ *http.Request) {
			writeSSE(w, roleChunk())
			reset(w)
		}},
	}
	for _, tt := range tests {
		for _, m := range modes {
			if !m.stream && strings.Contains(tt.name, "role chunk") {
				continue
			}
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				f := newFake(t, tt.first, reply("recovered"))
				p, s := newProvider(t, f)
				var c collector
				resp, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
				require.NoError(t, err)
				assert.Equal(t, "recovered", resp.Message.Text)
				assert.Equal(t, 2, f.count())
				assert.Len(t, s.all(), 1)
			})
		}
	}
}

func TestDialErrorRetriesExhausted(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := newFake(t, reply("unreachable"))
			p, s := newProvider(t, f, WithMaxRetries(2))
			f.srv.Close() // connections are now refused
			var c collector
			_, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.True(t, e.Retryable)
			assert.Equal(t, 2, e.Retries)
			assert.Zero(t, e.StatusCode)
			assert.Len(t, s.all(), 2)
			assert.Contains(t, err.Error(), "after 2 retries")
		})
	}
}

func TestStreamTruncated(t *testing.T) {
	tests := []struct {
		name         string
		handlers     []http.HandlerFunc
		maxRetries   int
		wantText     string // "" = error expected
		wantDeltas   string
		wantMissing  string
		wantRequests int
		wantRetries  int
	}{
		{
			name:         "deltas then end without finish_reason",
			handlers:     []http.HandlerFunc{sseNoDone(roleChunk(), textChunk("abc")), reply("never")},
			maxRetries:   3,
			wantDeltas:   "abc",
			wantMissing:  "finish_reason",
			wantRequests: 1,
		},
		{
			name:         "deltas, [DONE] but no finish_reason",
			handlers:     []http.HandlerFunc{sse(roleChunk(), textChunk("abc"), usageChunk(1, 1)), reply("never")},
			maxRetries:   3,
			wantDeltas:   "abc",
			wantMissing:  "finish_reason",
			wantRequests: 1,
		},
		{
			name:         "finish_reason without usage chunk",
			handlers:     []http.HandlerFunc{sse(roleChunk(), textChunk("abc"), finishChunk("stop")), reply("never")},
			maxRetries:   3,
			wantDeltas:   "abc",
			wantMissing:  "usage chunk",
			wantRequests: 1,
		},
		{
			name:         "truncated before any delta is retried",
			handlers:     []http.HandlerFunc{sseNoDone(roleChunk(), toolChunk(0, "c1", "f", `{"a`)), reply("whole")},
			maxRetries:   3,
			wantText:     "whole",
			wantDeltas:   "whole",
			wantRequests: 2,
		},
		{
			name:         "empty 200 body is retried until exhausted",
			handlers:     []http.HandlerFunc{respond(200, "text/event-stream", "")},
			maxRetries:   2,
			wantMissing:  "finish_reason",
			wantRequests: 3,
			wantRetries:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handlers...)
			p, _ := newProvider(t, f, WithMaxRetries(tt.maxRetries))
			var c collector
			resp, err := p.Complete(t.Context(), userRequest("hi"), c.add)
			assert.Equal(t, tt.wantDeltas, c.text())
			assert.Equal(t, tt.wantRequests, f.count())
			if tt.wantText != "" {
				require.NoError(t, err)
				assert.Equal(t, tt.wantText, resp.Message.Text)
				assert.Empty(t, resp.Message.ToolCalls, "fragments of the failed attempt must not leak")
				return
			}
			require.Error(t, err)
			assert.Nil(t, resp)
			require.ErrorIs(t, err, errTruncated)
			assert.Contains(t, err.Error(), tt.wantMissing)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.True(t, e.Retryable)
			assert.Equal(t, tt.wantRetries, e.Retries)
		})
	}
}

func TestStreamBadData(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantDeltas  string
		wantMessage string
		wantType    string
	}{
		{
			name:       "invalid JSON in a data line",
			handler:    sse(roleChunk(), textChunk("ok so far"), `{"id":"x","choices":[{"index":0,"delta":{"content":"br`),
			wantDeltas: "ok so far",
		},
		{
			name:    "invalid JSON before any delta is not retried",
			handler: sse(`{not json}`),
		},
		{
			name: "error object inside the stream",
			handler: sseNoDone(roleChunk(),
				`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`),
			wantMessage: "The server had an error while processing your request.",
			wantType:    "server_error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handler, reply("never"))
			p, s := newProvider(t, f)
			var c collector
			resp, err := p.Complete(t.Context(), userRequest("hi"), c.add)
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.Equal(t, tt.wantDeltas, c.text())
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Zero(t, e.StatusCode)
			assert.Zero(t, e.Retries)
			assert.Equal(t, tt.wantMessage, e.Message)
			assert.Equal(t, tt.wantType, e.Type)
			assert.Empty(t, e.Code, `"code": null is no code`)
			assert.Equal(t, 1, f.count())
			assert.Empty(t, s.all())
			if tt.wantMessage == "" {
				var syn *json.SyntaxError
				assert.ErrorAs(t, err, &syn)
			}
		})
	}
}

func TestNonStreamingBadBody(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		wantRetryable bool
		wantRequests  int
	}{
		{name: "no choices", body: `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}`, wantRequests: 1},
		{name: "not JSON", body: `<html>hello</html>`, wantRequests: 1},
		{name: "cut short", body: `{"id":"x","choices":[{"index":0,"message":{"role":"assist`, wantRetryable: true, wantRequests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(200, "application/json", tt.body))
			p, _ := newProvider(t, f, WithMaxRetries(1))
			resp, err := p.Complete(t.Context(), userRequest("hi"), nil)
			require.Error(t, err)
			assert.Nil(t, resp)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.wantRetryable, e.Retryable)
			assert.Equal(t, tt.wantRequests, f.count())
		})
	}
}

func TestContextCancelledDuringRequest(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			arrived := make(chan struct{})
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if m.stream {
					writeSSE(w, roleChunk(), textChunk("thinking"))
				}
				close(arrived)
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			p, s := newProvider(t, f)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-arrived
				cancel()
			}()
			var c collector
			start := time.Now()
			resp, err := complete(ctx, p, userRequest("hi"), m.stream, &c)
			assert.Less(t, time.Since(start), 5*time.Second)
			require.Error(t, err)
			assert.Nil(t, resp)
			assert.ErrorIs(t, err, context.Canceled)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.False(t, e.Retryable)
			assert.Equal(t, 1, f.count())
			assert.Empty(t, s.all())
		})
	}
}

func TestContextDoneDuringBackoff(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func(parent context.Context, sleeping <-chan struct{}) (context.Context, context.CancelFunc)
		wantErr error
	}{
		{
			name: "cancelled",
			ctx: func(parent context.Context, sleeping <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(parent)
				go func() {
					<-sleeping
					cancel()
				}()
				return ctx, cancel
			},
			wantErr: context.Canceled,
		},
		{
			name: "deadline",
			ctx: func(parent context.Context, _ <-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(parent, 300*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				f := newFake(t, apiError(503, "busy", "server_error", "", "Retry-After", "30"), reply("too late"))
				p, _ := newProvider(t, f)
				sleeping := make(chan struct{})
				var waited time.Duration
				p.sleep = func(ctx context.Context, d time.Duration) error {
					waited = d
					close(sleeping)
					return sleepCtx(ctx, d) // the real, timer-based sleep
				}
				ctx, cancel := tt.ctx(t.Context(), sleeping)
				defer cancel()
				var c collector
				start := time.Now()
				resp, err := complete(ctx, p, userRequest("hi"), m.stream, &c)
				assert.Less(t, time.Since(start), 5*time.Second)
				require.Error(t, err)
				assert.Nil(t, resp)
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, 30*time.Second, waited)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Zero(t, e.Retries)
				assert.Equal(t, 1, f.count())
			})
		}
	}
}

func TestContextAlreadyCancelled(t *testing.T) {
	cause := errors.New("session closed")
	tests := []struct {
		name      string
		cancel    func(ctx context.Context) context.Context
		wantCause bool
	}{
		{name: "plain cancel", cancel: func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return ctx
		}},
		{name: "cancel with cause", cancel: func(ctx context.Context) context.Context {
			ctx, cancel := context.WithCancelCause(ctx)
			cancel(cause)
			return ctx
		}, wantCause: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply("no"))
			p, _ := newProvider(t, f)
			_, err := p.Complete(tt.cancel(t.Context()), userRequest("hi"), nil)
			require.ErrorIs(t, err, context.Canceled)
			if tt.wantCause {
				assert.ErrorIs(t, err, cause)
			}
			assert.Zero(t, f.count())
		})
	}
}

func TestErrorBodyCutShortKeepsStatus(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "1000")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":{"mess`))
				w.(http.Flusher).Flush()
				reset(w)
			}, reply("second try"))
			p, s := newProvider(t, f, WithMaxRetries(0))
			var c collector
			_, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, http.StatusServiceUnavailable, e.StatusCode)
			assert.True(t, e.Retryable)
			assert.Equal(t, 1, f.count())
			assert.Empty(t, s.all())
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	f := newFake(t, reply("same"))
	p, _ := newProvider(t, f)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			var c collector
			resp, err := complete(t.Context(), p, userRequest("hi"), i%2 == 0, &c)
			if err == nil && resp.Message.Text != "same" {
				err = errors.New("wrong text " + resp.Message.Text)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, i)
	}
	assert.Equal(t, 8, f.count())
}

// TestFromEnvNothingSet: with neither a key nor a base URL FromEnv fails
// and says what to set, instead of sending the first request to OpenAI's
// API without credentials; an option that supplies either is enough.
func TestFromEnvNothingSet(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	p, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Nil(t, p)
	assert.Contains(t, err.Error(), "set OPENAI_API_KEY")
	assert.Contains(t, err.Error(), "OPENAI_BASE_URL")
	_, err = FromEnv(WithBaseURL("http://127.0.0.1:1/v1"))
	require.NoError(t, err)
	_, err = FromEnv(WithAPIKey("sk"))
	require.NoError(t, err)
}

// TestBaseURLChecked: a base URL that is not an absolute http or https URL
// is a configuration error of New, and of FromEnv naming the variable.
func TestBaseURLChecked(t *testing.T) {
	for _, bad := range []string{"not a url", "localhost:8080/v1", "/v1", "ftp://host/v1", "http://"} {
		_, err := New(WithModel("m"), WithBaseURL(bad))
		require.ErrorIs(t, err, ErrConfig, bad)
		t.Setenv("OPENAI_BASE_URL", bad)
		_, err = FromEnv()
		require.ErrorIs(t, err, ErrConfig, bad)
		assert.Contains(t, err.Error(), "OPENAI_BASE_URL", bad)
	}
	_, err := New(WithModel("m"), WithBaseURL("https://example.test/v1"))
	require.NoError(t, err)
}

// TestRetryIsReported: every retry is reported through the ctx
// (provider.ReportRetry) before its wait, with its number, the wait and
// whether the server rate-limited the request (429).
func TestRetryIsReported(t *testing.T) {
	tests := []struct {
		name    string
		first   http.HandlerFunc
		limited bool
	}{
		{"429", apiError(429, "slow down", "rate_limit_error", "rate_limit_exceeded", "Retry-After", "2"), true},
		{"500", apiError(500, "oops", "", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.first, reply("done"))
			p, s := newProvider(t, f, WithBackoff(100*time.Millisecond, time.Second))
			var got []provider.Retry
			ctx := provider.WithRetryReports(t.Context(), func(r provider.Retry) { got = append(got, r) })
			_, err := p.Complete(ctx, userRequest("hi"), nil)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, 1, got[0].Retry)
			assert.Equal(t, DefaultMaxRetries, got[0].MaxRetries)
			assert.Equal(t, s.all(), []time.Duration{got[0].Wait})
			assert.Equal(t, tt.limited, got[0].RateLimited)
			assert.Error(t, got[0].Err)
		})
	}
}

// TestImages: the provider takes images by default; WithImages(false) and
// SESSIONKIT_OPENAI_IMAGES=false make it take none, so a session refuses
// an image and an agent does not offer them; a value that is no boolean
// is a configuration error naming the variable.
func TestImages(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://localhost:1/v1")
	t.Setenv("OPENAI_API_KEY", "")
	for _, tt := range []struct {
		env  string // "" leaves the variable unset
		opts []Option
		want bool
	}{
		{want: true},
		{opts: []Option{WithImages(false)}, want: false},
		{env: "false", want: false},
		{env: " 0 ", want: false},
		{env: "true", want: true},
		{env: "false", opts: []Option{WithImages(true)}, want: true}, // options override the environment
	} {
		t.Setenv(ImagesVar, tt.env)
		p, err := FromEnv(tt.opts...)
		require.NoError(t, err, "env %q", tt.env)
		assert.Equal(t, tt.want, provider.TakesImages(p), "env %q, %d options", tt.env, len(tt.opts))
		assert.Equal(t, tt.want, p.TakesImage("image/png"))
		assert.False(t, p.TakesImage("image/tiff"), "never a type Chat Completions does not take")
	}
	t.Setenv(ImagesVar, "maybe")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), ImagesVar)
}

// TestFromEnvMalformedBaseURL: an OPENAI_BASE_URL that does not parse is
// said to be malformed, with why, not called "not an http:// URL".
func TestFromEnvMalformedBaseURL(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "http://[::1")
	_, err := FromEnv()
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), `OPENAI_BASE_URL: `)
	assert.Contains(t, err.Error(), `"http://[::1" is not a valid URL (missing ']' in host)`)
}
