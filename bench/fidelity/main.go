// Command fidelity is the fidelity benchmark of compaction (make
// bench-fidelity; docs/compaction.md, "Fidelity benchmark"). It generates
// seeded synthetic coding sessions with planted facts, plays each through a
// session, compacts it Depths times and reports, per depth, how many of
// the archived facts the retained summary kept, whether Session.Search
// finds the message holding each fact among its first five hits for a
// question about it (recall@5), the context left and the Segments' own
// Fidelity.
//
// The offline provider makes the summaries of the first column. When the
// environment selects a model (SESSIONKIT_PROVIDER, ANTHROPIC_API_KEY,
// OPENAI_API_KEY or OPENAI_BASE_URL, with SESSIONKIT_MODEL; the selection
// of provider/fromenv), a second column has that model's summaries. The
// sessions' own turns are scripted: only the summaries differ between
// columns.
//
//	go run ./bench/fidelity -sessions 30 -messages 200 -seed 1
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/sessionkit/sessionkit/internal/envconfig"
	"github.com/sessionkit/sessionkit/provider/fromenv"
	"github.com/sessionkit/sessionkit/provider/offline"
)

func main() {
	os.Exit(envconfig.Status(os.Stderr, "fidelity", run(os.Args[1:], os.Stdout, os.Stderr)))
}

func run(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("fidelity", flag.ContinueOnError)
	flags.SetOutput(stderr)
	o := Options{}
	flags.Uint64Var(&o.Gen.Seed, "seed", 1, "seed of the generator")
	flags.IntVar(&o.Gen.Sessions, "sessions", 30, "synthetic sessions")
	flags.IntVar(&o.Gen.Messages, "messages", 200, "the least number of messages of each session")
	flags.IntVar(&o.Gen.FactsPerKind, "facts", 2, "planted facts of each kind per session")
	flags.StringVar(&o.Store, "store", "sqlite", "store: sqlite (a temporary file) or memstore")
	flags.BoolVar(&o.Recall, "recall", false, "sessions with Config.Recall on (the summarizer is told the archive is searchable)")
	conv := flags.Int("conv", 40, "conversations of the conversational part (0: none)")
	convMsgs := flags.Int("conv-messages", 400, "messages of each conversation")
	convOnly := flags.Bool("conv-only", false, "only the conversational part")
	offlineOnly := flags.Bool("offline", false, "only the offline provider, whatever the environment selects")
	quiet := flags.Bool("q", false, "no progress lines on stderr")
	if err := flags.Parse(args); err != nil {
		return err
	}
	switch {
	case o.Gen.Sessions < 1:
		return envconfig.Usagef("-sessions must be at least 1")
	case o.Gen.Messages < 1:
		return envconfig.Usagef("-messages must be at least 1")
	case o.Gen.FactsPerKind < 1 || o.Gen.FactsPerKind > 6:
		return envconfig.Usagef("-facts must be between 1 and 6")
	case *conv < 0 || *convMsgs < 2*len(convFacts):
		return envconfig.Usagef("-conv must not be negative and -conv-messages at least %d", 2*len(convFacts))
	case o.Store != "sqlite" && o.Store != "memstore":
		return envconfig.Usagef("-store must be sqlite or memstore, not %q", o.Store)
	}
	real, name, err := fromenv.Select(fromenv.Selection{})
	if err != nil {
		return envconfig.Usagef("%v", err)
	}
	dir, err := os.MkdirTemp("", "sessionkit-fidelity-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	o.Dir = dir
	if !*quiet {
		o.Progress = func(line string) { fmt.Fprintln(stderr, line) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *conv > 0 {
		rec, err := RunConv(ctx, GenerateConv(o.Gen.Seed, *conv, *convMsgs, len(convFacts)/2), o.Store, dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Conversational part: %d conversations of %d messages, questions in other words (store %s, seed %d)\n\n", *conv, *convMsgs, o.Store, o.Gen.Seed)
		WriteConv(stdout, rec)
		fmt.Fprintln(stdout)
	}
	if *convOnly {
		return nil
	}
	cols := []Column{}
	col, err := Run(ctx, o, fromenv.Offline, offline.New())
	if err != nil {
		return err
	}
	cols = append(cols, col)
	if name != fromenv.Offline && !*offlineOnly {
		col, err := Run(ctx, o, name, real)
		if err != nil {
			return err
		}
		cols = append(cols, col)
	}
	fmt.Fprintf(stdout, "Fidelity benchmark: %d sessions of at least %d messages, %d facts each (seed %d, store %s, recall %v; summaries by %s)\n\n",
		o.Gen.Sessions, o.Gen.Messages, o.Gen.FactsPerKind*len(Kinds), o.Gen.Seed, o.Store, o.Recall, providerNames(cols))
	WriteTable(stdout, cols)
	return nil
}
