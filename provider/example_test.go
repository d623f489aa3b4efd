package provider_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// userRequests is a minimal custom provider. Like an adapter for any model
// API, it reads only the documented fields of a request (System, Summary,
// Messages) and knows nothing about compaction. Its "model" answers with the
// requests the user made in the conversation it is sent.
type userRequests struct{}

func (userRequests) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("userRequests: %w", err)
	}
	var asked []string
	for _, m := range req.Messages {
		for line := range strings.SplitSeq(m.Text, "\n") {
			if text, ok := strings.CutPrefix(line, "[user] "); ok {
				asked = append(asked, "- "+text)
			}
		}
	}
	reply := "The user asked:\n" + strings.Join(asked, "\n")
	if onDelta != nil {
		onDelta(reply)
	}
	return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: reply}}, nil
}

// A custom provider summarizes a compaction without knowing about it: the
// summary request is an ordinary request, with the summarizer's prompt in
// System and the conversation to summarize, rendered as a transcript, in
// Messages.
func Example_customProvider() {
	c := &compact.Composer{Provider: userRequests{}}
	sum, err := c.Summarize(context.Background(), compact.Input{Prefix: []history.Message{
		{ID: "1", Role: history.RoleUser, Text: "Build a CLI called falcon."},
		{ID: "2", Role: history.RoleAssistant, Text: "Done: cmd/falcon/main.go."},
		{ID: "3", Role: history.RoleUser, Text: "Add a --verbose flag."},
		{ID: "4", Role: history.RoleAssistant, Text: "Added."},
	}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Text)
	// Output:
	// The user asked:
	// - Build a CLI called falcon.
	// - Add a --verbose flag.
}
