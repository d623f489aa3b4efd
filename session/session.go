package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/eventfeed"
	"github.com/sessionkit/sessionkit/provider"
)

// Agent is the surface shared by a local [Session] and a remote session
// driven over ACP (acp.RemoteSession), so that applications can hold either.
type Agent interface {
	ID() string
	Prompt(ctx context.Context, req PromptRequest) (*Handle[TurnResult], error)
	Compact(ctx context.Context, req CompactRequest) (*Handle[CompactResult], error)
	Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error)
	Close() error
}

var _ Agent = (*Session)(nil)

// Session is one conversation: its canonical history, configuration, ordered
// input queue and timeline. All methods are safe for concurrent use.
type Session struct {
	id      string
	store   history.Store
	inbox   chan *command    // admission; unbuffered, read by the loop
	ctl     chan func(*loop) // subscriptions, cancellations and reads
	closing chan struct{}    // closed by Close
	done    chan struct{}    // closed when the loop and the worker have exited
	once    sync.Once
	// settings is the loop's last published Settings (Session.Settings).
	settings atomic.Pointer[Settings]
	// leaseLost is set before the loop closes a session whose lease was lost,
	// so that admission and the commands it ends say why (closedErr).
	leaseLost atomic.Bool
	// prov is Config.Provider, which a prompt's images are checked
	// against; set before the loop starts, never changed.
	prov provider.Provider
	// storeCtx is the context of every store call of the loop, its worker
	// and its event log; stopStore ends it closeGrace after the close began
	// (loop.beginClose) and once the loop has exited.
	storeCtx  context.Context
	stopStore context.CancelFunc
	// embed is the embedder (Config.Embedder), nil without one; set
	// before the loop starts, never changed.
	embed *embedder
}

// closedErr is the error of a call on a closed session.
func (s *Session) closedErr() error {
	if s.leaseLost.Load() {
		return ErrLeaseLost
	}
	return ErrClosed
}

// newID returns a time-ordered unique ID.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// New opens the session cfg.ID, creating it when the store has no session
// of that ID (create-or-resume), and starts its loop. With an empty cfg.ID it
// creates a new session with a fresh ID. A stored session is resumed: its
// Active, retained summary and settings, recording compactions the previous
// process left in progress as failed (docs/design.md §5.5). Use [Open] to open
// only a session that exists, so that a mistyped ID fails instead of
// starting an empty conversation.
//
// # Settings on reopen
//
// A resumed session takes each setting (SystemPrompt, AutoCompactTokens,
// CompactInstructions, ContextWindow, AutoCompactRatio, MaxSteps,
// CompactOnOverflow, Recall, Model, Mode) from cfg,
// except the settings that Configure changed at run time: those keep their
// stored values (see [Settings].Configured). So a new system prompt in the
// application's code takes effect, and a change made by the editor survives
// a reload; Configure again to change such a setting. Title and Cwd stay as
// the session was created with. New logs at info level the settings where
// cfg and the stored ones differ, and stores the effective settings.
// [Session.Settings] reports them.
//
// # Stores with and without leases
//
// Every [history.Store] serves every feature of a session (the event log
// across processes, Recall, Uncompact, settings that survive reopen). The
// one thing a store may lack is leasing ([history.Leaser]): with a store
// that has it (history/sqlite, history/postgres), New takes the session's
// lease before it reads the session, fails with [history.ErrLeased] (or
// waits, with cfg.WaitForLease) while another process serves it, and every
// write goes through the lease, so a process that lost it cannot write.
// Without it (history/memstore) nothing keeps a second Session, in this
// process or another on the same data, from serving the same session: their
// writes then fail with [history.ErrConflict], so such a store must have
// one Session per session ID at a time, and cfg.WaitForLease does nothing.
//
// ctx governs opening only. New returns an error wrapping ErrInvalid for an
// invalid cfg, and the store's error when the session cannot be read or
// created.
func New(ctx context.Context, cfg Config) (*Session, error) {
	return start(ctx, cfg, true)
}

// Open opens the existing session cfg.ID and starts its loop, as [New] does
// for a stored session. It never creates one: for an ID the store does not
// hold it returns an error for which errors.Is(err, history.ErrNotFound)
// holds. An empty cfg.ID is ErrInvalid.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.ID == "" {
		return nil, invalid("Open needs Config.ID")
	}
	return start(ctx, cfg, false)
}

// start is New (create true) and Open, in named steps: check cfg, take the
// lease, open or create the session, make its history whole, start the loop.
func start(ctx context.Context, cfg Config, create bool) (*Session, error) {
	set, tools, specs, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log, store, id := cfg.Logger, cfg.Store, cfg.ID

	// On a shared store the lease comes first: what follows reads the
	// session and recovers its interrupted compactions, which is only right
	// once no other process serves it.
	lease, reserved, err := takeLease(ctx, store, id, cfg.WaitForLease)
	if err != nil {
		return nil, err
	}
	if lease != nil {
		store = lease.Store()
	}
	opened := false
	defer func() {
		if !opened && lease != nil {
			releaseLease(lease, log)
		}
	}()

	// Recall is checked before anything is written: with the settings
	// given, and again with the ones a stored session resumes with.
	if err := checkRecall(tools, set); err != nil {
		return nil, err
	}
	snap, created, err := open(ctx, store, id, set, cfg, create)
	if err != nil {
		return nil, err
	}
	// Before anything else is written: a session out of numbers is refused.
	elog, start, err := startNumbering(ctx, store, snap, created, reserved)
	if err != nil {
		return nil, err
	}
	version := snap.Version
	if !created {
		if version, set, err = resume(ctx, store, snap, set, cfg, log); err != nil {
			return nil, err
		}
		if err := checkRecall(tools, set); err != nil {
			return nil, err
		}
	}
	active, nextPos, version, err := mend(ctx, store, snap, version, log)
	if err != nil {
		return nil, err
	}

	// The log lacks the entries a process before stored and did not log
	// (and every entry of a session stored before the log kept its
	// coverage): log them now, before any number is given out.
	if snap.LogCovers < nextPos {
		start = repairLog(ctx, store, &elog, id, snap.LogCovers, nextPos, start, set, snap.Title, snap.Cwd, log)
	}

	// The Segments: the file ledger starts from the standing ones' files
	// (then Active's), and the context figure may come from the newest.
	var heads []history.Segment
	if snap.Archived > 0 {
		if heads, err = store.SegmentHeaders(ctx, id); err != nil {
			return nil, fmt.Errorf("session: read segments: %w", err)
		}
	}
	was, err := usageSoFar(ctx, store, id, created, heads)
	if err != nil {
		return nil, err
	}

	s := newSession(id, store, cfg.Provider)
	l := &loop{
		s:        s,
		log:      log.With(zap.String("session", id)),
		store:    store,
		prov:     cfg.Provider,
		sumProv:  cfg.SummaryProvider,
		hook:     cfg.BeforeCompact,
		tools:    tools,
		specs:    specs,
		set:      set,
		version:  version,
		active:   active,
		summary:  snap.Summary,
		archived: snap.Archived,
		nextPos:  nextPos,
		feed:     newFeed(cfg.EventHistory, start, elog),
		elog:     elog,
		maxTool:  cfg.MaxToolOutput,
		planOn:   cfg.Plan,
		maxQueue: cmp.Or(cfg.MaxQueue, DefaultMaxQueue),
		prune:    cfg.PruneToolResults,
		jobs:     make(chan func()),
		results:  make(chan func(*loop)),
		lease:    lease,
		storeTO:  cmp.Or(cfg.StoreTimeout, DefaultStoreTimeout),
		title:    snap.Title,
		cwd:      snap.Cwd,
		meter:    meter{pricing: cfg.Pricing, log: log},
		tel:      newTelemetry(cfg.TracerProvider, cfg.MeterProvider, id),
		cost:     was.cost,
	}
	l.lastTurn, l.afterTurn = was.last, was.after // the context as usageSoFar found it
	l.activePlans = planCalls(active)
	l.setSegFiles(standingFiles(heads))
	l.publishSettings()
	s.embed = newEmbedder(cfg, s, l.log)
	opened = true
	go l.work()
	go l.run()
	if s.embed != nil {
		s.embed.start()
	}
	return s, nil
}

// withDefaults fills in what cfg left zero and start needs at once: a
// logger that drops everything, a store in memory and a new session ID.
func (cfg Config) withDefaults() Config {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Store == nil {
		cfg.Store = memstore.New()
	}
	if cfg.ID == "" {
		cfg.ID = newID()
	}
	return cfg
}

// newSession is the Session of session id, whose loop is yet to start.
func newSession(id string, store history.Store, prov provider.Provider) *Session {
	s := &Session{
		id:      id,
		store:   store,
		inbox:   make(chan *command),
		ctl:     make(chan func(*loop)),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
		prov:    prov,
	}
	s.storeCtx, s.stopStore = context.WithCancel(context.Background())
	return s
}

// soFar is what the processes before this one left of a session's usage
// (usageSoFar).
type soFar struct {
	cost provider.Cost // the cost so far, which every UsageEvent carries on from
	// last is the context the conversation held at the last turn response
	// (its ledger record's figures), 0 without one; after are the standing
	// Segments committed after that response, oldest first (loop.afterTurn):
	// while one stands the figure is stale, as after a compaction in a live
	// session, and the newest one's ContextAfter is the estimate.
	last  int
	after []segContext
}

// usageSoFar reads what the processes before this one left of session
// id's usage: its cost from the ledger's totals, its context from the
// last turn response's record (history.Ledger.LastUsage) and heads, the
// session's Segment headers (nil when none stands). Without a turn
// response recorded (a fork's ledger starts empty) there is no figure and
// no Segment counts. An Uncompact is not looked at: it restored the
// context a compaction had cut, which is the last figure again, or the
// estimate of a Segment that still stands after it.
func usageSoFar(ctx context.Context, store history.Store, id string, created bool, heads []history.Segment) (soFar, error) {
	if created {
		return soFar{}, nil
	}
	totals, err := store.UsageTotals(ctx, id)
	if err != nil {
		return soFar{}, fmt.Errorf("session: read usage: %w", err)
	}
	was := soFar{cost: usageReport(totals).Total.Cost}
	rec, ok, err := store.LastUsage(ctx, id, string(provider.PurposeTurn))
	if err != nil {
		return soFar{}, fmt.Errorf("session: read usage: %w", err)
	}
	if !ok { // no turn response (a fork's ledger starts empty)
		return was, nil
	}
	was.last = usageOf(&rec).Total()
	// The standing Segments committed after the record: from the newest
	// back to the first one committed before it.
	for i := len(heads) - 1; i >= 0; i-- {
		g := &heads[i]
		if g.Undone() {
			continue
		}
		if !g.CreatedAt.After(rec.At) {
			break
		}
		was.after = append(was.after, segContext{id: g.ID, after: g.ContextAfter})
	}
	slices.Reverse(was.after)
	return was, nil
}

// checkConfig validates cfg and returns its settings and its tools, by name
// and as the provider sees them. Every error wraps ErrInvalid.
func checkConfig(cfg Config) (settings, map[string]Tool, []provider.ToolSpec, error) {
	if cfg.Provider == nil {
		return settings{}, nil, nil, invalid("Config.Provider is required")
	}
	set := settings{
		SystemPrompt:        cfg.SystemPrompt,
		AutoCompactTokens:   cfg.AutoCompactTokens,
		CompactInstructions: cfg.CompactInstructions,
		ContextWindow:       cfg.ContextWindow,
		AutoCompactRatio:    cfg.AutoCompactRatio,
		MaxSteps:            cfg.MaxSteps,
		CompactOnOverflow:   cfg.CompactOnOverflow,
		Recall:              cfg.Recall,
		Model:               cfg.Model,
		Mode:                cfg.Mode,
		ClientPrompt:        cfg.ClientPrompt,
		Instructions:        cfg.Instructions,
	}
	if err := set.validate(); err != nil {
		return settings{}, nil, nil, err
	}
	if cfg.MaxQueue < 0 || cfg.EventHistory < 0 || cfg.MaxToolOutput < 0 || cfg.StoreTimeout < 0 {
		return settings{}, nil, nil, invalid("MaxQueue, EventHistory, MaxToolOutput and StoreTimeout must not be negative")
	}
	if cfg.EmbedTimeout < 0 {
		return settings{}, nil, nil, invalid("EmbedTimeout %v is negative", cfg.EmbedTimeout)
	}
	if p := cfg.PruneToolResults; p.KeepRecent < 0 || p.MinBytes < 0 {
		return settings{}, nil, nil, invalid("PruneToolResults: KeepRecent and MinBytes must not be negative")
	}
	tools := make(map[string]Tool, len(cfg.Tools))
	specs := make([]provider.ToolSpec, 0, len(cfg.Tools))
	for _, t := range cfg.Tools {
		switch {
		case t.Name == "":
			return settings{}, nil, nil, invalid("a tool has no name")
		case t.Run == nil:
			return settings{}, nil, nil, invalid("tool %q has no Run function", t.Name)
		case len(t.Parameters) > 0 && !json.Valid(t.Parameters):
			return settings{}, nil, nil, invalid("tool %q parameters are not JSON", t.Name)
		}
		if _, dup := tools[t.Name]; dup {
			return settings{}, nil, nil, invalid("tool %q is declared twice", t.Name)
		}
		tools[t.Name] = t
		specs = append(specs, provider.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if cfg.Plan {
		if _, mine := tools[PlanTool]; mine {
			return settings{}, nil, nil, invalid("tool %q is the built-in tool of Config.Plan: rename it or turn Plan off", PlanTool)
		}
		tools[PlanTool] = planTool()
		specs = append(specs, planSpec)
	}
	return set, tools, specs, nil
}

// checkRecall refuses an application tool named like the built-in recall
// tool while set turns Recall on.
func checkRecall(tools map[string]Tool, set settings) error {
	if _, mine := tools[RecallTool]; mine && set.Recall {
		return invalid("tool %q is the built-in tool of Config.Recall: rename it or turn Recall off", RecallTool)
	}
	return nil
}

// takeLease takes the lease of session id when store has leases (nil
// otherwise), waiting for it with wait. The sequence-number reservation of
// an existing session rides in the lease's transaction: one write instead
// of two.
func takeLease(ctx context.Context, store history.Store, id string, wait bool) (history.Lease, *history.SeqReservation, error) {
	leaser, ok := store.(history.Leaser)
	if !ok {
		return nil, nil, nil
	}
	var reserved *history.SeqReservation
	take := func(ctx context.Context, id string) (history.Lease, error) {
		l, r, err := leaser.AcquireReserving(ctx, id, seqGap)
		reserved = &r
		return l, err
	}
	lease, err := acquire(ctx, take, id, wait)
	if err != nil {
		return nil, nil, err
	}
	return lease, reserved, nil
}

// mend makes an opened session's history whole before it serves: it records
// the compactions a previous process left in progress as failed, and answers
// the tool calls it left without results. It returns the session's Active,
// next position and version after that.
func mend(ctx context.Context, store history.Store, snap *history.Snapshot, version uint64, log *zap.Logger) ([]history.Message, int64, uint64, error) {
	if len(snap.Interrupted) > 0 {
		v, ids, err := store.Recover(ctx, snap.ID, version, time.Now())
		if err != nil {
			return nil, 0, 0, fmt.Errorf("session: recover interrupted compactions: %w", err)
		}
		version = v
		log.Info("recorded interrupted compactions as failed", zap.String("session", snap.ID), zap.Strings("compactions", ids))
	}
	active, nextPos := snap.Active, snap.NextPosition
	// A process that stopped between a tool call and its results left calls
	// without answers; a provider would reject that history.
	if missing := unanswered(active); len(missing) > 0 {
		msgs := notRun(missing, "the session stopped before this tool call ran")
		v, err := store.Append(ctx, snap.ID, version, msgs)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("session: answer interrupted tool calls: %w", err)
		}
		version = v
		active = append(active, msgs...)
		nextPos += int64(len(msgs))
	}
	return active, nextPos, version, nil
}

// acquire takes the lease of session id with take; with wait it retries
// while another holder has it, or while a lock it needs is busy
// (history.ErrBusy: a holder stopped inside a write, a tool's transaction),
// with back-off until ctx ends.
func acquire(ctx context.Context, take func(context.Context, string) (history.Lease, error), id string, wait bool) (history.Lease, error) {
	delay := 50 * time.Millisecond
	for {
		lease, err := take(ctx, id)
		if err == nil {
			return lease, nil
		}
		if !wait || !(errors.Is(err, history.ErrLeased) || errors.Is(err, history.ErrBusy)) {
			return nil, fmt.Errorf("session: lease %q: %w", id, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("session: waiting for the lease of %q: %w (%w)", id, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// releaseLease gives a session's lease up, so that another process can take
// the session at once.
func releaseLease(lease history.Lease, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		// It expires by itself; until then other processes wait.
		log.Warn("releasing the session's lease", zap.String("session", lease.Session()), zap.Error(err))
	}
}

// open loads session id, or creates it (when create is set) with set and
// cfg's Title and Cwd; created reports which.
func open(ctx context.Context, store history.Store, id string, set settings, cfg Config, create bool) (snap *history.Snapshot, created bool, err error) {
	snap, err = store.Load(ctx, id)
	if err == nil {
		return snap, false, nil
	}
	if !errors.Is(err, history.ErrNotFound) || !create {
		return nil, false, fmt.Errorf("session: load %q: %w", id, err)
	}
	blob, err := marshalSettings(set)
	if err != nil {
		return nil, false, err
	}
	snap, err = store.Create(ctx, history.NewSession{ID: id, Config: blob, Title: cfg.Title, Cwd: cfg.Cwd})
	if err != nil {
		return nil, false, fmt.Errorf("session: create %q: %w", id, err)
	}
	return snap, true, nil
}

// resume applies the rule of settings on reopen (see New) to a stored
// session, storing the effective settings when they changed, and returns
// the session's version and settings.
func resume(ctx context.Context, store history.Store, snap *history.Snapshot, set settings, cfg Config, log *zap.Logger) (uint64, settings, error) {
	var stored settings
	if len(snap.Config) > 0 {
		if err := json.Unmarshal(snap.Config, &stored); err != nil {
			return 0, set, fmt.Errorf("session: stored settings of %q: %w", snap.ID, err)
		}
	}
	eff, differ := reopened(set, stored)
	if len(differ) > 0 {
		fields := []zap.Field{zap.String("session", snap.ID)}
		for _, f := range differ {
			winner := "config"
			if slices.Contains(eff.Configured, f.name()) {
				winner = "stored (set by Configure)"
			}
			fields = append(fields, zap.Dict(f.name(), zap.Any("config", f.value(&set)), zap.Any("stored", f.value(&stored)), zap.String("effective", winner)))
		}
		log.Info("the stored settings differ from Config", fields...)
	}
	if (cfg.Title != "" && cfg.Title != snap.Title) || (cfg.Cwd != "" && cfg.Cwd != snap.Cwd) {
		log.Info("the session keeps the title and working directory it was created with",
			zap.String("session", snap.ID), zap.String("title", snap.Title), zap.String("cwd", snap.Cwd),
			zap.String("config_title", cfg.Title), zap.String("config_cwd", cfg.Cwd))
	}
	blob, err := marshalSettings(eff)
	if err != nil {
		return 0, set, err
	}
	if string(blob) == string(snap.Config) {
		return snap.Version, eff, nil
	}
	v, err := store.SetConfig(ctx, snap.ID, snap.Version, blob)
	if err != nil {
		return 0, set, fmt.Errorf("session: store settings of %q: %w", snap.ID, err)
	}
	return v, eff, nil
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// Settings returns the session's effective settings: those of Config or the
// stored ones as New's rule decided, changed by every Configure applied
// since, and the session's title and working directory. After Close it
// returns the last ones.
func (s *Session) Settings() Settings {
	set := *s.settings.Load()
	set.Configured = slices.Clone(set.Configured)
	return set
}

// publishSettings makes the loop's settings what Session.Settings returns.
// The loop calls it whenever they change; the value is never changed after.
func (l *loop) publishSettings() {
	set := l.set.public(l.title, l.cwd)
	l.s.settings.Store(&set)
}

// admit queues c. The loop decides, as it accepts c, whether it is queued
// (the queue's bound, a Compact's Through) and answers on c.verdict. The
// ctx of the call governs admission only.
func (s *Session) admit(ctx context.Context, c *command) error {
	select {
	case <-s.closing:
		return s.closedErr()
	default:
	}
	c.verdict = make(chan error, 1)
	select {
	case s.inbox <- c:
		return <-c.verdict // the loop answers as it accepts c, at once
	case <-s.closing:
		return s.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue admits command c with a new Handle, which finish (c's finish
// function of its kind) finishes and whose Cancel asks the loop to cancel
// c. Errors as for admit.
func enqueue[R any](ctx context.Context, s *Session, c *command, finish *func(R)) (*Handle[R], error) {
	h, f := newHandle[R](c.id, func() { s.cancel(c.id) })
	*finish = f
	if err := s.admit(ctx, c); err != nil {
		return nil, err
	}
	return h, nil
}

// cancel asks the loop to cancel command id.
func (s *Session) cancel(id string) {
	select {
	case s.ctl <- func(l *loop) { l.cancel(id) }:
	case <-s.done:
	}
}

// Prompt queues a prompt. It starts a turn when the session is idle and no
// checkpoint command is waiting; otherwise it waits its turn in queue order.
// The Handle finishes when the turn has ended and the checkpoint commands
// queued during it (including an automatic compaction it triggered) have
// run. Errors: ErrInvalid (empty text and no attachments, attachments that
// break a rule of history.ValidAttachments, also wrapping
// history.ErrTooLarge, or an image the provider does not take), ErrClosed, ErrQueueFull, or ctx's
// error; nothing is queued then.
func (s *Session) Prompt(ctx context.Context, req PromptRequest) (*Handle[TurnResult], error) {
	if err := validInput("prompt", req.Text, req.Attachments, s.prov); err != nil {
		return nil, err
	}
	c := &command{id: newID(), kind: kindPrompt, text: req.Text, attachments: cloneAttachments(req.Attachments)}
	return enqueue(ctx, s, c, &c.finishTurn)
}

// Steer queues user input for the active turn: it becomes a user message
// (marked as a steer) at the next step checkpoint, so the next provider
// request sees it. On an idle session it is appended at once without
// starting a turn (docs/design.md §2.3). Errors as for Prompt.
func (s *Session) Steer(ctx context.Context, req SteerRequest) (*Handle[SteerResult], error) {
	if err := validInput("steer", req.Text, req.Attachments, s.prov); err != nil {
		return nil, err
	}
	c := &command{id: newID(), kind: kindSteer, text: req.Text, attachments: cloneAttachments(req.Attachments)}
	return enqueue(ctx, s, c, &c.finishSteer)
}

// Configure queues a settings change, applied at the next step checkpoint
// (or at once when idle) and used by every provider request after that
// (docs/design.md §2.4). The new settings are stored with the session. Errors as
// for Prompt; ErrInvalid also for an empty request or out-of-range values.
func (s *Session) Configure(ctx context.Context, req ConfigureRequest) (*Handle[ConfigureResult], error) {
	if req.empty() {
		return nil, invalid("configure request changes nothing")
	}
	probe := req.apply(settings{})
	if err := probe.validate(); err != nil {
		return nil, err
	}
	c := &command{id: newID(), kind: kindConfigure, configure: req}
	return enqueue(ctx, s, c, &c.finishConf)
}

// Compact queues a manual compaction and returns its Handle as soon as the
// command is queued; the Handle's ID is the compact ID. The compaction runs
// at once when the session is idle (after checkpoint commands queued before
// it), at the next step checkpoint of an active turn, or when that turn ends
// (docs/design.md §2.5, §2.6). It never starts a turn: its one summary call is the
// only model request it makes. Wait on the Handle for the result. Errors as
// for Prompt.
//
// With req.Through the compaction archives Active up to and including that
// message (see [CompactRequest]); ErrInvalid when it is not in Active.
func (s *Session) Compact(ctx context.Context, req CompactRequest) (*Handle[CompactResult], error) {
	c := &command{id: newID(), kind: kindCompact, text: req.Instructions, trigger: TriggerManual, pos: NoPosition, through: req.Through}
	return enqueue(ctx, s, c, &c.finishComp)
}

// Uncompact queues an undo of the newest compaction that is not undone
// yet, a checkpoint command like Compact (docs/design.md §4.11): in one storage
// transaction the messages of that Segment go back to the front of Active
// and the retained summary becomes the one before it; the Segment stays in
// the archive, marked undone (Segments shows it). The timeline records it
// (an *UncompactEvent, replayed at its position by Replay). With nothing
// to undo, the result's Err wraps history.ErrNothingToUndo. Errors as for
// Prompt.
func (s *Session) Uncompact(ctx context.Context, req UncompactRequest) (*Handle[UncompactResult], error) {
	c := &command{id: newID(), kind: kindUncompact}
	return enqueue(ctx, s, c, &c.finishUnc)
}

// Interrupt stops what the session is doing, as an editor's stop button
// (ACP session/cancel) asks: the active turn is cancelled, a running
// compaction is cancelled unless its commit has started, and queued
// compactions are removed (each finishes as compact_failed with Cancelled
// set). Queued prompts, steers and configuration changes stay queued.
// Interrupt returns at once; it does nothing on an idle or closed session.
func (s *Session) Interrupt() {
	select {
	case s.ctl <- func(l *loop) { l.interrupt() }:
	case <-s.done:
	}
}

// Subscribe returns a subscription to the session's timeline
// (docs/design.md §6). With opts.After > 0 it first replays the durable
// events after that sequence number, then goes live. Sequence numbers
// increase over the session's whole life: After can be any number a
// subscriber was given, also by an earlier process; the events older than
// the session's retained ones are then read from the store's event log
// ([history.EventLog]), in the caller's goroutine. An After above the last number the session
// gave out is an error (ErrInvalid).
//
// The subscription ends when ctx ends, on Close, when the session closes, or
// when the subscriber falls behind (see [SlowSubscriberError]).
func (s *Session) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	var (
		sub     *Subscription
		err     error
		fromLog bool
		logged  uint64 // the log holds every durable event up to it
		elog    history.EventLog
	)
	if e := s.read(ctx, func(l *loop) {
		if opts.After == 0 || opts.After >= l.feed.Covered() || opts.After > l.feed.Seq() {
			sub, err = subscribe(ctx, l.feed, opts, s.unsubscribe)
			return
		}
		fromLog, logged, elog = true, l.elog.logged, l.elog.store
	}); e != nil {
		return nil, e
	}
	if !fromLog {
		return sub, err
	}
	// The log holds every durable event up to logged, and the loop keeps
	// the later ones until they are logged: read the first from the store,
	// then subscribe after logged. Should memory have moved past logged
	// meanwhile (more was logged and trimmed), read again.
	for attempt := 0; ; attempt++ {
		prefix, err := replayLog(ctx, s.store, elog, s.id, opts.After, logged, false, 0)
		if err != nil {
			return nil, err
		}
		if e := s.read(ctx, func(l *loop) {
			var t *eventfeed.Subscription[Event]
			t, err = l.feed.SubscribeWith(ctx, prefix, max(logged, opts.After), opts.Buffer, s.unsubscribe)
			sub = (*Subscription)(t)
			if errors.Is(err, ErrEventsTrimmed) {
				logged = l.elog.logged
			}
		}); e != nil {
			return nil, e
		}
		if err == nil {
			return sub, nil
		}
		if !errors.Is(err, ErrEventsTrimmed) || attempt == 2 {
			return nil, err
		}
	}
}

// unsubscribe asks the loop to end sub (a Close by its subscriber).
func (s *Session) unsubscribe(sub *eventfeed.Subscription[Event]) {
	select {
	case s.ctl <- func(l *loop) { l.feed.Unsubscribe(sub, nil) }:
	case <-s.done:
	}
}

// read runs f on the loop, or returns ErrClosed once it has exited.
func (s *Session) read(ctx context.Context, f func(l *loop)) error {
	done := make(chan struct{})
	select {
	case s.ctl <- func(l *loop) { f(l); close(done) }:
		<-done
		return nil
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Active returns a copy of the Active messages, the messages sent to the
// model verbatim. After Close it reads them from the store.
func (s *Session) Active(ctx context.Context) ([]history.Message, error) {
	var out []history.Message
	err := s.read(ctx, func(l *loop) { out = slices.Clone(l.active) })
	if errors.Is(err, ErrClosed) {
		snap, err := s.store.Load(ctx, s.id)
		if err != nil {
			return nil, err
		}
		return snap.Active, nil
	}
	return out, err
}

// Summary returns the retained summary, "" before the first compaction.
// After Close it reads it from the store.
func (s *Session) Summary(ctx context.Context) (string, error) {
	var out string
	err := s.read(ctx, func(l *loop) { out = l.summary })
	if errors.Is(err, ErrClosed) {
		snap, err := s.store.Load(ctx, s.id)
		if err != nil {
			return "", err
		}
		return snap.Summary, nil
	}
	return out, err
}

// Segments returns the archive, oldest first, read from the store.
func (s *Session) Segments(ctx context.Context) ([]history.Segment, error) {
	return s.store.Segments(ctx, s.id)
}

// Store returns the session's store.
func (s *Session) Store() history.Store { return s.store }

// Close closes the session: every queued command finishes with ErrClosed, a
// running command is cancelled (a compaction whose commit has started still
// finishes), subscriptions end with ErrClosed, and the loop and worker exit.
// On a shared store it then releases the session's lease. Close waits for
// all that, then returns nil. It is idempotent. It does not close the store.
//
// Close returns within CloseTimeout even when the store is stuck: the store
// calls in flight get 3 s to finish, then fail as a store error does (what
// they did not store was never acknowledged, and the Handles say so), and
// the lease release gets 1 s; a lease it could not release expires after
// its TTL. The bound needs a store whose calls return when their context
// ends, as history/postgres's do; history/sqlite finishes a write it has
// begun whatever its context, so while another process holds the file's
// write lock, a write in flight and the lease release each wait up to that
// store's busy timeout (5 s by default). (Tools that ignore their context's end can keep it
// waiting too.)
//
// A session whose lease is lost (another process took it over) closes
// itself the same way, with ErrLeaseLost instead of ErrClosed; Done tells.
func (s *Session) Close() error {
	s.once.Do(func() { close(s.closing) })
	<-s.done
	return nil
}

// Done returns a channel closed when the session has closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// summaryProvider is the provider that makes summaries.
func (l *loop) summaryProvider() provider.Provider {
	if l.sumProv != nil {
		return l.sumProv
	}
	return l.prov
}

// composer returns the compaction composer for the current settings.
func (l *loop) composer() *compact.Composer {
	return &compact.Composer{
		Provider:      l.summaryProvider(),
		Instructions:  l.set.CompactInstructions,
		MaxToolOutput: l.maxTool,
		ContextWindow: l.set.ContextWindow,
		Recall:        l.set.Recall,
	}
}
