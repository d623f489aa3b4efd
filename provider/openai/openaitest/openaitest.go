// Package openaitest builds the Chat Completions wire format for tests of
// code that talks to an OpenAI-compatible server: streamed chunks, the final
// usage chunk, tool-call fragments, and Server-Sent Events writing. Tests
// put these behind an httptest server:
//
//	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk("hi"),
//			openaitest.FinishChunk("stop"), openaitest.UsageChunk(3, 1), openaitest.Done)
//	}))
package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Done is the data line that ends a stream.
const Done = "[DONE]"

// Model is the model name the chunks carry.
const Model = "test-model"

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Chunk returns a chat.completion.chunk with the given choices.
func Chunk(choices ...map[string]any) string {
	if choices == nil {
		choices = []map[string]any{}
	}
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": Model,
		"choices": choices, "usage": nil,
	})
}

// RoleChunk is the first chunk of an assistant message.
func RoleChunk() string {
	return Chunk(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil})
}

// TextChunk carries a content delta.
func TextChunk(s string) string {
	return Chunk(map[string]any{"index": 0, "delta": map[string]any{"content": s}, "finish_reason": nil})
}

// ReasoningChunk carries a reasoning_content delta, as vLLM, Ollama and
// DeepSeek stream a reasoning model's thinking.
func ReasoningChunk(s string) string {
	return Chunk(map[string]any{"index": 0, "delta": map[string]any{"reasoning_content": s}, "finish_reason": nil})
}

// FinishChunk ends the choice with a finish reason.
func FinishChunk(reason string) string {
	return Chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason})
}

// UsageChunk is the final chunk without choices that stream_options
// include_usage asks for.
func UsageChunk(in, out int) string {
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": Model,
		"choices": []any{},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// ToolChunk is a fragment of tool call index; id and name are left out when
// empty, as in the later fragments of a call.
func ToolChunk(index int, id, name, args string) string {
	call := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		call["id"] = id
		call["type"] = "function"
	}
	if name != "" {
		call["function"].(map[string]any)["name"] = name
	}
	return Chunk(map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{call}}, "finish_reason": nil})
}

// WriteSSE writes each line as an SSE data event and flushes after each;
// pass Done as the last line to end the stream properly.
func WriteSSE(w http.ResponseWriter, lines ...string) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	fl, _ := w.(http.Flusher)
	for _, l := range lines {
		fmt.Fprintf(w, "data: %s\n\n", l)
		if fl != nil {
			fl.Flush()
		}
	}
}

// Embeddings returns a handler of POST /v1/embeddings that answers each
// request's input with embed's vectors, one "data" entry per text with
// its index (listed in reverse, as a server may list them), and 400 for a
// request that is not one.
func Embeddings(embed func(texts []string) [][]float32) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		vecs := embed(req.Input)
		data := make([]map[string]any, 0, len(vecs))
		for i := len(vecs) - 1; i >= 0; i-- {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vecs[i]})
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, mustJSON(map[string]any{"object": "list", "data": data, "model": req.Model, "usage": map[string]any{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}}))
	}
}
