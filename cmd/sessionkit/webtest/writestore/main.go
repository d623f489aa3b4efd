// Command writestore writes the SQLite store the browser tests of
// sessionkit serve look at, through the public API only (session,
// provider/offline, history/sqlite), and prints what it wrote as one JSON
// line: the sessions, and for the story session every committed
// compaction with the model step it followed, counted from the session's
// own events (not from the store's log, which serve reads).
//
//	writestore -store PATH [-live]
//
// With -live it then keeps a session open (holding its lease, as an agent
// does), prints {"live": ID}, and runs each line of stdin as a prompt,
// printing {"done": N} after each; it closes the session at the end of
// stdin.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// compaction is one committed compaction of the story session.
type compaction struct {
	CompactID string `json:"compact_id"`
	SegmentID string `json:"segment_id"`
	Trigger   string `json:"trigger"`
	// Step is how many model steps (usage events of turn requests with a
	// context figure) came before it.
	Step     int   `json:"step"`
	Position int64 `json:"position"`
}

type output struct {
	Story       string       `json:"story"`
	StoryTitle  string       `json:"story_title"`
	Hostile     string       `json:"hostile"`
	Sessions    []string     `json:"sessions"`
	Compactions []compaction `json:"compactions"`
	Steps       int          `json:"steps"`
	Threshold   int          `json:"threshold"`
}

func main() {
	path := flag.String("store", "", "the SQLite file to write")
	live := flag.Bool("live", false, "keep a session open and prompt it from stdin")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "writestore: -store is required")
		os.Exit(2)
	}
	if err := run(*path, *live); err != nil {
		fmt.Fprintln(os.Stderr, "writestore:", err)
		os.Exit(1)
	}
}

// threshold is the story's automatic compaction threshold, in tokens.
const threshold = 260

func config(st *sqlite.Store, title string) session.Config {
	return session.Config{
		Provider:          offline.New(),
		Store:             st,
		SystemPrompt:      "You are a careful coding agent.",
		AutoCompactTokens: threshold,
		Title:             title,
		Cwd:               "/project/falcon",
		Tools: []session.Tool{{
			Name:        "read_file",
			Description: "Reads a file.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
			Run: func(context.Context, json.RawMessage) (string, error) {
				return "package main\n\nfunc main() {\n\tprintln(\"falcon\")\n}\n", nil
			},
		}},
	}
}

func prompt(ctx context.Context, s *session.Session, text string) error {
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

func run(path string, live bool) error {
	ctx := context.Background()
	st, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer st.Close()
	out := output{StoryTitle: "Build the falcon CLI", Threshold: threshold}

	// The story: turns with a tool call, automatic compactions, and a
	// manual one with instructions.
	s, err := session.New(ctx, config(st, out.StoryTitle))
	if err != nil {
		return err
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		return err
	}
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for ev := range sub.Events() {
			switch p := ev.Payload.(type) {
			case *session.UsageEvent:
				if p.Purpose == "turn" && p.ContextTokens > 0 {
					out.Steps++
				}
			case *session.CompactionEvent:
				if p.Phase == session.PhaseFinished && p.Result != nil && p.Result.Compacted {
					out.Compactions = append(out.Compactions, compaction{CompactID: p.CompactID, SegmentID: p.Result.Segment.ID,
						Trigger: string(p.Trigger), Step: out.Steps, Position: p.Position})
				}
			}
		}
	}()
	for _, p := range []string{
		"We are building a CLI called falcon in Go.",
		"Read file main.go",
		"We decided to use the standard flag package, no cobra.",
		"The binary must print its version with -version.",
		"Errors go to stderr, and the exit status is 2 for a bad command line.",
		"Add a --json flag to the list command.",
		"Read file main.go",
		"The config file lives in /project/falcon/falcon.toml and uses TOML.",
		"Logging uses log/slog with a text handler on stderr.",
		"What did we decide about cobra?",
		"Release builds are made with goreleaser for linux and darwin.",
		"Read file main.go",
	} {
		if err := prompt(ctx, s, p); err != nil {
			return err
		}
	}
	h, err := s.Compact(ctx, session.CompactRequest{Instructions: "keep the flag decisions"})
	if err != nil {
		return err
	}
	if r, err := h.Wait(ctx); err != nil || !r.Compacted {
		return fmt.Errorf("manual compaction: %v %+v", err, r)
	}
	if err := prompt(ctx, s, "Which flag package do we use?"); err != nil {
		return err
	}
	out.Story = s.ID()
	if err := s.Close(); err != nil {
		return err
	}
	<-counted

	// A session whose title and text hold markup.
	hs, err := session.New(ctx, config(st, `<script>alert("title")</script> & <b>bold</b>`))
	if err != nil {
		return err
	}
	if err := prompt(ctx, hs, `Print "<img src=x onerror=alert(1)>" and </textarea><script>alert(2)</script>`); err != nil {
		return err
	}
	out.Hostile = hs.ID()
	if err := hs.Close(); err != nil {
		return err
	}
	out.Sessions = []string{out.Story, out.Hostile}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return err
	}
	if !live {
		return nil
	}

	ls, err := session.New(ctx, config(st, "Live session"))
	if err != nil {
		return err
	}
	defer ls.Close()
	if err := prompt(ctx, ls, "We start the live session."); err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(map[string]string{"live": ls.ID()}); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for n := 1; in.Scan(); n++ {
		if err := prompt(ctx, ls, in.Text()); err != nil {
			return err
		}
		if err := enc.Encode(map[string]int{"done": n}); err != nil {
			return err
		}
	}
	return in.Err()
}
