// Command quickstart runs a conversation on sessionkit's embedded defaults:
// the offline provider and a SQLite file. It shows a turn with tool calls,
// an automatic compaction in the middle of the conversation, a manual
// Compact awaited on its Handle, the timeline as it happens, and the final
// Active history, retained summary and archive.
//
// With ANTHROPIC_API_KEY set the same conversation runs on a Claude model
// through provider/anthropic (SESSIONKIT_MODEL, ANTHROPIC_BASE_URL), with an
// automatic threshold suited to a real model's token counts.
//
//	go run ./examples/quickstart            # store in a temporary directory
//	go run ./examples/quickstart -dir state # keep the SQLite file in ./state
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

func main() {
	dir := flag.String("dir", "", "directory for the SQLite file (default: a temporary directory)")
	flag.Parse()
	p, threshold := provider.Provider(offline.New()), offlineThreshold
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		a, err := anthropic.FromEnv()
		if err != nil {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
			os.Exit(1)
		}
		p, threshold = a, modelThreshold
	}
	if err := run(context.Background(), os.Stdout, *dir, p, threshold); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// files is a tiny in-memory workspace the tools work on.
var files = map[string]string{
	"go.mod": "module example.com/falcon\n\ngo 1.26\n",
	"main.go": `package main

import (
	"fmt"
	"os"
)

// falcon copies files, the slow way.
func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: falcon SRC DST")
		os.Exit(2)
	}
	src, dst := os.Args[1], os.Args[2]
	data, err := os.ReadFile(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "falcon:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "falcon:", err)
		os.Exit(1)
	}
	fmt.Printf("copied %d bytes from %s to %s\n", len(data), src, dst)
}
`,
	"NOTES.md": `# falcon notes

- Copies one file to another path.
- Exit code 2 on usage errors, 1 on I/O errors.
- TODO: a -version flag, a -force flag, progress output for large files.
- Releases are tagged vMAJOR.MINOR.PATCH and built with -trimpath.
`,
}

func tools() []session.Tool {
	return []session.Tool{
		{
			Name:        "read_file",
			Description: "Reads a file of the workspace.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
			Run: func(_ context.Context, args json.RawMessage) (string, error) {
				var in struct{ Path string }
				if err := json.Unmarshal(args, &in); err != nil {
					return "", err
				}
				text, ok := files[in.Path]
				if !ok {
					return "", fmt.Errorf("no file %q", in.Path)
				}
				return text, nil
			},
		},
		{
			Name:        "list_files",
			Description: "Lists the files of the workspace.",
			Run: func(context.Context, json.RawMessage) (string, error) {
				return "NOTES.md\ngo.mod\nmain.go", nil
			},
		},
	}
}

// Automatic compaction thresholds: small for the offline provider, so the
// demo compacts on its own mid-conversation; for a real model, whose
// requests carry the system prompt and tool definitions, a few turns' worth.
const (
	offlineThreshold = 450
	modelThreshold   = 6000
)

// run holds the conversation on p, compacting automatically at threshold
// tokens.
func run(ctx context.Context, out io.Writer, dir string, p provider.Provider, threshold int) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sessionkit-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	store, err := sqlite.Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		return err
	}
	defer store.Close()

	s, err := session.New(ctx, session.Config{
		Provider:          p,
		Store:             store,
		SystemPrompt:      "You are a careful coding agent.",
		Tools:             tools(),
		AutoCompactTokens: threshold,
	})
	if err != nil {
		return err
	}
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

	prompts := []string{
		"We are building a CLI called falcon in Go. Please list files of the workspace.",
		"Read file NOTES.md",
		"We decided to use the standard flag package, no cobra.",
		"Read file main.go",
		"The binary must print its version with -version.",
		"What did we decide about cobra?",
	}
	for _, p := range prompts {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: p})
		if err != nil {
			return err
		}
		res, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		if res.Err != nil {
			return fmt.Errorf("turn %q: %w", p, res.Err)
		}
	}

	// A manual compaction: the Handle comes back as soon as the command is
	// queued; Finished closes when the summary call and the commit are done.
	h, err := s.Compact(ctx, session.CompactRequest{Instructions: "focus on falcon"})
	if err != nil {
		return err
	}
	<-h.Finished()
	res := h.Result()

	active, err := s.Active(ctx)
	if err != nil {
		return err
	}
	summary, err := s.Summary(ctx)
	if err != nil {
		return err
	}
	segments, err := s.Segments(ctx)
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	<-printed // the timeline is complete: Close ended the subscription

	fmt.Fprintf(out, "\nmanual compaction: success=%v compacted=%v reason=%s\n", res.Success, res.Compacted, res.Reason)
	fmt.Fprintf(out, "\n== active history (%d messages) ==\n", len(active))
	for _, m := range active {
		fmt.Fprintf(out, "  %-9s %s\n", m.Role, oneLine(m.Text, 90))
	}
	fmt.Fprintf(out, "\n== retained summary ==\n%s\n", indent(summary))
	fmt.Fprintf(out, "\n== archive: %d segments ==\n", len(segments))
	for i, seg := range segments {
		fmt.Fprintf(out, "  segment %d: trigger=%s, %d messages archived\n", i+1, seg.Trigger, len(seg.Messages))
	}
	return nil
}

func printEvent(out io.Writer, ev session.Event) {
	switch p := ev.Payload.(type) {
	case *session.TurnEvent:
		if p.Phase == session.TurnStarted {
			fmt.Fprintln(out, "\n── turn ──")
		}
	case *session.MessageEvent:
		m := p.Message
		label := string(m.Role)
		if m.Steer {
			label = "steer"
		}
		text := m.Text
		for _, c := range m.ToolCalls {
			text += fmt.Sprintf(" → %s(%s)", c.Name, c.Arguments)
		}
		fmt.Fprintf(out, "%4d %-9s %s\n", ev.Seq, label, oneLine(text, 100))
	case *session.UsageEvent:
		fmt.Fprintf(out, "%4d usage     context %d tokens\n", ev.Seq, p.ContextTokens)
	case *session.CompactionEvent:
		switch p.Phase {
		case session.PhaseQueued, session.PhaseStarted, session.PhaseCommitting:
			fmt.Fprintf(out, "%4d compact   %s (%s)\n", ev.Seq, p.Phase, p.Trigger)
		case session.PhaseFinished:
			fmt.Fprintf(out, "%4d compact   finished (%s): %s\n", ev.Seq, p.Trigger, p.Result.Reason)
		}
	case *session.ActionEvent:
		fmt.Fprintf(out, "%4d action    [%s] %s\n", ev.Seq, p.Status, p.Text)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n]) + "…"
	}
	return s
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ")
}
