//go:build demotools

package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sessionkit/sessionkit/session"
)

// The demo tools echo and fail, built in only with the demotools build tag
// (go build -tags demotools ./examples/acp-agent): the interop, crash and
// scale-out suites and examples/remote use them to make a turn call a tool
// that succeeds and one that fails, independent of any directory. A build
// without the tag offers the model the workspace tools only.
func init() {
	demoTools = []session.Tool{
		{
			Name:        "echo",
			Description: "Returns its text argument.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Run: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ Text string }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				return in.Text, nil
			},
		},
		{
			Name:        "fail",
			Description: "Always fails (to show a failed tool call).",
			Run: func(context.Context, json.RawMessage) (string, error) {
				return "", errors.New("this tool always fails")
			},
		},
	}
}
