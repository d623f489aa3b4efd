// Command acp-agent is the sessionkit ACP agent an editor launches: it speaks
// the Agent Client Protocol (v1, with session compaction) on stdin and
// stdout and logs to stderr.
//
// With ANTHROPIC_API_KEY set it uses the Anthropic provider (Claude; base
// URL from ANTHROPIC_BASE_URL); otherwise, with OPENAI_API_KEY or
// OPENAI_BASE_URL set, the OpenAI-compatible provider; otherwise the offline
// provider. When both ANTHROPIC_API_KEY and the OpenAI variables are set,
// Anthropic wins. SESSIONKIT_MODEL names the model of either (defaults:
// claude-sonnet-5-5, gpt-4o-mini).
// Sessions are kept in a SQLite file (--store), so session/load works across
// restarts, or in PostgreSQL when --store is a postgres:// URL. Either way
// several agent processes (on one machine with SQLite, on several with
// PostgreSQL) share the sessions, each session served by one process at a
// time: another process asking for it is told which one serves it
// (docs/scale-out.md).
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
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/session"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "acp-agent:", err)
		os.Exit(1)
	}
}

// defaultStore returns the default SQLite path under the user's data
// directory ($XDG_DATA_HOME, else ~/.local/share).
func defaultStore() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "sessionkit.db"
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "sessionkit", "sessions.db")
}

func run() error {
	storePath := flag.String("store", defaultStore(), "SQLite file, or postgres:// URL, that keeps the sessions")
	leaseTTL := flag.Duration("lease-ttl", postgres.DefaultLeaseTTL, "how long a session stays with this process after it stops renewing its lease (it renews every third of it)")
	autoTokens := flag.Int("auto-compact-tokens", 0, "compact automatically when provider-reported context reaches this many tokens (0 = off)")
	contextWindow := flag.Int("context-window", 0, "context window reported in usage_update (0 = 128000)")
	omit := flag.Bool("omit-summaries", false, "never send compaction summaries to the client")
	system := flag.String("system", "You are a careful coding agent.", "system prompt of new sessions")
	summaryDelay := flag.Duration("summary-delay", 0, "make every summary call wait this long first (for demos and tests of cancellation)")
	deltaSize := flag.Int("offline-delta-size", 0, "the offline provider streams its replies and summaries this many words at a time (0 = its default; for demos and tests of streaming)")
	v1Only := flag.Bool("v1-only", false, "speak ACP v1 only: answer every initialize with protocol version 1 (ACP v2 is offered otherwise)")
	verbose := flag.Bool("v", false, "debug logging")
	flag.Parse()

	level := zapcore.InfoLevel
	if *verbose {
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
		return err
	}
	if *deltaSize > 0 && name == "offline" {
		prov = offline.New(offline.WithDeltaSize(*deltaSize))
	}
	if *summaryDelay > 0 {
		prov = slowSummary{Provider: prov, delay: *summaryDelay}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, where, err := openStore(ctx, *storePath, *leaseTTL)
	if err != nil {
		return err
	}
	defer store.Close()
	log.Info("acp-agent starting", zap.String("provider", name), zap.String("store", where))

	return acp.Serve(ctx, os.Stdin, os.Stdout, acp.ServerOptions{
		Session: session.Config{
			Provider:          prov,
			Store:             store,
			SystemPrompt:      *system,
			AutoCompactTokens: *autoTokens,
			Tools:             tools(),
			Logger:            log,
		},
		OmitSummaries: *omit,
		ContextWindow: *contextWindow,
		V1Only:        *v1Only,
		Logger:        log,
	})
}

// closingStore is a history.Store the agent closes on exit.
type closingStore interface {
	history.Store
	Close() error
}

// openStore opens the PostgreSQL store for a postgres:// or postgresql://
// URL and the SQLite file at any other path. It returns the store and how to
// name it in logs (a URL without its password).
func openStore(ctx context.Context, spec string, leaseTTL time.Duration) (closingStore, string, error) {
	if lower := strings.ToLower(spec); strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		where := "postgres"
		if u, err := url.Parse(spec); err == nil {
			where = u.Redacted()
		}
		st, err := postgres.Open(ctx, spec, postgres.WithLeaseTTL(leaseTTL))
		if err != nil {
			return nil, "", err
		}
		return st, where, nil
	}
	if err := os.MkdirAll(filepath.Dir(spec), 0o700); err != nil {
		return nil, "", err
	}
	st, err := sqlite.Open(spec, sqlite.WithLeaseTTL(leaseTTL))
	if err != nil {
		return nil, "", err
	}
	return st, spec, nil
}

// chooseProvider picks the provider from the environment (see the command's
// documentation): Anthropic first, then OpenAI, then offline.
func chooseProvider(log *zap.Logger) (provider.Provider, string, error) {
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		p, err := anthropic.FromEnv(anthropic.WithLogger(log))
		if err != nil {
			return nil, "", err
		}
		return p, "anthropic:" + p.Model(), nil
	}
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		p, err := openai.FromEnv(openai.WithLogger(log))
		if err != nil {
			return nil, "", err
		}
		return p, "openai:" + p.Model(), nil
	}
	return offline.New(), "offline", nil
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
