// Command summary-hook shows the compaction controls an application opts
// into: a separate (smaller, cheaper) model that writes the summaries, and a
// BeforeCompact hook that sees every compaction's plan before the summary
// call and may change its instructions, supply the summary itself or veto
// it. It also compacts up to a chosen message (CompactRequest.Through) and
// undoes the last compaction (Uncompact).
//
// It runs on the offline provider: one instance answers the turns, another
// one, configured for short summaries, writes the summaries.
//
//	go run ./examples/summary-hook
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "summary-hook:", err)
		os.Exit(1)
	}
}

// counted counts the calls a provider gets, and keeps its name and model
// for the Segments (provider.Describer).
type counted struct {
	provider.Provider
	info  provider.Info
	calls atomic.Int64
}

func (c *counted) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	c.calls.Add(1)
	return c.Provider.Complete(ctx, req, onDelta)
}

func (c *counted) Info() provider.Info { return c.info }

// errKeep is the hook's veto.
var errKeep = errors.New("the user pinned this part of the conversation")

// beforeCompact is the application's policy, run in the session's worker
// before every summary call.
func beforeCompact(w io.Writer) func(ctx context.Context, plan *session.PendingCompaction) error {
	return func(_ context.Context, plan *session.PendingCompaction) error {
		fmt.Fprintf(w, "hook: %s compaction of %d messages, instructions %q\n", plan.Trigger, len(plan.Messages), plan.Instructions)
		switch {
		case strings.Contains(plan.Instructions, "#pinned"):
			return errKeep // veto: nothing changes, no model call
		case strings.Contains(plan.Instructions, "#mine"):
			// The application writes the summary itself: no model call.
			var b strings.Builder
			b.WriteString("## Summary of earlier conversation (written by the application)\n")
			for _, m := range plan.Messages {
				if m.Role == "user" {
					fmt.Fprintf(&b, "- the user asked: %s\n", m.Text)
				}
			}
			plan.Summary = b.String()
		default:
			plan.Instructions = strings.TrimSpace(plan.Instructions + "\nKeep every file name and every decision.")
		}
		return nil
	}
}

func run(ctx context.Context, w io.Writer) error {
	large := &counted{Provider: offline.New(), info: provider.Info{Name: "offline", Model: "offline-large"}}
	small := &counted{Provider: offline.New(offline.WithMaxSummaryChars(600)), info: provider.Info{Name: "offline", Model: "offline-small"}}
	s, err := session.New(ctx, session.Config{
		Provider:        large,
		SummaryProvider: small, // summaries never go to large
		BeforeCompact:   beforeCompact(w),
		SystemPrompt:    "You are a coding agent.",
	})
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()

	prompt := func(text string) error {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: text})
		if err != nil {
			return err
		}
		res, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		return res.Err
	}
	compact := func(req session.CompactRequest) (session.CompactResult, error) {
		h, err := s.Compact(ctx, req)
		if err != nil {
			return session.CompactResult{}, err
		}
		res, err := h.Wait(ctx)
		if err != nil {
			return res, err
		}
		fmt.Fprintf(w, "compact: %s", res.Reason)
		if res.Error != "" {
			fmt.Fprintf(w, " (%s)", res.Error)
		}
		if res.Compacted {
			fmt.Fprintf(w, ", %s archived, summary by %s", messages(len(res.Segment.Messages)), madeBy(res.Segment.SummaryProvider, res.Segment.SummaryModel))
		}
		fmt.Fprintln(w)
		return res, nil
	}

	for _, p := range []string{
		"We are building a CLI called falcon in Go.",
		"Add a --verbose flag to main.go.",
		"Write tests for the flag parsing in flags_test.go.",
		"Use the standard flag package, not cobra.",
	} {
		if err := prompt(p); err != nil {
			return err
		}
	}

	// 1. The hook adds its instructions; the small model writes the summary.
	if _, err := compact(session.CompactRequest{}); err != nil {
		return err
	}
	// 2. The hook vetoes.
	if _, err := compact(session.CompactRequest{Instructions: "#pinned"}); err != nil {
		return err
	}
	// 3. Summarize up to a chosen message, with a summary the hook writes.
	for _, p := range []string{"Rename the binary to falconctl.", "Add a Makefile target for it."} {
		if err := prompt(p); err != nil {
			return err
		}
	}
	active, err := s.Active(ctx)
	if err != nil {
		return err
	}
	if _, err := compact(session.CompactRequest{Instructions: "#mine", Through: active[1].ID}); err != nil {
		return err
	}

	segs, err := s.Segments(ctx)
	if err != nil {
		return err
	}
	for i, g := range segs {
		fmt.Fprintf(w, "segment %d: trigger=%s messages=%d summary by %s, context %d tokens before, about %d after\n",
			i+1, g.Trigger, len(g.Messages), madeBy(g.SummaryProvider, g.SummaryModel), g.ContextBefore, g.ContextAfter)
	}

	// 4. Undo the last compaction: its messages are Active again.
	uh, err := s.Uncompact(ctx, session.UncompactRequest{})
	if err != nil {
		return err
	}
	u, err := uh.Wait(ctx)
	if err != nil {
		return err
	}
	if u.Err != nil {
		return u.Err
	}
	fmt.Fprintf(w, "uncompact: restored %s\n", messages(u.Restored))
	fmt.Fprintf(w, "model calls: main %d, summaries %d\n", large.calls.Load(), small.calls.Load())
	return nil
}

// madeBy names what wrote a summary: provider/model, or the provider alone
// when it names no model (a summary the hook wrote is by "hook").
func madeBy(provider, model string) string {
	if model == "" {
		return provider
	}
	return provider + "/" + model
}

// messages is n messages, "1 message" for one.
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}
