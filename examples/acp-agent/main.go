// Command acp-agent is the sessionkit ACP agent an editor launches: it speaks
// the Agent Client Protocol (v1 and, to a client that asks for it, v2; with
// session compaction) on stdin and stdout and logs to stderr (--v1-only: v1 only).
//
// --provider offline|openai|anthropic (or SESSIONKIT_PROVIDER) names the
// model provider. Without it: ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL,
// which then needs the key) picks the Anthropic provider; otherwise
// OPENAI_API_KEY or OPENAI_BASE_URL the OpenAI-compatible provider;
// otherwise the offline provider, only when no provider variable is set at
// all, and a line on stderr says so. A variable that is set but not enough
// (SESSIONKIT_MODEL alone, ANTHROPIC_BASE_URL without a key, a blank key)
// is a startup error naming what is missing. SESSIONKIT_MODEL names the
// model of either (defaults: claude-sonnet-5-5, gpt-4o-mini). Both base
// URLs work with or without "/v1". Every model call is bounded by
// --request-timeout (the whole attempt) and --idle-timeout (no byte for
// that long); a call still waiting is logged every --wait-log-interval.
// A session's system prompt is --system, then its project's instructions
// (AGENTS.md, or CLAUDE.md where a directory has no AGENTS.md, in the cwd
// and each parent up to the repository root or an additional directory,
// outermost first, at most 32 KiB; the files are logged and named in the
// response's _meta.sessionkit.projectInstructions;
// --no-project-instructions leaves them out), then what the editor sends
// as systemPrompt (append; override replaces --system).
// Each session gets the workspace tools (read_file, write_file, edit_file,
// list_files, search, run_command) confined to the directories the editor
// named; files and commands go through the editor when it offers fs and
// terminals. A session has a mode the editor shows and switches (v1 modes,
// and the "mode" config option of v1 and v2): read-only (reading tools and
// recall only), ask (the default: the user's permission before every
// change, command and MCP tool call), auto-edit (edits without asking;
// commands and MCP calls ask) and full-auto (nothing asks; the default
// under --allow-all). The "model" config option offers the models of
// --models a,b,c (default: the provider's configured model alone). The
// MCP servers the editor names (stdio, and http) are started for the
// session and end with it; one that fails is told to the user and the
// session goes on. Commands run in a sandbox: on Linux
// under Landlock, writing only in the session's directories, without
// network outside full-auto mode unless --command-network, with a clean environment (plus the
// names of --command-env; provider and credential variables never), every
// process they started ended with them; --sandbox=off|auto|required says
// what to do where Landlock is missing (auto: run unconfined and say so;
// required: refuse commands). See docs/security.md. MCP servers get the
// same clean environment (plus what the editor sets for them), their
// stderr goes to the log.
// At most --max-sessions sessions (256) are open at once on the
// connection; one more is refused until one closes. A turn step the model
// rejects as longer than its context is recovered by one compaction and a
// retry (session.Config.CompactOnOverflow; --compact-on-overflow=false
// makes such a turn fail instead).
//
// Sessions are kept in a SQLite file (--store), so session/load works across
// restarts, or in PostgreSQL when --store is a postgres:// URL. Either way
// several agent processes (on one machine with SQLite, on several with
// PostgreSQL) share the sessions, each session served by one process at a
// time: another process asking for it is told which one serves it
// (docs/scale-out.md).
//
// With OTEL_EXPORTER_OTLP_ENDPOINT (or its _TRACES_ and _METRICS_
// variants) set, the sessions' traces and metrics are exported over
// OTLP/HTTP (never to stdout); the other standard OTEL_* variables apply,
// and a value it cannot honour is a startup error naming the variable
// (docs/observability.md).
//
// A configuration it cannot serve (a negative or non-numeric count or
// duration, an unknown flag or argument, a malformed URL in --store,
// OPENAI_BASE_URL or ANTHROPIC_BASE_URL, an unknown --provider, a provider
// variable that is set but not enough, a blank key, a --store that is a
// directory or cannot be written, an unknown --sandbox mode, a
// --command-env that is not a name or names a provider or credential
// variable) is reported before anything is served, on one line of stderr
// that names the flag or variable, with exit status 2. A session whose cwd
// is not an absolute, existing directory is refused (-32602). --version
// prints the version. A failure
// while serving exits with status 1.
//
// When stdin ends, the requests read before are answered (a prompt when
// its turn ends, at most 30 s later: then it is cancelled), and the agent
// exits 0. SIGINT or SIGTERM stops it, stdin open or not: the running
// turns are cancelled (their commands end), the sessions and the store
// closed, and it exits 0; when that does not finish within 3 s (a store
// that does not answer), or at a second SIGINT or SIGTERM, it exits at
// once with 128 plus the signal's number (130 for SIGINT, 143 for
// SIGTERM).
//
//	acp-agent --store ~/.local/share/sessionkit/sessions.db --auto-compact-tokens 100000
//	acp-agent --store postgres://sessionkit@db.internal:5432/sessionkit --lease-ttl 15s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/fromenv"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/mcp"
	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

func main() {
	sandbox.Main() // first: run_command starts this executable again as its sandbox helper
	os.Exit(agentMain(os.Args[1:]))
}

// agentMain runs the agent with the command-line arguments args and returns
// its exit status: 2 for a configuration that cannot be served (bad flags,
// variables or store path), found before anything is served; 1 for a
// failure while serving.
func agentMain(args []string) int {
	return exitStatus(os.Stderr, "acp-agent", run(args))
}

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
	plan          bool           // --plan: the plan tool, shown to the editor as plan updates
	thinking      int            // --thinking-budget: extended thinking, tokens of reasoning per response; 0 = off
	embedModel    string         // --embedding-model: the openai provider embeds messages with it; "" = no embedder
	overflow      bool           // --compact-on-overflow: recover a turn step the model's context cannot hold
	sandbox       sandbox.Policy // run_command's mode, network and added environment
	maxSessions   int
	provider      string
	reqTimeout    time.Duration
	idleTimeout   time.Duration
	waitLog       time.Duration
	version       bool
	models        []string            // --models: the models a session may choose
	prices        provider.PriceTable // --prices: nil = none
	pricesFile    string
	noProject     bool // --no-project-instructions
}

// flagName finds the flags the flag package names in its errors ("flag
// provided but not defined: -x", "invalid value ... for flag -x"), which
// the errors name as the README does, --x.
var flagName = regexp.MustCompile(`(: |for flag |for )-([A-Za-z][\w-]*)`)

// parseFlags parses and checks the command line. Every error is an
// *usageError of one line that names the flag or argument at fault; -h
// prints the usage and returns flag.ErrHelp.
func parseFlags(args []string) (*config, error) {
	var c config
	flags := flag.NewFlagSet("acp-agent", flag.ContinueOnError)
	flags.SetOutput(io.Discard) // errors are printed on one line by agentMain
	flags.StringVar(&c.store, "store", defaultStore(), "SQLite file, or postgres:// URL, that keeps the sessions")
	flags.DurationVar(&c.leaseTTL, "lease-ttl", postgres.DefaultLeaseTTL, "how long a session stays with this process after it stops renewing its lease (it renews every third of it)")
	flags.IntVar(&c.autoTokens, "auto-compact-tokens", 0, "compact automatically when provider-reported context reaches this many tokens (0 = off)")
	flags.IntVar(&c.contextWindow, "context-window", 0, "context window reported in usage_update (0 = 128000)")
	flags.BoolVar(&c.omit, "omit-summaries", false, "never send compaction summaries to the client")
	flags.BoolVar(&c.v1Only, "v1-only", false, "speak ACP v1 only: answer every initialize with protocol version 1 (ACP v2 is offered otherwise)")
	flags.StringVar(&c.system, "system", "You are a careful coding agent.", "system prompt of new sessions")
	flags.DurationVar(&c.summaryDelay, "summary-delay", 0, "make every summary call wait this long first (for demos and tests of cancellation)")
	flags.IntVar(&c.deltaSize, "offline-delta-size", 0, "the offline provider streams its replies and summaries this many words at a time (0 = its default; for demos and tests of streaming)")
	flags.BoolVar(&c.allowAll, "allow-all", false, "start sessions in full-auto mode, where nothing asks the user's permission (for scripts; the editor may switch the mode)")
	flags.BoolVar(&c.verbose, "v", false, "debug logging")
	flags.BoolVar(&c.overflow, "compact-on-overflow", true, "when the model rejects a turn step as longer than its context, compact once and retry the step (--compact-on-overflow=false turns it off: the turn fails)")
	flags.BoolVar(&c.recall, "recall", true, "give the model the recall tool, which searches and reads the archived conversation (-recall=false turns it off)")
	flags.IntVar(&c.thinking, "thinking-budget", 0, fmt.Sprintf("let Claude (the anthropic provider) think before it answers, with at most this many tokens of reasoning per response (%d to %d; 0 = off); the editor shows the reasoning as the agent's thoughts (OpenAI-compatible servers' reasoning_content is shown without it)", anthropic.MinThinkingBudget, anthropic.DefaultMaxTokens-1))
	flags.StringVar(&c.embedModel, "embedding-model", "", "with the openai provider, embed every message with this model of the server's /v1/embeddings (for example text-embedding-3-small, or nomic-embed-text on Ollama), so that recall finds what was said in other words; off by default")
	flags.BoolVar(&c.plan, "plan", true, "give the model the plan tool, whose checklist the editor shows as the agent's plan (--plan=false turns it off)")
	c.sandbox.Mode = sandbox.Auto
	flags.Func("sandbox", "run_command's Landlock sandbox: off, auto (confine where the kernel can, warn elsewhere) or required (refuse commands where it cannot) (default auto)", func(s string) error {
		m, err := sandbox.ParseMode(s)
		c.sandbox.Mode = m
		return err
	})
	flags.Func("command-env", "an environment variable `NAME` commands also get (repeatable, or a comma list); provider and credential names are refused", func(s string) error {
		for n := range strings.SplitSeq(s, ",") {
			n = strings.TrimSpace(n)
			if err := sandbox.EnvName(n); err != nil {
				return err
			}
			c.sandbox.Env = append(c.sandbox.Env, n)
		}
		return nil
	})
	flags.BoolVar(&c.sandbox.Network, "command-network", false, "let sandboxed commands use the network (IPv4 and IPv6; never local UNIX sockets) in every mode (by default only in full-auto mode)")
	flags.IntVar(&c.maxSessions, "max-sessions", acp.DefaultMaxSessions, "the most sessions open at once on the connection: a session/new, session/load or session/resume past it is refused")
	flags.StringVar(&c.provider, "provider", "", "model provider: offline, openai or anthropic (default: $SESSIONKIT_PROVIDER, else chosen from the provider variables)")
	flags.DurationVar(&c.reqTimeout, "request-timeout", openai.DefaultTimeout, "longest a model call's attempt may take, first byte to last (then it fails, retryable)")
	flags.DurationVar(&c.idleTimeout, "idle-timeout", openai.DefaultIdleTimeout, "longest a model call may go without a byte from the server (then it fails, retryable)")
	flags.DurationVar(&c.waitLog, "wait-log-interval", 30*time.Second, "log a line this often while a model call is waiting (0 = never)")
	flags.BoolVar(&c.version, "version", false, "print the version and exit")
	flags.StringVar(&c.pricesFile, "prices", "", "a JSON `file` of model prices per million tokens ({\"model\": {\"input\": 2.5, \"output\": 10, \"cache_read\": 1.25}}): usage_update then carries the session's cost")
	flags.BoolVar(&c.noProject, "no-project-instructions", false, "do not read the project's AGENTS.md (or CLAUDE.md) files into the system prompt")
	flags.Func("models", "the models a session may use, a comma `list` (the editor's model picker; the first is a new session's; default: the provider's configured model alone)", func(s string) error {
		for m := range strings.SplitSeq(s, ",") {
			m = strings.TrimSpace(m)
			switch {
			case m == "":
				return errors.New("an empty model name")
			case slices.Contains(c.models, m):
				return fmt.Errorf("model %q is listed twice", m)
			}
			c.models = append(c.models, m)
		}
		return nil
	})
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(os.Stderr)
			fmt.Fprintln(os.Stderr, "usage: acp-agent [flags]   (speaks ACP on stdin and stdout)")
			flags.PrintDefaults()
			fmt.Fprint(os.Stderr, exitStatuses)
			return nil, err
		}
		return nil, usagef("%s", flagName.ReplaceAllString(err.Error(), "$1--$2"))
	}
	switch {
	case flags.NArg() > 0:
		return nil, usagef("unexpected argument %q: acp-agent takes flags only (see -h)", flags.Arg(0))
	case c.autoTokens < 0:
		return nil, usagef("--auto-compact-tokens %d is negative (0 turns automatic compaction off)", c.autoTokens)
	case c.contextWindow < 0:
		return nil, usagef("--context-window %d is negative (0 means the default)", c.contextWindow)
	case c.leaseTTL <= 0:
		return nil, usagef("--lease-ttl %v is not positive", c.leaseTTL)
	case c.summaryDelay < 0:
		return nil, usagef("--summary-delay %v is negative", c.summaryDelay)
	case c.deltaSize < 0:
		return nil, usagef("--offline-delta-size %d is negative (0 means the default)", c.deltaSize)
	case c.maxSessions <= 0:
		return nil, usagef("--max-sessions %d is not positive: give the most sessions open at once on the connection (default %d)", c.maxSessions, acp.DefaultMaxSessions)
	case c.reqTimeout <= 0:
		return nil, usagef("--request-timeout %v is not positive", c.reqTimeout)
	case c.idleTimeout <= 0:
		return nil, usagef("--idle-timeout %v is not positive", c.idleTimeout)
	case c.thinking < 0:
		return nil, usagef("--thinking-budget %d is negative (0 turns thinking off)", c.thinking)
	case c.thinking > 0 && c.thinking < anthropic.MinThinkingBudget:
		return nil, usagef("--thinking-budget %d is below Anthropic's minimum of %d tokens (0 turns thinking off)", c.thinking, anthropic.MinThinkingBudget)
	case c.thinking >= anthropic.DefaultMaxTokens:
		return nil, usagef("--thinking-budget %d is not below the %d tokens a response may have: give at most %d", c.thinking, anthropic.DefaultMaxTokens, anthropic.DefaultMaxTokens-1)
	case c.waitLog < 0:
		return nil, usagef("--wait-log-interval %v is negative (0 turns the lines off)", c.waitLog)
	case c.embedModel != "" && strings.TrimSpace(c.embedModel) != c.embedModel:
		return nil, usagef("--embedding-model %q has white space around the model name", c.embedModel)
	case strings.TrimSpace(c.store) == "":
		return nil, usagef("--store is empty: give a SQLite file path or a postgres:// URL")
	}
	if c.pricesFile != "" {
		data, err := os.ReadFile(c.pricesFile)
		if err != nil {
			return nil, usagef("--prices: %v", err)
		}
		if c.prices, err = provider.ParsePriceTable(data); err != nil {
			return nil, usagef("--prices %s: %v", c.pricesFile, err)
		}
	}
	return &c, nil
}

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.version {
		fmt.Println(version())
		return nil
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

	var notice strings.Builder // printed once the store is open: startup errors stay one line
	prov, name, err := fromenv.Select(fromenv.Selection{
		Name: c.provider, From: "--provider",
		RequestTimeout: c.reqTimeout, IdleTimeout: c.idleTimeout,
		Log: log, Notice: &notice, ThinkingBudget: c.thinking, EmbeddingModel: c.embedModel,
	})
	if err != nil {
		return usagef("%v", err)
	}
	var embedder provider.Embedder
	if c.embedModel != "" {
		var ok bool
		if embedder, ok = prov.(provider.Embedder); !ok {
			return usagef("--embedding-model %s needs the openai provider (an OpenAI-compatible server's /v1/embeddings); the provider is %s", c.embedModel, name)
		}
	}
	prov = logWaits(prov, log, c.waitLog)
	if c.deltaSize > 0 && name == fromenv.Offline {
		prov = logWaits(offline.New(offline.WithDeltaSize(c.deltaSize)), log, c.waitLog)
	}
	offered := models(c.models, prov) // before slowSummary, which does not describe the model
	unpriced(c, offered, &notice)
	if c.summaryDelay > 0 {
		prov = slowSummary{Provider: prov, delay: c.summaryDelay}
	}
	prov = demoProvider(prov)
	tel, err := otelFromEnv(context.Background(), os.Getenv, log)
	if err != nil {
		return err
	}
	ctx, stop := stopOnSignal(log, stopBound, os.Exit)
	defer stop() // after the store is closed: a stuck Close is bounded too
	store, where, err := openStore(ctx, c.store, c.leaseTTL)
	if err != nil {
		tel.flush(log)
		return err
	}
	defer store.Close()
	defer tel.flush(log) // once Serve has closed the sessions: their last spans are sent
	if notice.Len() > 0 {
		fmt.Fprint(os.Stderr, "acp-agent: ", notice.String())
	}
	log.Info("acp-agent starting", zap.String("provider", name), zap.String("store", where))
	logSandbox(log, c.sandbox)
	if len(tel.where) > 0 {
		log.Info("exporting OpenTelemetry over OTLP/HTTP", zap.Strings("signals", tel.where))
	}

	return acp.Serve(ctx, interruptible(os.Stdin), os.Stdout, acp.ServerOptions{
		Session: session.Config{
			Provider:          prov,
			Store:             store,
			SystemPrompt:      c.system,
			AutoCompactTokens: c.autoTokens,
			Tools:             demoTools,
			Logger:            log,
			Recall:            c.recall,
			Embedder:          embedder,
			Plan:              c.plan,
			CompactOnOverflow: c.overflow,
			Pricing:           pricing(c.prices),
			TracerProvider:    tel.tracer,
			MeterProvider:     tel.meter,
		},
		// The offline provider has no memory of a file's content: its
		// edits are the user's words ("replace X with Y in F"), never a
		// stale recollection, so the guard against stale edits, made for
		// a model's, stays off for it (docs/compaction.md, "Files").
		SessionTools:  sessionTools(workspace.Options{Sandbox: c.sandbox, NoFileGuard: name == fromenv.Offline}, mcp.Options{}, log),
		Instructions:  projectInstructions(c.noProject, log),
		Modes:         modes(c.allowAll),
		Models:        offered,
		McpHTTP:       true,
		OmitSummaries: c.omit,
		V1Only:        c.v1Only,
		ContextWindow: c.contextWindow,
		MaxSessions:   c.maxSessions,
		Logger:        log,
	})
}

// unpriced says, with --prices, which of the models offered the table has
// no price for: their responses are counted and not priced.
func unpriced(c *config, offered []acp.Model, notice *strings.Builder) {
	if c.prices == nil {
		return
	}
	var missing []string
	for _, m := range offered {
		if !c.prices.Has(m.ID) {
			missing = append(missing, m.ID)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(notice, "--prices %s has no price for %s: its responses are counted but not priced.\n", c.pricesFile, strings.Join(missing, ", "))
	}
}

// pricing is the session's Pricing: nil without a table (a nil
// PriceTable in the interface would not be nil).
func pricing(t provider.PriceTable) provider.Pricing {
	if t == nil {
		return nil
	}
	return t
}

// projectInstructions reads a session's AGENTS.md files
// (workspace.ReadInstructions: from its cwd up to the repository root or
// an additional directory); nil under --no-project-instructions. A bound
// that cut them, and a file that could not be read, are logged.
func projectInstructions(off bool, log *zap.Logger) func(cwd string, dirs []string) acp.Instructions {
	if off {
		return nil
	}
	return func(cwd string, dirs []string) acp.Instructions {
		in, err := workspace.ReadInstructions(cwd, workspace.InstructionOptions{Stops: dirs})
		if err != nil {
			log.Warn("project instructions: some could not be read", zap.String("cwd", cwd), zap.Error(err))
		}
		if in.Cut {
			log.Warn("project instructions were cut to their bound", zap.String("cwd", cwd), zap.Int("max_bytes", workspace.DefaultInstructionBytes), zap.Strings("files", in.Files))
		}
		return acp.Instructions{Text: in.Text, Files: in.Files}
	}
}

// modes are the session modes (workspace.Modes): the first is a new
// session's, ask, or full-auto under --allow-all.
func modes(allowAll bool) []schema.SessionMode {
	all := workspace.Modes()
	if allowAll {
		i := slices.IndexFunc(all, func(m schema.SessionMode) bool { return m.ID == workspace.ModeFullAuto })
		all[0], all[i] = all[i], all[0]
	}
	return all
}

// models are the models a session may choose: --models, or the provider's
// configured model alone (none when it names none).
func models(list []string, p provider.Provider) []acp.Model {
	if len(list) == 0 {
		if d, ok := p.(provider.Describer); ok && d.Info().Model != "" {
			list = []string{d.Info().Model}
		}
	}
	out := make([]acp.Model, 0, len(list))
	for _, m := range list {
		out = append(out, acp.Model{ID: m})
	}
	return out
}

// logSandbox says at startup how run_command runs commands: confined (and
// in namespaces of their own), or why not (and, under --sandbox=required,
// that every command is refused).
func logSandbox(log *zap.Logger, p sandbox.Policy) {
	w := p.Warning()
	switch {
	case w == "":
		log.Info("commands run in the sandbox", zap.String("sandbox", sandbox.Available().String()), zap.Bool("network", p.Network), zap.Strings("command_env", p.Env))
	case p.Mode == sandbox.Required:
		log.Warn("--sandbox=required but commands cannot be confined: run_command will refuse every command", zap.String("why", w))
	case p.Mode != sandbox.Off && sandbox.Available().Available && !sandbox.Available().Contained:
		log.Warn("commands run under Landlock but not in namespaces of their own", zap.String("why", w))
	default:
		log.Warn("commands are not sandboxed", zap.String("why", w), zap.String("sandbox", string(p.Mode)))
	}
}

// closingStore is a history.Store the agent closes on exit.
type closingStore interface {
	history.Store
	Close() error
}

// openStore opens the PostgreSQL store for a postgres:// or postgresql://
// URL and the SQLite file at any other path. It returns the store and how to
// name it in logs (postgres.Redact: without a password). A malformed URL, or
// a path that is a directory or cannot be written, is a *usageError that
// names --store (and never shows a password).
func openStore(ctx context.Context, spec string, leaseTTL time.Duration) (closingStore, string, error) {
	if isPostgresURL(spec) {
		where := postgres.Redact(spec)
		if _, err := url.Parse(spec); err != nil {
			return nil, "", usagef("--store %s: not a valid postgres:// URL (%s)", where, redactedParseError(err))
		}
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
	return st, postgres.Redact(spec), nil
}

// redactedParseError is the reason of a URL parse error without the URL,
// which may hold a password: a reason that quotes part of it (an "invalid
// port" that is a password's start, say) is not shown.
func redactedParseError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) && !strings.Contains(ue.Err.Error(), `"`) {
		return ue.Err.Error()
	}
	return "malformed"
}

// checkStorePath checks that the SQLite file at path can be used: it is not
// a directory, its directory exists or can be made (0700), and the file and
// its directory (where SQLite keeps its -wal and -shm files) are writable.
func checkStorePath(path string) error {
	name := postgres.Redact(path) // a mistyped key=value connection string, say
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usagef("--store %s is a directory: give the path of a SQLite file", name)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return usagef("--store %s: cannot make its directory: %v", name, pathReason(err))
	}
	probe, err := os.CreateTemp(dir, ".sessionkit-probe-*")
	if err != nil {
		return usagef("--store %s: its directory is not writable: %v", name, pathReason(err))
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		_ = f.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return usagef("--store %s is not writable: %v", name, pathReason(err))
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
	return fromenv.Select(fromenv.Selection{Log: log})
}

// version is the one line of --version: the module's version (a tagged
// build, or "(devel)"), the VCS revision and time when the build has
// them, and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "acp-agent " + acp.Version
	}
	parts := []string{"acp-agent", acp.Version}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		parts = append(parts, "(module "+v+")")
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if r := settings["vcs.revision"]; r != "" {
		if settings["vcs.modified"] == "true" {
			r += "+modified"
		}
		parts = append(parts, r)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	return strings.Join(append(parts, info.GoVersion), " ")
}

// demoTools are the tools of every session besides the workspace tools:
// none, unless the demotools build tag adds echo and fail (demotools.go).
var demoTools []session.Tool

// demoProvider wraps the provider in a build with the demotools tag (the
// faults its test settings ask for); it is the provider itself otherwise.
var demoProvider = func(p provider.Provider) provider.Provider { return p }

// slowSummary delays summary calls; the delay ends early when the call is
// cancelled.
type slowSummary struct {
	provider.Provider
	delay time.Duration
}

// TakesImage is the wrapped provider's (provider.ImageTaker).
func (p slowSummary) TakesImage(mimeType string) bool {
	return provider.TakesImage(p.Provider, mimeType)
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
