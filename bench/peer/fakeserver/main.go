// Command fakeserver is an OpenAI-compatible Chat Completions server for the
// peer benchmark: every request to /v1/chat/completions gets the same fixed
// summary at once, streamed as SSE with a final usage chunk when the request
// asks for a stream, as one JSON response otherwise.
//
//	fakeserver --port 8931
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"

	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
)

// Summary is the fixed answer to every request.
const Summary = "Summary: the user and the assistant exchanged numbered messages made of NATO alphabet words; no decisions, files or open tasks."

func main() {
	port := flag.Int("port", 8931, "port to listen on (127.0.0.1)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", chat)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fakeserver listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

func chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	in := len(body) / 4
	out := len(Summary) / 4
	if req.Stream {
		openaitest.WriteSSE(w,
			openaitest.RoleChunk(),
			openaitest.TextChunk(Summary),
			openaitest.FinishChunk("stop"),
			openaitest.UsageChunk(in, out),
			openaitest.Done)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": openaitest.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": Summary}}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}
