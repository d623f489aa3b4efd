package offline_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
)

func ExampleProvider_Complete() {
	p := offline.New(offline.WithDeltaSize(2))
	resp, err := p.Complete(context.Background(), &provider.Request{
		Purpose: provider.PurposeTurn,
		Messages: []history.Message{
			{ID: "1", Role: history.RoleUser, Text: "We will deploy on Tuesday."},
			{ID: "2", Role: history.RoleAssistant, Text: "Understood."},
			{ID: "3", Role: history.RoleUser, Text: "When do we deploy?"},
		},
	}, func(delta string) { fmt.Printf("[%s]", delta) })
	if err != nil {
		panic(err)
	}
	fmt.Println()
	fmt.Println(resp.Message.Text)
	fmt.Println(resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// [Earlier you ][said: "We ][will deploy ][on Tuesday."]
	// Earlier you said: "We will deploy on Tuesday."
	// 15 12
}

func ExampleProvider_Complete_toolCall() {
	p := offline.New()
	resp, err := p.Complete(context.Background(), &provider.Request{
		Purpose: provider.PurposeTurn,
		Tools: []provider.ToolSpec{{
			Name:       "read_file",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		}},
		Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "Please read file go.mod"}},
	}, nil)
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.Message.Text)
	fmt.Println(call.Name, string(call.Arguments))
	// Output:
	// Calling read_file.
	// read_file {"path":"go.mod"}
}

func ExampleProvider_Complete_summary() {
	input := `<previous-summary>
## Summary of earlier conversation
### User requests
- Build a CLI called falcon in Go.
</previous-summary>

<transcript>
[user] Add a --verbose flag to cmd/falcon/main.go.
[assistant] I will use log/slog because it is in the standard library.
[assistant → tool read_file] {"path":"cmd/falcon/main.go"}
[tool read_file] package main
[assistant] Done: the flag defaults to false.
</transcript>`
	p := offline.New()
	resp, err := p.Complete(context.Background(), &provider.Request{
		Purpose:  provider.PurposeSummary,
		System:   "Summarize the conversation so far.",
		Messages: []history.Message{{ID: "s", Role: history.RoleUser, Text: input}},
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text)
	// Output:
	// ## Summary of earlier conversation
	// ### User requests
	// - Add a --verbose flag to cmd/falcon/main.go.
	// ### Decisions and facts
	// - I will use log/slog because it is in the standard library.
	// ### Tools used
	// - read_file({"path":"cmd/falcon/main.go"})
	// ### Earlier summary
	// - (request) Build a CLI called falcon in Go.
}

func ExampleCountTokens() {
	fmt.Println(offline.CountTokens(""), offline.CountTokens("hi"), offline.CountTokens("hello, world"))
	// Output: 0 1 3
}
