// Command remote drives the sessionkit ACP agent (examples/acp-agent) in
// another process through acp.RemoteSession: the same Prompt, Compact and
// Subscribe surface as a local session. It runs a short conversation, a
// manual compaction awaited on its Handle, and prints the timeline.
//
//	go run ./examples/remote                      # builds examples/acp-agent first
//	go run ./examples/remote -agent ./acp-agent   # uses a built agent (go build -tags demotools: it calls echo)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/session"
)

func main() {
	agent := flag.String("agent", "", "path of the acp-agent binary (default: build ./examples/acp-agent)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *agent); err != nil {
		fmt.Fprintln(os.Stderr, "remote:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, agent string) error {
	dir, err := os.MkdirTemp("", "sessionkit-remote-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if agent == "" {
		agent = filepath.Join(dir, "acp-agent")
		build := exec.Command("go", "build", "-tags", "demotools", "-o", agent, "./examples/acp-agent")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build the agent (run from the repository root, or pass -agent): %w", err)
		}
	}

	client, err := acp.Start(ctx, agent, []string{"--store", filepath.Join(dir, "sessions.db")}, acp.ClientOptions{Stderr: io.Discard})
	if err != nil {
		return err
	}
	defer client.Close()
	info := client.AgentInfo()
	if info.AgentInfo != nil {
		fmt.Fprintf(out, "connected to %s %s\n", info.AgentInfo.Name, info.AgentInfo.Version)
	}

	var s session.Agent // a RemoteSession, used through the same interface as a local session
	rs, err := client.NewSession(ctx, dir)
	if err != nil {
		return err
	}
	s = rs
	defer s.Close()

	sub, err := s.Subscribe(ctx, session.SubscribeOptions{Buffer: 10000})
	if err != nil {
		return err
	}
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for ev := range sub.Events() {
			printEvent(out, ev)
		}
	}()

	for _, p := range []string{
		"We are building falcon, a file copier in Go.",
		"Use the standard flag package.",
		"Please call echo with text: hello from the remote side",
	} {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: p})
		if err != nil {
			return err
		}
		if res, err := h.Wait(ctx); err != nil {
			return err
		} else if res.Err != nil {
			return res.Err
		}
	}

	h, err := s.Compact(ctx, session.CompactRequest{Instructions: "keep the project name"})
	if err != nil {
		return err
	}
	<-h.Finished() // the summary call and the commit are done in the agent
	res := h.Result()

	sub.Close()
	<-printed
	fmt.Fprintf(out, "\ncompaction %s: success=%v compacted=%v reason=%s\n", short(res.CompactID), res.Success, res.Compacted, res.Reason)
	if res.Segment != nil {
		fmt.Fprintf(out, "archived %d messages; summary:\n%s\n", len(res.Segment.Messages), indent(res.Segment.Summary))
	}
	return nil
}

func printEvent(out io.Writer, ev session.Event) {
	switch p := ev.Payload.(type) {
	case *session.TurnEvent:
		if p.Phase == session.TurnStarted {
			fmt.Fprintln(out, "── turn ──")
		}
	case *session.MessageEvent:
		m := p.Message
		text := m.Text
		for _, c := range m.ToolCalls {
			text += fmt.Sprintf(" → %s(%s)", c.Name, c.Arguments)
		}
		fmt.Fprintf(out, "%4d %-9s %s\n", ev.Seq, m.Role, oneLine(text))
	case *session.UsageEvent:
		fmt.Fprintf(out, "%4d usage     %d tokens in context\n", ev.Seq, p.ContextTokens)
	case *session.CompactionEvent:
		if p.Phase == session.PhaseStarted || p.Phase == session.PhaseFinished {
			fmt.Fprintf(out, "%4d compact   %s (%s)\n", ev.Seq, p.Phase, p.Trigger)
		}
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	return s
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
