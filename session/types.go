package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrInvalid wraps every validation error of a public call; nothing was
	// queued.
	ErrInvalid = errors.New("session: invalid input")
	// ErrClosed is returned by calls on a closed session, and is the error of
	// commands that were still queued when it closed.
	ErrClosed = errors.New("session: closed")
	// ErrQueueFull is returned when the input queue holds Config.MaxQueue
	// commands.
	ErrQueueFull = errors.New("session: input queue is full")
	// ErrCancelled is the error of a command cancelled with Handle.Cancel.
	ErrCancelled = errors.New("session: cancelled")
	// ErrTooManySteps ends a turn that reached Config.MaxSteps provider steps.
	ErrTooManySteps = errors.New("session: turn reached the step limit")
	// ErrSlowSubscriber ends a subscription whose buffer filled up; see
	// [SlowSubscriberError] for where to resume.
	ErrSlowSubscriber = errors.New("session: subscriber fell behind")
	// ErrEventsTrimmed is returned by Subscribe when the events after the
	// requested sequence number are no longer retained.
	ErrEventsTrimmed = errors.New("session: events are no longer retained")
	// ErrLeaseLost is the error of the commands a session had when its lease
	// on a shared store was lost (another process took the session over):
	// the session closed itself. It wraps ErrClosed and history.ErrFenced.
	ErrLeaseLost = fmt.Errorf("%w: its lease was lost (%w)", ErrClosed, history.ErrFenced)
	// ErrSeqExhausted is returned by Open for a session whose event
	// sequence numbers are used up: numbering it once more would go beyond
	// history.MaxSeq. It is never numbered silently past it.
	ErrSeqExhausted = errors.New("session: the session's sequence numbers are used up")
)

// SlowSubscriberError is the Err of a subscription that was ended because
// its buffer filled up. Resubscribe with After = LastSeq to continue without
// missing a durable event.
type SlowSubscriberError struct {
	LastSeq uint64 // the last event delivered into the subscription's channel
}

func (e *SlowSubscriberError) Error() string {
	return fmt.Sprintf("session: subscriber fell behind; resubscribe after sequence %d", e.LastSeq)
}

// Unwrap returns ErrSlowSubscriber.
func (e *SlowSubscriberError) Unwrap() error { return ErrSlowSubscriber }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Tool is a function the model may call during a turn.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments; nil = no arguments
	// Run executes the tool. Its text becomes the tool result message; an
	// error becomes a tool result that says so. ctx is cancelled when the
	// turn is cancelled or the session closes. [ToolCallID] of ctx is the
	// ID of the call being run. A session runs its tools one at a time, in
	// the order the model called them, all on one goroutine of its own: a
	// session's tools may keep state of that session without a lock.
	Run func(ctx context.Context, args json.RawMessage) (string, error)
	// Offered, when set, reports whether the model is offered the tool in
	// the turn request being built: the session calls it on its own
	// goroutine for every turn request (every step) and leaves the tool out
	// of provider.Request.Tools when it reports false, as an agent's mode
	// that lets the model change nothing wants (tools/workspace's
	// read-only mode). It must be quick and must not call the Session
	// (Settings, which reads an atomic value, is fine). nil = always
	// offered. A call the model makes of a tool it was not offered still
	// goes to Run, which decides what to answer.
	Offered func() bool
}

type toolCallKey struct{}

// ToolCallID returns the ID of the tool call a [Tool.Run] is running for:
// the session sets it on the ctx it passes to Run (the ID the assistant
// message's history.ToolCall has, which the tool result answers). It
// returns "" for any other ctx. A tool that reports its progress to a
// client (ACP tool_call_update, permission requests) names the call with it.
func ToolCallID(ctx context.Context) string {
	id, _ := ctx.Value(toolCallKey{}).(string)
	return id
}

// WithToolCallID returns a copy of ctx whose [ToolCallID] is id, for tests
// of tools and for agents that run tools themselves.
func WithToolCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, toolCallKey{}, id)
}

// Config configures a session. Provider is required.
type Config struct {
	ID                string            // "" = new UUID; a stored ID resumes that session; any other ID creates it (New) or fails (Open)
	Provider          provider.Provider // required
	Store             history.Store     // nil = in-memory; see New for stores with and without leases
	SystemPrompt      string
	Tools             []Tool
	AutoCompactTokens int // 0 = automatic compaction off (docs/design.md §3)
	// Instructions are the instructions of the project the session works
	// in (a coding agent's AGENTS.md files, say: workspace.ReadInstructions),
	// sent as part of the system prompt after SystemPrompt (see
	// [Settings].System for the order). They are Config's at every open,
	// never stored, and like all of the system prompt never summarized.
	Instructions string
	// ClientPrompt is system-level text from the session's client (ACP's
	// systemPrompt): it follows the rest of the system prompt, or replaces
	// SystemPrompt when ClientPrompt.Override is set. It is stored with the
	// session's settings: a session opened again with a zero ClientPrompt
	// keeps the stored one, a non-zero one replaces it.
	ClientPrompt        ClientPrompt
	CompactInstructions string      // extra guidance for every summary
	Logger              *zap.Logger // nil = no-op
	// Pricing prices every provider response the session records in its
	// usage ledger ([Session.Usage], UsageEvent.Cost); nil = nothing is
	// priced (the tokens are counted all the same). provider.PriceTable
	// is one.
	Pricing provider.Pricing
	// TracerProvider and MeterProvider, when set, trace the session with
	// OpenTelemetry spans (invoke_agent for a turn, chat {model} for each
	// provider request, execute_tool {tool} for each tool call, and
	// CompactionSpanName for a compaction, its summary call a child) and
	// record the gen_ai.client.token.usage and
	// gen_ai.client.operation.duration metrics, with the GenAI
	// attributes (docs/observability.md). No prompt, completion or tool
	// text is recorded. nil = none, at no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider

	// ContextWindow and AutoCompactRatio give the automatic threshold as a
	// fraction of the model's context window (docs/design.md §3.4); used when
	// AutoCompactTokens is 0 and both are positive. ContextWindow (tokens;
	// 0 = unknown) also bounds the summary request of every compaction:
	// it stays within the window minus the summary's maximum output, the
	// oldest messages left out of the summary input first (docs/design.md
	// §4.11, compact.Composer.ContextWindow).
	ContextWindow    int
	AutoCompactRatio float64
	// MaxSteps caps the provider steps of one turn; 0 = DefaultMaxSteps.
	MaxSteps int
	// MaxQueue caps the queued commands; 0 = DefaultMaxQueue.
	MaxQueue int
	// EventHistory is how many durable events the session keeps for
	// Subscribe replay; 0 = DefaultEventHistory.
	EventHistory int
	// MaxToolOutput bounds each tool output in a summary transcript, in
	// bytes; 0 = the compact package's default.
	MaxToolOutput int
	// Title and Cwd are recorded with the session when it is created, for
	// listing (history.Catalog) and Settings; a session opened again keeps
	// the ones it was created with. Without a Title the session is titled
	// after its first message (history.DefaultTitle).
	Title, Cwd string
	// WaitForLease makes New wait, until its ctx ends, for a session that
	// another process serves from a shared store (one implementing
	// history.Leaser) instead of failing at once with history.ErrLeased.
	WaitForLease bool
	// StoreTimeout bounds each store call the session makes once it is
	// open (a write, the read back after a write failed, a batch of its
	// event log); 0 = DefaultStoreTimeout. A write that cannot finish in it
	// fails the operation as any store error does (nothing is
	// acknowledged that the store did not take; the Handle's error says
	// the store did not finish within StoreTimeout). Close bounds the calls
	// in flight by CloseTimeout whatever StoreTimeout is.
	StoreTimeout time.Duration

	// SummaryProvider makes the summaries of compactions; nil = Provider
	// makes them. Configure can change it. The Segment records which
	// provider and model made its summary (provider.Describe).
	SummaryProvider provider.Provider
	// BeforeCompact, when set, runs in the session's worker for every
	// compaction that has something to compact, after its plan is made
	// and before the summary call (docs/design.md §4.11). It may change
	// plan.Instructions, supply plan.Summary (then no model call is made),
	// or return an error to veto the compaction: the result is then
	// compact_failed with that error, history is unchanged and no running
	// action is published. A panic in it counts as an error. Its ctx is
	// cancelled when the compaction is (Handle.Cancel, Interrupt, Close).
	BeforeCompact func(ctx context.Context, plan *PendingCompaction) error
	// CompactOnOverflow makes a turn step that the provider rejects as
	// longer than the model's context (provider.ErrContextOverflow) run
	// one compaction with trigger "overflow" at that checkpoint and retry
	// the step once (docs/design.md §3.5). Configure can change it.
	CompactOnOverflow bool
	// Recall gives the model the built-in tool recall, which searches the
	// session's messages, archived ones included, and reads them back
	// verbatim (docs/compaction.md); the store must implement
	// history.Searcher (New and Configure refuse Recall otherwise). The
	// retained summary the model is sent then says
	// how many earlier messages are archived and searchable, and the
	// summary instructions tell the summarizer so. Configure can change
	// it. A tool of Config.Tools cannot be named recall then.
	Recall bool
	// Plan gives the model the built-in tool plan ([PlanTool]), with which
	// it keeps a checklist of its task ([PlanEntry]): each call replaces
	// the plan. The session keeps the plan with its settings
	// ([Settings].Plan; stored, so a reopened session has it whatever
	// Config says), and after a compaction that archived the plan's last
	// call the retained summary the model is sent ends with the plan, so a
	// summary never loses it. An ACP agent shows the plan to the editor
	// (docs/acp.md). The tool is offered in every mode. A tool of
	// Config.Tools cannot be named plan then.
	Plan bool
	// Embedder, when set, makes the session keep a vector of each of its
	// messages in its store (history.VectorIndex), computed on a goroutine
	// of its own and never on the commit path: an append never waits for
	// the model, and a message not embedded yet is found by its words.
	// Messages stored before (by an earlier process, or before the
	// session had an embedder) are embedded in the background from open.
	// Search and the recall tool then fuse the ranking by words with the
	// ranking by vectors (reciprocal rank fusion: docs/compaction.md,
	// "Search with an embedder"). An embedder that fails, times out or
	// answers with another count or dimension than asked for, or NaN,
	// never fails a turn: messages stay found by their words, and the
	// session publishes an EmbedEvent once, and once more when it works
	// again. nil = no embedder: nothing is embedded or stored.
	// provider/openai implements it (WithEmbeddingModel).
	Embedder provider.Embedder
	// EmbedTimeout bounds each call of Embedder; 0 = DefaultEmbedTimeout.
	EmbedTimeout time.Duration
	// Model is the model the provider is asked for in every turn request
	// (provider.Request.Model); "" = the provider's configured model.
	// Summaries are made with their provider's configured model
	// (SummaryProvider or Provider), which the Segment records. Configure
	// can change it, from the next model request on; the session checks
	// nothing about it (the provider refuses a model it does not serve).
	Model string
	// Mode is an opaque label of what the agent lets the model do, for
	// example the ACP modes "read-only", "ask", "auto-edit" and
	// "full-auto": the session stores it and reports it (Settings, the
	// SettingsEvent), and gives it no meaning of its own. Configure can
	// change it.
	Mode string
	// PruneToolResults replaces old, long tool results in every turn
	// request (never in the store, never in a summary's input) by one line
	// naming the tool, the size and the message ID; zero = off (see
	// [PruneConfig]).
	PruneToolResults PruneConfig
}

// RecallTool is the name of the built-in tool that Config.Recall adds.
const RecallTool = "recall"

// PruneConfig says which tool results a turn request carries in full
// (Config.PruneToolResults). With KeepRecent > 0 the tool results of Active
// older than the KeepRecent most recent ones and longer than MinBytes bytes
// are each replaced, in the request only, by one line naming the tool, the
// size and the message ID (which the recall tool reads back). The pruned
// results are always the oldest ones, a multiple of KeepRecent of them: the
// set grows by KeepRecent results at a time, so that between two steps the
// request's beginning stays the same and a provider's prompt cache stays
// valid (docs/compaction.md). KeepRecent 0 is off.
type PruneConfig struct {
	KeepRecent int
	MinBytes   int
}

// PendingCompaction is what a compaction is about to do, as Config.BeforeCompact
// sees it.
type PendingCompaction struct {
	CompactID string
	Trigger   history.Trigger // TriggerManual, TriggerAuto or TriggerOverflow
	// Messages are the prefix that will be archived, oldest first. They
	// are shared with the session: read only.
	Messages []history.Message
	// Instructions are the compaction's own instructions (the request's;
	// Config.CompactInstructions are added to them in the summary
	// request). The hook may change them.
	Instructions string
	// Summary, when the hook sets it, is the summary: no model call is
	// made and it is committed exactly like a generated one. Text that is
	// only white space fails the compaction (compact.ErrEmptySummary).
	Summary string
}

// Defaults of Config.
const (
	DefaultMaxSteps     = 32
	DefaultMaxQueue     = 1024
	DefaultEventHistory = 4096
	DefaultBuffer       = 1024
	// DefaultStoreTimeout is Config.StoreTimeout's default.
	DefaultStoreTimeout = 10 * time.Second
	// CloseTimeout bounds Session.Close: the store calls in flight have
	// closeGrace to finish before their contexts end, and the lease
	// release then has releaseTimeout (a lease that could not be released
	// expires after its TTL).
	CloseTimeout = closeGrace + releaseTimeout
)

// closeGrace is how long a closing session lets its store calls in flight
// run before it ends them.
const closeGrace = 3 * time.Second

// releaseTimeout bounds the release of a session's lease.
const releaseTimeout = time.Second

// settings are the parts of the configuration a session stores and Configure
// changes. Configured names the fields Configure set: on reopen those keep
// their stored values and every other field takes Config's (see New).
type settings struct {
	SystemPrompt        string   `json:"system_prompt,omitempty"`
	AutoCompactTokens   int      `json:"auto_compact_tokens,omitempty"`
	CompactInstructions string   `json:"compact_instructions,omitempty"`
	ContextWindow       int      `json:"context_window,omitempty"`
	AutoCompactRatio    float64  `json:"auto_compact_ratio,omitempty"`
	MaxSteps            int      `json:"max_steps,omitempty"`
	CompactOnOverflow   bool     `json:"compact_on_overflow,omitempty"`
	Recall              bool     `json:"recall,omitempty"`
	Model               string   `json:"model,omitempty"`
	Mode                string   `json:"mode,omitempty"`
	Configured          []string `json:"configured,omitempty"`
	// ClientPrompt is kept on reopen when Config's is zero (see reopened).
	ClientPrompt ClientPrompt `json:"client_prompt,omitzero"`
	// Plan is the plan the model keeps with the plan tool; it is not a
	// setting of Config: a reopened session keeps the stored one.
	Plan []PlanEntry `json:"plan,omitempty"`
	// Instructions are Config's at every open, never stored.
	Instructions string `json:"-"`
}

// ClientPrompt is system-level text a session's client sends
// (Config.ClientPrompt; ACP's systemPrompt). The zero value is none.
type ClientPrompt struct {
	// Text is the client's instructions.
	Text string `json:"text,omitempty"`
	// Override makes Text replace Config.SystemPrompt (the agent's own
	// default instructions) instead of following the whole system prompt.
	// Project instructions (Config.Instructions) stay either way.
	Override bool `json:"override,omitempty"`
}

// IsZero reports whether p is no client prompt.
func (p ClientPrompt) IsZero() bool { return p == ClientPrompt{} }

// system is the system prompt a request is sent with: SystemPrompt (or
// an overriding client prompt), then Instructions, then an appended client
// prompt, each part that is not empty separated by a blank line.
func (s *settings) system() string {
	base, tail := s.SystemPrompt, ""
	if s.ClientPrompt.Override {
		base = s.ClientPrompt.Text
	} else {
		tail = s.ClientPrompt.Text
	}
	var parts []string
	for _, p := range []string{base, s.Instructions, tail} {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n\n")
}

// setting is one stored setting, by the name Settings.Configured lists it
// under: its value in settings and in a ConfigureRequest.
type setting interface {
	name() string
	value(s *settings) any                       // for comparisons and logs
	take(dst, src *settings)                     // sets dst's value to src's
	apply(r *ConfigureRequest, s *settings) bool // sets r's value in s; false when r leaves it
}

// field is the setting of type T at in(s), which a ConfigureRequest sets at
// req(r) (nil = unchanged).
type field[T comparable] struct {
	n   string
	in  func(*settings) *T
	req func(*ConfigureRequest) *T
}

func (f field[T]) name() string            { return f.n }
func (f field[T]) value(s *settings) any   { return *f.in(s) }
func (f field[T]) take(dst, src *settings) { *f.in(dst) = *f.in(src) }

func (f field[T]) apply(r *ConfigureRequest, s *settings) bool {
	v := f.req(r)
	if v != nil {
		*f.in(s) = *v
	}
	return v != nil
}

// settingFields are the stored settings, in the order Settings.Configured
// lists them: the one list a new setting is added to.
var settingFields = []setting{
	field[string]{"SystemPrompt", func(s *settings) *string { return &s.SystemPrompt }, func(r *ConfigureRequest) *string { return r.SystemPrompt }},
	field[int]{"AutoCompactTokens", func(s *settings) *int { return &s.AutoCompactTokens }, func(r *ConfigureRequest) *int { return r.AutoCompactTokens }},
	field[string]{"CompactInstructions", func(s *settings) *string { return &s.CompactInstructions }, func(r *ConfigureRequest) *string { return r.CompactInstructions }},
	field[int]{"ContextWindow", func(s *settings) *int { return &s.ContextWindow }, func(r *ConfigureRequest) *int { return r.ContextWindow }},
	field[float64]{"AutoCompactRatio", func(s *settings) *float64 { return &s.AutoCompactRatio }, func(r *ConfigureRequest) *float64 { return r.AutoCompactRatio }},
	field[int]{"MaxSteps", func(s *settings) *int { return &s.MaxSteps }, func(r *ConfigureRequest) *int { return r.MaxSteps }},
	field[bool]{"CompactOnOverflow", func(s *settings) *bool { return &s.CompactOnOverflow }, func(r *ConfigureRequest) *bool { return r.CompactOnOverflow }},
	field[bool]{"Recall", func(s *settings) *bool { return &s.Recall }, func(r *ConfigureRequest) *bool { return r.Recall }},
	field[string]{"Model", func(s *settings) *string { return &s.Model }, func(r *ConfigureRequest) *string { return r.Model }},
	field[string]{"Mode", func(s *settings) *string { return &s.Mode }, func(r *ConfigureRequest) *string { return r.Mode }},
}

// settingNamed returns the stored setting called name, nil for a name that
// is not one (a store may hold anything).
func settingNamed(name string) setting {
	for _, f := range settingFields {
		if f.name() == name {
			return f
		}
	}
	return nil
}

// reopened returns the effective settings of a session opened again with
// cfg's settings, stored being what the store holds: a field that Configure
// set keeps its stored value (a change made at run time, by the editor for
// example, survives a reload); every other field takes cfg's value (the
// application's own code, a changed system prompt for example, takes
// effect). It also returns the fields where cfg and stored differ.
func reopened(cfg, stored settings) (settings, []setting) {
	out := cfg
	out.Configured = slices.Clone(stored.Configured)
	out.Plan = stored.Plan
	if cfg.ClientPrompt.IsZero() { // a client that does not send its prompt again keeps it
		out.ClientPrompt = stored.ClientPrompt
	}
	for _, name := range stored.Configured {
		if f := settingNamed(name); f != nil {
			f.take(&out, &stored)
		}
	}
	var differ []setting
	for _, f := range settingFields {
		if f.value(&cfg) != f.value(&stored) {
			differ = append(differ, f)
		}
	}
	return out, differ
}

// Settings are a session's effective settings ([Session.Settings]).
type Settings struct {
	SystemPrompt        string
	AutoCompactTokens   int
	CompactInstructions string
	ContextWindow       int
	AutoCompactRatio    float64
	MaxSteps            int // 0 = DefaultMaxSteps
	CompactOnOverflow   bool
	Recall              bool
	Model               string // the model turn requests ask for; "" = the provider's configured model
	Mode                string // the agent's label (Config.Mode)
	// Configured names the settings above (by field name) that Configure
	// set. They keep their values when the session is opened again; the
	// others take the values of the Config it is opened with (see [New]).
	Configured []string
	// ClientPrompt is the client's system prompt in effect: Config's, or
	// the stored one when Config's is zero (see [Config].ClientPrompt).
	ClientPrompt ClientPrompt
	// Instructions are Config.Instructions.
	Instructions string
	// Plan is the plan the model keeps with the plan tool (Config.Plan),
	// as its last successful call set it; nil for none.
	Plan []PlanEntry
	// System is the whole system prompt every model request is sent with:
	// SystemPrompt, or the client prompt in its place when it overrides
	// it; then Instructions; then the client prompt when it does not
	// override; the parts that are not blank joined by a blank line.
	System string
	// Title is the session's title: Config.Title when it was created, or
	// else a default made from its first message (history.DefaultTitle);
	// "" until it has one. It changes at most once, when the first prompt
	// or steer of an untitled session is committed; an ACP agent reports
	// the change (session_info_update) after that message's MessageEvent.
	Title string
	// Cwd is the Config.Cwd the session was created with.
	Cwd string
}

func (s *settings) public(title, cwd string) Settings {
	return Settings{
		SystemPrompt:        s.SystemPrompt,
		AutoCompactTokens:   s.AutoCompactTokens,
		CompactInstructions: s.CompactInstructions,
		ContextWindow:       s.ContextWindow,
		AutoCompactRatio:    s.AutoCompactRatio,
		MaxSteps:            s.MaxSteps,
		CompactOnOverflow:   s.CompactOnOverflow,
		Recall:              s.Recall,
		Model:               s.Model,
		Mode:                s.Mode,
		Configured:          slices.Clone(s.Configured),
		ClientPrompt:        s.ClientPrompt,
		Instructions:        s.Instructions,
		Plan:                slices.Clone(s.Plan),
		System:              s.system(),
		Title:               title,
		Cwd:                 cwd,
	}
}

// threshold returns the automatic compaction threshold in tokens, 0 = off.
func (s *settings) threshold() int {
	if s.AutoCompactTokens > 0 {
		return s.AutoCompactTokens
	}
	if s.ContextWindow > 0 && s.AutoCompactRatio > 0 {
		return int(float64(s.ContextWindow) * s.AutoCompactRatio)
	}
	return 0
}

func (s *settings) validate() error {
	switch {
	case s.AutoCompactTokens < 0:
		return invalid("AutoCompactTokens is negative")
	case s.ContextWindow < 0:
		return invalid("ContextWindow is negative")
	case s.AutoCompactRatio < 0 || s.AutoCompactRatio > 1:
		return invalid("AutoCompactRatio %v is outside [0, 1]", s.AutoCompactRatio)
	case s.MaxSteps < 0:
		return invalid("MaxSteps is negative")
	case s.ClientPrompt.Override && strings.TrimSpace(s.ClientPrompt.Text) == "":
		return invalid("ClientPrompt overrides the system prompt with no text")
	}
	return nil
}

// PromptRequest starts a turn. Its user message has Text and Attachments
// (links, resources and images, each at its place in Text: see
// history.Attachment); Text may be empty when there are attachments. The
// session keeps a copy of the attachments.
type PromptRequest struct {
	Text        string
	Attachments []history.Attachment
}

// SteerRequest adds user input to the active turn at its next step
// checkpoint, or to the history at once when the session is idle. Text and
// Attachments are as in [PromptRequest].
type SteerRequest struct {
	Text        string
	Attachments []history.Attachment
}

// CompactRequest asks for a manual compaction.
type CompactRequest struct {
	Instructions string
	// Through, when set, is the ID of a message in Active: the compaction
	// archives Active up to and including it (moved forward past the tool
	// results that follow it, so that no tool call is separated from its
	// results) instead of the oldest half (docs/design.md §4.11). An ID not in
	// Active when Compact is called is refused (ErrInvalid); one archived
	// by an earlier compaction before this one runs fails it.
	Through string
}

// UncompactRequest asks to undo the newest compaction (Session.Uncompact).
type UncompactRequest struct{}

// UncompactResult is the result of an Uncompact.
type UncompactResult struct {
	SegmentID string // the Segment undone
	Restored  int    // messages put back at the front of Active
	Err       error  // non-nil when nothing was undone (history.ErrNothingToUndo when there was nothing to undo)
}

// ConfigureRequest changes settings from the next provider request on. Nil
// fields are left as they are.
type ConfigureRequest struct {
	SystemPrompt      *string
	AutoCompactTokens *int
	// CompactInstructions replaces Config.CompactInstructions.
	CompactInstructions *string
	// ContextWindow and AutoCompactRatio replace their Config fields.
	ContextWindow    *int
	AutoCompactRatio *float64
	// MaxSteps replaces Config.MaxSteps.
	MaxSteps *int
	// CompactOnOverflow replaces Config.CompactOnOverflow.
	CompactOnOverflow *bool
	// Recall replaces Config.Recall.
	Recall *bool
	// Model replaces Config.Model ("" = the provider's configured model)
	// from the next model request on.
	Model *string
	// Mode replaces Config.Mode.
	Mode *string
	// SummaryProvider, when not nil, replaces Config.SummaryProvider. It
	// is not stored with the session (a provider is code, not data): a
	// session opened again uses its Config's.
	SummaryProvider provider.Provider
}

func (r *ConfigureRequest) apply(s settings) settings {
	for _, f := range settingFields {
		f.apply(r, &s)
	}
	return s
}

// configured adds the names of the settings r sets to s.Configured.
func (r *ConfigureRequest) configured(s settings) settings {
	var probe settings
	names := slices.Clone(s.Configured)
	for _, f := range settingFields {
		if f.apply(r, &probe) && !slices.Contains(names, f.name()) {
			names = append(names, f.name())
		}
	}
	s.Configured = names
	return s
}

func (r *ConfigureRequest) empty() bool {
	rest := *r
	rest.SummaryProvider = nil
	return r.SummaryProvider == nil && rest == ConfigureRequest{}
}

// TurnResult is the result of a Prompt.
type TurnResult struct {
	Messages []history.Message // appended by this turn, in order
	Usage    provider.Usage    // of the last step
	Err      error             // non-nil when the turn failed
}

// SteerResult is the result of a Steer.
type SteerResult struct {
	Message history.Message // the committed user message (Steer true)
	Err     error
}

// ConfigureResult is the result of a Configure.
type ConfigureResult struct {
	Err error
}

// CompactReason is the outcome of a compaction.
type CompactReason string

// Compaction outcomes (docs/design.md §4).
const (
	ReasonCompacted        CompactReason = "compacted"
	ReasonNothingToCompact CompactReason = "nothing_to_compact"
	ReasonCompactFailed    CompactReason = "compact_failed"
)

// Compaction triggers: the values of history.Trigger, declared here too for
// the users of this package.
const (
	TriggerManual   = history.TriggerManual
	TriggerAuto     = history.TriggerAuto
	TriggerOverflow = history.TriggerOverflow // a turn step overflowed the model's context (Config.CompactOnOverflow)
)

// CompactResult is the result of a compaction (docs/design.md §4.9).
type CompactResult struct {
	CompactID string
	Success   bool
	Compacted bool
	Reason    CompactReason
	Error     string
	Trigger   history.Trigger  // TriggerManual, TriggerAuto or TriggerOverflow
	Segment   *history.Segment // non-nil when Compacted
	Usage     provider.Usage   // of the summary call (zero when BeforeCompact supplied the summary)
	// Cost is what the summary call cost (Config.Pricing); zero when it
	// was not priced or not made. A summary call that answered is paid
	// for whatever the outcome: Usage and Cost are set also when the
	// compaction ends compact_failed (an empty summary, a failed commit).
	Cost provider.Cost
	// ContextBefore is the context the conversation held when the
	// compaction started, as the provider last reported it (input plus
	// output tokens of the latest turn response); 0 when no fresh figure
	// existed. ContextAfter is an estimate of the context after the
	// commit: system prompt, the new summary and the Active messages left
	// (compact.EstimateMessages); 0 unless Compacted.
	ContextBefore, ContextAfter int
	// LeftOut is how many of the oldest archived messages the summary
	// input left out to fit Config.ContextWindow (they are archived all
	// the same).
	LeftOut int
	// Cancelled reports a compact_failed that was a cancellation (Handle.Cancel,
	// Close, or an ACP session/cancel) rather than a failure.
	Cancelled bool
	// Note, when not empty, says something the user should know about a
	// compaction that succeeded: ContextGrew's figures in words.
	Note string
	// ContextGrew reports a committed compaction whose ContextAfter is not
	// smaller than ContextBefore (both known): it is committed all the same
	// (the summary replaces the archived messages, as ever), and Note says
	// so. Only live results carry it; a replayed result has no context
	// figures.
	ContextGrew bool
	// Fidelity is how many of the archived prefix's facts the summary kept
	// (compact.Fidelity), as the Segment records it; zero unless Compacted.
	Fidelity history.Fidelity
}

func validText(what, text string) error {
	if strings.TrimSpace(text) == "" {
		return invalid("%s text is empty", what)
	}
	return nil
}

// validInput checks the user message of a prompt or steer: text, unless
// there are attachments; attachments as history.ValidAttachments wants
// them (an error that also wraps history.ErrTooLarge for images above
// history.MaxAttachmentData); images only of a type prov takes.
func validInput(what, text string, attachments []history.Attachment, prov provider.Provider) error {
	if len(attachments) == 0 {
		return validText(what, text)
	}
	if err := history.ValidAttachments(text, attachments); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, what, err)
	}
	for i := range attachments {
		if a := &attachments[i]; a.Kind == history.AttachImage && !provider.TakesImage(prov, a.MIMEType) {
			if !provider.TakesImages(prov) {
				return invalid("%s: attachment %d is an image, and the provider %s takes no images", what, i, provider.Describe(prov).Name)
			}
			return invalid("%s: attachment %d is an image of type %q, which the provider %s does not take", what, i, a.MIMEType, provider.Describe(prov).Name)
		}
	}
	return nil
}

// cloneAttachments is a copy of a, image data included (nil for none).
func cloneAttachments(a []history.Attachment) []history.Attachment {
	if len(a) == 0 {
		return nil
	}
	out := slices.Clone(a)
	for i := range out {
		out[i].Data = slices.Clone(out[i].Data)
	}
	return out
}
