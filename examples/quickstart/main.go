// Command quickstart runs a conversation on sessionkit's embedded defaults:
// the offline provider and a SQLite file. It shows a turn with tool calls,
// an automatic compaction in the middle of the conversation, a manual
// Compact awaited on its Handle, a question that only the archive can
// answer (the model calls the recall tool, Config.Recall), the timeline as
// it happens, and the final Active history, retained summary and archive.
//
// It prints what compaction does as it happens: why an automatic compaction
// fires (the context the model reported against the threshold), the summary
// as the model writes it, the Segment archived, and the context before and
// after.
//
// The provider comes from the environment as for examples/acp-agent:
// SESSIONKIT_PROVIDER (offline, openai or anthropic) names it; otherwise
// with ANTHROPIC_API_KEY a Claude model through provider/anthropic
// (ANTHROPIC_BASE_URL); otherwise, with OPENAI_API_KEY or OPENAI_BASE_URL,
// any OpenAI-compatible model through provider/openai; otherwise, with no
// provider variable set at all, the offline provider, deterministic and
// without network (a line on stderr says so). A variable set but not
// enough (SESSIONKIT_MODEL alone, a blank key) is an error. SESSIONKIT_MODEL
// names the model. A real model gets an automatic threshold suited to its
// token counts. The first line of the output names the provider.
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

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/fromenv"
	"github.com/sessionkit/sessionkit/session"
)

func main() {
	dir := flag.String("dir", "", "directory for the SQLite file (default: a temporary directory)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "quickstart: unexpected argument %q (the only flag is -dir)\n", flag.Arg(0))
		os.Exit(2)
	}
	p, name, err := fromenv.Provider(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(2)
	}
	threshold := offlineThreshold
	if name != fromenv.Offline {
		threshold = modelThreshold
	}
	if err := run(context.Background(), os.Stdout, *dir, name, p, threshold); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// files is a tiny in-memory workspace the tools work on.
var files = map[string]string{
	"go.mod": "module example.com/falcon\n\ngo 1.26\n",
	"main.go": `package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// falcon copies files, the slow way.
func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: falcon [-v] SRC DST")
		flag.PrintDefaults()
	}
	verbose := flag.Bool("v", false, "print what is copied")
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	src, dst := flag.Arg(0), flag.Arg(1)
	n, err := copyFile(src, dst)
	if err != nil {
		fmt.Fprintln(os.Stderr, "falcon:", err)
		os.Exit(1)
	}
	if *verbose {
		fmt.Printf("copied %d bytes from %s to %s\n", n, src, dst)
	}
}

// copyFile copies src to dst, creating dst with mode 0644 or truncating it.
func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
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

// recallQuestion asks about what only the archive holds at the end.
const recallQuestion = "What file mode does copyFile create dst with?"

// Automatic compaction thresholds: small for the offline provider, so the
// demo compacts on its own mid-conversation; for a real model, whose
// requests carry the system prompt and tool definitions, a few turns' worth.
const (
	offlineThreshold = 450
	modelThreshold   = 6000
)

// run holds the conversation on p (named name in the first line),
// compacting automatically at threshold tokens.
func run(ctx context.Context, out io.Writer, dir, name string, p provider.Provider, threshold int) error {
	keep := dir != ""
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
	path := filepath.Join(dir, "sessions.db")
	store, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer store.Close()
	about := "deterministic, no network; set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real model"
	if name != fromenv.Offline {
		about = "a real model: requests go to its API"
	}
	fmt.Fprintf(out, "provider %s (%s)\nstore    %s\nautomatic compaction when the model reports %d tokens of context\n", name, about, path, threshold)

	s, err := session.New(ctx, session.Config{
		Provider:          p,
		Store:             store,
		SystemPrompt:      "You are a careful coding agent.",
		Tools:             tools(),
		AutoCompactTokens: threshold,
		// The model may search and read the archive with the recall tool.
		Recall: true,
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
		pr := &printer{out: out, threshold: threshold}
		for ev := range sub.Events() {
			pr.event(ev)
		}
	}()

	prompts := []string{
		"We are building a CLI called falcon in Go. Please list files of the workspace.",
		"Read file main.go",
		"We decided to use the standard flag package, no cobra.",
		"Read file NOTES.md",
		"The binary must print its version with -version.",
		"What did we decide about cobra?",
	}
	for _, p := range prompts {
		if _, err := prompt(ctx, s, p); err != nil {
			return err
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

	// After the compactions, a question about something only the archive
	// holds (main.go was read before the first one, and the summaries keep
	// only its beginning): the model calls recall, which searches the
	// archived messages, and answers from what it finds.
	recalled, err := prompt(ctx, s, recallQuestion)
	if err != nil {
		return err
	}

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
	if res.Compacted {
		fid := res.Fidelity
		fmt.Fprintf(out, "fidelity: the summary kept %d of the %d facts of the archived messages\n", fid.Kept, fid.Facts)
	}
	fmt.Fprintf(out, "\n== recall ==\n  user      %s\n", recallQuestion)
	for _, m := range recalled.Messages[1:] {
		fmt.Fprintf(out, "  %-9s %s\n", m.Role, oneLine(withCalls(m), 200))
	}
	fmt.Fprintf(out, "\n== active history (%d messages) ==\n", len(active))
	for _, m := range active {
		fmt.Fprintf(out, "  %-9s %s\n", m.Role, oneLine(m.Text, 90))
	}
	fmt.Fprintf(out, "\n== retained summary ==\n%s\n", indent(summary))
	fmt.Fprintf(out, "\n== archive: %d segments ==\n", len(segments))
	for i, seg := range segments {
		fmt.Fprintf(out, "  segment %d: trigger=%s, %d messages archived\n", i+1, seg.Trigger, len(seg.Messages))
	}
	if keep {
		fmt.Fprintf(out, "\nThe store keeps all of it; look into it with the sessionkit command:\n  go run ./cmd/sessionkit --store %s segments --messages %s\n", path, s.ID())
	} else {
		fmt.Fprintln(out, "\nThe store was in a temporary directory. To keep it and look into it with the sessionkit command:\n  go run ./examples/quickstart -dir state && go run ./cmd/sessionkit --store state/sessions.db sessions")
	}
	return nil
}

// printer prints the timeline as it happens. It remembers the latest
// context the model reported, to say why an automatic compaction fires and
// how much smaller the context is after a compaction.
type printer struct {
	out       io.Writer
	threshold int
	context   int  // the latest ContextTokens reported
	before    int  // the context when the last compaction started; 0 = none pending
	streaming bool // a summary is being printed, not at the start of a line
}

func (pr *printer) event(ev session.Event) {
	out := pr.out
	if c, ok := ev.Payload.(*session.CompactionEvent); !ok || c.Phase != session.PhaseDelta {
		pr.endStream() // a summary streamed so far ends its line first
	}
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
		fmt.Fprintf(out, "%-9s %s\n", label, oneLine(withCalls(m), 100))
	case *session.UsageEvent:
		if p.ContextTokens == 0 {
			return
		}
		pr.context = p.ContextTokens
		if pr.before > 0 {
			if d := pr.before - p.ContextTokens; d > 0 {
				fmt.Fprintf(out, "usage     context %d tokens: %d before the compaction, so %d smaller with this turn's new messages in it\n",
					p.ContextTokens, pr.before, d)
			} else {
				fmt.Fprintf(out, "usage     context %d tokens: %d before the compaction, so %d LARGER: the compaction grew the context (its summary and this turn's new messages outweigh what it archived)\n",
					p.ContextTokens, pr.before, -d)
			}
			pr.before = 0
			return
		}
		fmt.Fprintf(out, "usage     context %d tokens\n", p.ContextTokens)
	case *session.CompactionEvent:
		pr.compaction(p)
	case *session.ActionEvent:
		fmt.Fprintf(out, "action    [%s] %s\n", p.Status, p.Text)
	case *session.AutoCompactEvent:
		if p.Held {
			fmt.Fprintf(out, "compact   held: the automatic compaction left the context at %d tokens, above the threshold of %d; compacting again would not help, so none runs until the context reaches %d tokens\n",
				p.ContextAfter, p.Threshold, p.ResumeAt)
		}
	}
}

// compaction prints a compaction's phases, and its summary as it streams.
func (pr *printer) compaction(p *session.CompactionEvent) {
	out := pr.out
	switch p.Phase {
	case session.PhaseQueued:
		if p.Trigger == "auto" {
			fmt.Fprintf(out, "compact   queued (auto): the model reported %d tokens of context, at or above the threshold of %d\n", pr.context, pr.threshold)
		} else {
			fmt.Fprintf(out, "compact   queued (manual): asked for with Session.Compact\n")
		}
	case session.PhaseStarted:
		pr.before = pr.context
		fmt.Fprintf(out, "compact   started (%s): summarizing the oldest %d messages; the summary as the model writes it:\n", p.Trigger, p.Archive)
	case session.PhaseDelta:
		pr.stream(p.Delta)
	case session.PhaseCommitting:
		fmt.Fprintf(out, "compact   committing (%s): one transaction archives the messages and stores the summary\n", p.Trigger)
	case session.PhaseFinished:
		r := p.Result
		if seg := r.Segment; seg != nil {
			fmt.Fprintf(out, "compact   segment %s archived: summary call %d tokens in, %d out\n", seg.ID, r.Usage.InputTokens, r.Usage.OutputTokens)
		} else {
			pr.before = 0
		}
		fmt.Fprintf(out, "compact   finished (%s): %s\n", p.Trigger, r.Reason)
		if r.ContextGrew {
			fmt.Fprintf(out, "compact   GREW the context: %s\n", r.Note)
		}
	}
}

// stream prints a summary delta, each line of the summary indented.
func (pr *printer) stream(delta string) {
	for i, line := range strings.Split(delta, "\n") {
		if i > 0 {
			fmt.Fprintln(pr.out)
			pr.streaming = false
		}
		if line == "" {
			continue
		}
		if !pr.streaming {
			fmt.Fprint(pr.out, "  summary │ ")
			pr.streaming = true
		}
		fmt.Fprint(pr.out, line)
	}
}

// endStream ends the line of a summary being printed.
func (pr *printer) endStream() {
	if pr.streaming {
		fmt.Fprintln(pr.out)
		pr.streaming = false
	}
}

// prompt runs one turn of s and returns its result.
func prompt(ctx context.Context, s *session.Session, text string) (session.TurnResult, error) {
	h, err := s.Prompt(ctx, session.PromptRequest{Text: text})
	if err != nil {
		return session.TurnResult{}, err
	}
	res, err := h.Wait(ctx)
	if err == nil && res.Err != nil {
		err = fmt.Errorf("turn %q: %w", text, res.Err)
	}
	return res, err
}

// withCalls is m's text followed by its tool calls.
func withCalls(m history.Message) string {
	text := m.Text
	for _, c := range m.ToolCalls {
		text += fmt.Sprintf(" → %s(%s)", c.Name, c.Arguments)
	}
	return text
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
