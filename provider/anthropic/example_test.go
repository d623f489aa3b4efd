package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
)

func ExampleProvider_Complete() {
	// A stand-in for the Messages API: a cached conversation, streamed.
	srv := httptest.NewServer(anthropictest.Stream(anthropictest.TextReply("Hello, ",
		anthropictest.Usage{Input: 12, CacheRead: 2048, Output: 3}, "world!")...))
	defer srv.Close()

	p, err := anthropic.New(
		anthropic.WithBaseURL(srv.URL),
		anthropic.WithAPIKey("sk-ant-example"),
		anthropic.WithModel("claude-sonnet-5-5"),
		anthropic.WithHTTPClient(srv.Client()),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{Purpose: provider.PurposeTurn, System: "You are terse."}
	req.Messages = append(req.Messages, history.Message{ID: "1", Role: history.RoleUser, Text: "Say hello."})
	resp, err := p.Complete(context.Background(), req, func(delta string) { fmt.Printf("delta %q\n", delta) })
	if e := (*anthropic.Error)(nil); errors.As(err, &e) {
		fmt.Printf("failed: HTTP %d %s: %s\n", e.StatusCode, e.Type, e.Message)
		return
	}
	u := resp.Usage
	fmt.Printf("%s\ninput %d (cache read %d), output %d\n", resp.Message.Text, u.InputTokens, u.CacheReadTokens, u.OutputTokens)
	// Output:
	// delta "Hello, "
	// delta "world!"
	// Hello, world!
	// input 2060 (cache read 2048), output 3
}
