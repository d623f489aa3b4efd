package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
)

// TestUsageCachedTokens: prompt_tokens already counts the cached tokens, so
// it is InputTokens as it is; prompt_tokens_details.cached_tokens is the
// cache-read part of it.
func TestUsageCachedTokens(t *testing.T) {
	usage := map[string]any{
		"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230,
		"prompt_tokens_details": map[string]any{"cached_tokens": 1024, "audio_tokens": 0},
	}
	handler := func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body.Stream {
			last := mustJSON(map[string]any{
				"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "test-model",
				"choices": []any{}, "usage": usage,
			})
			sse(roleChunk(), textChunk("ok"), finishChunk("stop"), last)(w, r)
			return
		}
		respond(http.StatusOK, "application/json", mustJSON(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
			"usage":   usage,
		}))(w, r)
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f := newFake(t, handler)
			p, _ := newProvider(t, f)
			var c collector
			resp, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
			require.NoError(t, err)
			assert.Equal(t, provider.Usage{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 1024}, resp.Usage)
			assert.Equal(t, 1230, resp.Usage.Total(), "the trigger's figure is not counted twice")
		})
	}
}

// TestContextLengthExceededIsOverflow: the context_length_exceeded code is
// provider.ErrContextOverflow; other 400s are not.
func TestContextLengthExceededIsOverflow(t *testing.T) {
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		overflow bool
	}{
		{"context_length_exceeded", apiError(400, "This model's maximum context length is 8192 tokens.", "invalid_request_error", "context_length_exceeded"), true},
		{"invalid_api_key", apiError(401, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"), false},
		{"other 400", apiError(400, "bad tool schema", "invalid_request_error", "invalid_value"), false},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) {
				f := newFake(t, tt.handler)
				p, _ := newProvider(t, f)
				var c collector
				_, err := complete(t.Context(), p, userRequest("hi"), m.stream, &c)
				require.Error(t, err)
				assert.Equal(t, tt.overflow, errors.Is(err, provider.ErrContextOverflow), "%v", err)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.False(t, e.Retryable)
				assert.Equal(t, 1, f.count(), "not retried")
				assert.NotContains(t, err.Error(), provider.ErrContextOverflow.Error(), "the text stays the server's")
			})
		}
	}
}

// TestServerOverflowBodies: the bodies OpenAI, vLLM, llama.cpp's server and
// Ollama send for a request longer than the model's context are all
// provider.ErrContextOverflow, and are not retried; look-alike errors are
// not.
func TestServerOverflowBodies(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		overflow bool
	}{
		{"openai", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true},
		{"vllm top-level error object", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, true},
		{"vllm max model length", 400, `{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that max_model_len is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`, true},
		{"llama.cpp exceed_context_size_error", 400, `{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`, true},
		{"llama.cpp older", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"invalid_request_error"}}`, true},
		{"ollama", 500, `{"error":{"message":"the input length exceeds the context length","type":"api_error","param":null,"code":null}}`, true},
		{"ollama older runner", 400, `{"error":{"message":"prompt too long; exceeded max context length by 12 tokens","type":"invalid_request_error","param":null,"code":null}}`, true},
		{"rate limit", 429, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, false},
		{"other 400", 400, `{"error":{"message":"Invalid schema for function 'f'","type":"invalid_request_error","param":null,"code":"invalid_function_parameters"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, respond(tt.status, "application/json", tt.body))
			p, _ := newProvider(t, f)
			var c collector
			_, err := complete(t.Context(), p, userRequest("hi"), true, &c)
			require.Error(t, err)
			assert.Equal(t, tt.overflow, errors.Is(err, provider.ErrContextOverflow), "%v", err)
			if tt.overflow {
				assert.Equal(t, 1, f.count(), "an overflow is not retried")
			}
		})
	}
}
