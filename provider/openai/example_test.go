package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai"
)

// A stand-in for an OpenAI-compatible server, streaming two deltas.
func exampleServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello, "}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"world!"},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}`,
			`[DONE]`,
		} {
			_, _ = io.WriteString(w, "data: "+data+"\n\n")
		}
	}))
}

func ExampleProvider_Complete() {
	srv := exampleServer()
	defer srv.Close()

	p, err := openai.New(
		openai.WithBaseURL(srv.URL+"/v1"),
		openai.WithModel("gpt-4o-mini"),
		openai.WithHTTPClient(srv.Client()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := p.Complete(context.Background(), &provider.Request{
		Purpose:  provider.PurposeTurn,
		System:   "You are terse.",
		Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "Say hello."}},
	}, func(delta string) { fmt.Printf("delta %q\n", delta) })

	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		fmt.Println("failed:", apiErr.StatusCode, apiErr.Message)
		return
	}
	fmt.Println(resp.Message.Text)
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// delta "Hello, "
	// delta "world!"
	// Hello, world!
	// 12 3
}
