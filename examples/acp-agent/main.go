// Command acp-agent is the sessionkit ACP agent an editor launches: it speaks
// the Agent Client Protocol (v1 and, to a client that asks for it, v2; with
// session compaction) on stdin and stdout and logs to stderr (--v1-only: v1 only).
//
// With ANTHROPIC_API_KEY set it uses the Anthropic provider (Claude; base
// URL from ANTHROPIC_BASE_URL); otherwise, with OPENAI_API_KEY or
// OPENAI_BASE_URL set, the OpenAI-compatible provider; otherwise the offline
// provider. When both ANTHROPIC_API_KEY and the OpenAI variables are set,
// Anthropic wins. SESSIONKIT_MODEL names the model of either (defaults:
// claude-sonnet-5-5, gpt-4o-mini).
// Each session gets the workspace tools (read_file, write_file, edit_file,
// list_files, search, run_command) confined to the directories the editor
// named; files and commands go through the editor when it offers fs and
// terminals, and write_file, edit_file and run_command ask the user's
// permission first unless --allow-all. MCP servers a session asks for are
// not connected (a log line says so).
//
// Sessions are kept in a SQLite file (--store), so session/load works across
// restarts, or in PostgreSQL when --store is a postgres:// URL. Either way
// several agent processes (on one machine with SQLite, on several with
// PostgreSQL) share the sessions, each session served by one process at a
// time: another process asking for it is told which one serves it
// (docs/scale-out.md).
//
// A configuration it cannot serve (a negative or non-numeric count or
// duration, an unknown flag or argument, a malformed URL in --store,
// OPENAI_BASE_URL or ANTHROPIC_BASE_URL, a --store that is a directory or
// cannot be written) is reported before anything is served, on one line of
// stderr that names the flag or variable, with exit status 2. A failure
// while serving exits with status 1.
//
//	acp-agent --store ~/.local/share/sessionkit/sessions.db --auto-compact-tokens 100000
//	acp-agent --store postgres://sessionkit@db.internal:5432/sessionkit --lease-ttl 15s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/envconfig"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

func main() {
	os.Exit(agentMain(os.Args[1:]))
}

// agentMain runs the agent with the command-line arguments args and returns
// its exit status: 2 for a configuration that cannot be served (bad flags,
// variables or store path), found before anything is served; 1 for a
// failure while serving.
func agentMain(args []string) int {
	return envconfig.Status(os.Stderr, "acp-agent", run(args))
}

// usagef is envconfig.Usagef: a startup error of exit status 2.
var usagef = envconfig.Usagef

// config is the agent's command line, checked.
type config struct {
	store         string
	leaseTTL      time.Duration
	autoTokens    int
	contextWindow int
	omit          bool
	v1Only        bool
	system        string
	summaryDelay  time.Duration
	deltaSize     int
	allowAll      bool
	verbose       bool
	recall        bool
}

// parseFlags parses and checks the command line. Every error is an
// *envconfig.UsageError of one line that names the flag or argument at fault; -h
// prints the usage and returns flag.ErrHelp.
func parseFlags(args []string) (*config, error) {
	var c config
	flags := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	flags.SetOutput(io.Discard) // errors are printed on one line by agentMain
	flags.StringVar(&c.store, "store", envconfig.DefaultStore(), "SQLite file, or postgres:// URL, that keeps the sessions")
	flags.DurationVar(&c.leaseTTL, "lease-ttl", postgres.DefaultLeaseTTL, "how long a session stays with this process after it stops renewing its lease (it renews every third of it)")
	flags.IntVar(&c.autoTokens, "auto-compact-tokens", 0, "compact automatically when provider-reported context reaches this many tokens (0 = off)")
	flags.IntVar(&c.contextWindow, "context-window", 0, "context window reported in usage_update (0 = 128000)")
	flags.BoolVar(&c.omit, "omit-summaries", false, "never send compaction summaries to the client")
	flags.BoolVar(&c.v1Only, "v1-only", false, "speak ACP v1 only: answer every initialize with protocol version 1 (ACP v2 is offered otherwise)")
	flags.StringVar(&c.system, "system", "You are a careful coding agent.", "system prompt of new sessions")
	flags.DurationVar(&c.summaryDelay, "summary-delay", 0, "make every summary call wait this long first (for demos and tests of cancellation)")
	flags.IntVar(&c.deltaSize, "offline-delta-size", 0, "the offline provider streams its replies and summaries this many words at a time (0 = its default; for demos and tests of streaming)")
	flags.BoolVar(&c.allowAll, "allow-all", false, "never ask the user's permission before write_file, edit_file and run_command (for scripts)")
	flags.BoolVar(&c.verbose, "v", false, "debug logging")
	flags.BoolVar(&c.recall, "recall", true, "give the model the recall tool, which searches and reads the archived conversation (-recall=false turns it off)")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: acp-agent [flags]   (speaks ACP on stdin and stdout)")
			flags.PrintDefaults()
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	switch {
	case flags.NArg() > 0:
		return nil, usagef("unexpected argument %q: acp-agent takes flags only (see -h)", flags.Arg(0))
	case c.autoTokens < 0:
		return nil, usagef("-auto-compact-tokens %d is negative (0 turns automatic compaction off)", c.autoTokens)
	case c.contextWindow < 0:
		return nil, usagef("-context-window %d is negative (0 means the default)", c.contextWindow)
	case c.leaseTTL <= 0:
		return nil, usagef("-lease-ttl %v is not positive", c.leaseTTL)
	case c.summaryDelay < 0:
		return nil, usagef("-summary-delay %v is negative", c.summaryDelay)
	case c.deltaSize < 0:
		return nil, usagef("-offline-delta-size %d is negative (0 means the default)", c.deltaSize)
	case strings.TrimSpace(c.store) == "":
		return nil, usagef("-store is empty: give a SQLite file path or a postgres:// URL")
	}
	return &c, nil
}

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	level := zapcore.InfoLevel
	if c.verbose {
		level = zapcore.DebugLevel
	}
	logCfg := zap.NewProductionConfig()
	logCfg.Level = zap.NewAtomicLevelAt(level)
	logCfg.OutputPaths = []string{"stderr"} // stdout is the protocol
	logCfg.ErrorOutputPaths = []string{"stderr"}
	log, err := logCfg.Build()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	prov, name, err := chooseProvider(log)
	if err != nil {
		return usagef("%v", err)
	}
	if c.deltaSize > 0 && name == envconfig.Offline {
		prov = offline.New(offline.WithDeltaSize(c.deltaSize))
	}
	if c.summaryDelay > 0 {
		prov = slowSummary{Provider: prov, delay: c.summaryDelay}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, where, err := openStore(ctx, c.store, c.leaseTTL)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("acp-agent starting", zap.String("provider", name), zap.String("store", where))

	return acp.Serve(ctx, os.Stdin, os.Stdout, acp.ServerOptions{
		Session: session.Config{
			Provider:          prov,
			Store:             store,
			SystemPrompt:      c.system,
			AutoCompactTokens: c.autoTokens,
			Tools:             tools(),
			Logger:            log,
			Recall:            c.recall,
		},
		SessionTools:  workspaceTools(log, c.allowAll),
		OmitSummaries: c.omit,
		V1Only:        c.v1Only,
		ContextWindow: c.contextWindow,
		Logger:        log,
	})
}

// workspaceTools gives each session the workspace tools (read_file,
// write_file, edit_file, list_files, search, run_command) confined to its
// working directory and additional directories, working through the
// editor when it offers files and terminals, and asking the user's
// permission before every change and command unless allowAll. A cwd that
// is not a directory here gets no workspace tools (its calls in history are
// still shown as they were).
func workspaceTools(log *zap.Logger, allowAll bool) func(acp.ToolSession) (acp.Toolset, error) {
	return func(ts acp.ToolSession) (acp.Toolset, error) {
		set := acp.Toolset{Describe: workspace.Describe(ts.Cwd)}
		ws, err := workspace.New(ts.Cwd, ts.AdditionalDirectories...)
		if err != nil {
			log.Warn("no workspace tools for this session", zap.String("cwd", ts.Cwd), zap.Error(err))
			return set, nil
		}
		set.Tools = ws.Tools(workspace.Options{Editor: ts.Client, AllowAll: allowAll})
		return set, nil
	}
}

// closingStore is a history.Store the agent closes on exit.
type closingStore interface {
	history.Store
	Close() error
}

// openStore opens the PostgreSQL store for a postgres:// or postgresql://
// URL and the SQLite file at any other path. It returns the store and how to
// name it in logs (a URL without its password). A malformed URL, or a path
// that is a directory or cannot be written, is a *usageError that names
// -store (and never shows a password).
func openStore(ctx context.Context, spec string, leaseTTL time.Duration) (closingStore, string, error) {
	if envconfig.IsPostgresURL(spec) {
		u, err := url.Parse(spec)
		if err != nil {
			return nil, "", usagef("-store: not a valid postgres:// URL (%s)", redactedParseError(err))
		}
		where := u.Redacted()
		st, err := postgres.Open(ctx, spec, postgres.WithLeaseTTL(leaseTTL))
		if err != nil {
			return nil, "", err
		}
		return st, where, nil
	}
	if err := checkStorePath(spec); err != nil {
		return nil, "", err
	}
	st, err := sqlite.Open(spec, sqlite.WithLeaseTTL(leaseTTL))
	if err != nil {
		return nil, "", err
	}
	return st, spec, nil
}

// redactedParseError is the reason of a URL parse error without the URL,
// which may hold a password.
func redactedParseError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "malformed"
}

// checkStorePath checks that the SQLite file at path can be used: it is not
// a directory, its directory exists or can be made (0700), and the file and
// its directory (where SQLite keeps its -wal and -shm files) are writable.
func checkStorePath(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usagef("-store %s is a directory: give the path of a SQLite file", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return usagef("-store %s: cannot make its directory: %v", path, pathReason(err))
	}
	probe, err := os.CreateTemp(dir, ".sessionkit-probe-*")
	if err != nil {
		return usagef("-store %s: its directory is not writable: %v", path, pathReason(err))
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		_ = f.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return usagef("-store %s is not writable: %v", path, pathReason(err))
	}
	return nil
}

// pathReason is the reason of a file system error without its operation
// and path, which the message names already.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// chooseProvider picks the provider from the environment (see the command's
// documentation): Anthropic first, then OpenAI, then offline.
func chooseProvider(log *zap.Logger) (provider.Provider, string, error) {
	return envconfig.Provider(log)
}

// slowSummary delays summary calls; the delay ends early when the call is
// cancelled.
type slowSummary struct {
	provider.Provider
	delay time.Duration
}

func (p slowSummary) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose == provider.PurposeSummary {
		t := time.NewTimer(p.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.Provider.Complete(ctx, req, onDelta)
}

// tools are two harmless demo tools; a real agent declares its own.
func tools() []session.Tool {
	return []session.Tool{
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
