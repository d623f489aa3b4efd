//go:build demotools

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
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

// The faults a demotools build injects when its environment asks, so that
// the interop suites can make the provider fail the way a real one does:
//
//   - SESSIONKIT_DEMO_SUMMARY_FAILS=1: every summary request fails (so
//     automatic compaction fails, and is suspended after three failures);
//   - SESSIONKIT_DEMO_RATE_LIMITED=1: every turn request first reports a
//     rate-limited retry (provider.ReportRetry), as provider/openai and
//     provider/anthropic do before they wait, then is answered;
//   - SESSIONKIT_DEMO_THINKS=1: every turn response reasons first, as a
//     model with thinking does: a thought reported as it streams
//     (provider.ReportThought) and kept in the message's Thoughts.
func init() {
	failSummaries := os.Getenv("SESSIONKIT_DEMO_SUMMARY_FAILS") == "1"
	rateLimited := os.Getenv("SESSIONKIT_DEMO_RATE_LIMITED") == "1"
	thinks := os.Getenv("SESSIONKIT_DEMO_THINKS") == "1"
	if !failSummaries && !rateLimited && !thinks {
		return
	}
	demoProvider = func(p provider.Provider) provider.Provider {
		return faultyProvider{Provider: p, failSummaries: failSummaries, rateLimited: rateLimited, thinks: thinks}
	}
}

type faultyProvider struct {
	provider.Provider
	failSummaries, rateLimited, thinks bool
}

func (p faultyProvider) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	switch {
	case req.Purpose == provider.PurposeSummary && p.failSummaries:
		return nil, errors.New("demo: the summary model is unavailable")
	case req.Purpose == provider.PurposeTurn && p.rateLimited:
		provider.ReportRetry(ctx, provider.Retry{Retry: 1, MaxRetries: 3, Wait: 2 * time.Second, RateLimited: true, Err: errors.New("demo: HTTP 429: rate limited")})
	}
	if !p.thinks || req.Purpose != provider.PurposeTurn || len(req.Messages) == 0 {
		return p.Provider.Complete(ctx, req, onDelta)
	}
	last := req.Messages[len(req.Messages)-1]
	thought := "The user said: " + last.Text
	if last.Role == history.RoleTool {
		thought = "The tool answered."
	}
	provider.ReportThought(ctx, thought)
	resp, err := p.Provider.Complete(ctx, req, onDelta)
	if err == nil {
		resp.Message.Thoughts = append([]history.Thought{{Text: thought}}, resp.Message.Thoughts...)
	}
	return resp, err
}
