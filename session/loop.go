package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/queue"
)

type kind int

const (
	kindPrompt kind = iota
	kindSteer
	kindConfigure
	kindCompact
	kindUncompact
)

// command is one accepted input. Exactly one finish function is set, by
// kind: it finishes the command's Handle.
type command struct {
	id   string
	kind kind
	text string // prompt or steer text; compaction instructions
	// attachments are a prompt's or steer's (the session's own copy).
	attachments []history.Attachment
	trigger     history.Trigger // compactions
	pos         int64           // compactions: the timeline position of its record, NoPosition until stored
	through     string          // manual compactions: CompactRequest.Through
	configure   ConfigureRequest
	// verdict receives the loop's admission decision (admit makes it): nil
	// when the command was queued, else why not (ErrQueueFull, a Compact
	// whose Through is not in Active).
	verdict chan error

	finishTurn  func(TurnResult)
	finishSteer func(SteerResult)
	finishConf  func(ConfigureResult)
	finishComp  func(CompactResult)
	finishUnc   func(UncompactResult)
}

// fail finishes a command that never ran.
func (c *command) fail(err error) {
	switch c.kind {
	case kindPrompt:
		c.finishTurn(TurnResult{Err: err})
	case kindSteer:
		c.finishSteer(SteerResult{Err: err})
	case kindConfigure:
		c.finishConf(ConfigureResult{Err: err})
	case kindCompact:
		c.finishComp(compactFailed(c, err))
	case kindUncompact:
		c.finishUnc(UncompactResult{Err: err})
	}
}

func compactFailed(c *command, err error) CompactResult {
	return CompactResult{CompactID: c.id, Reason: ReasonCompactFailed, Error: err.Error(), Trigger: c.trigger}
}

type turnState int

const (
	phaseStep       turnState = iota // the next provider step is due
	phaseTools                       // the last step asked for tools: run them
	phaseCheckpoint                  // a step checkpoint: take checkpoint commands, then step
	phaseEnded                       // the last step ended: take checkpoint commands, then finish
)

// turn is the state of the active turn.
type turn struct {
	cmd    *command
	ctx    context.Context
	cancel context.CancelCauseFunc // with ErrCancelled or ErrClosed
	phase  turnState
	steps  int
	// overflowed is set when the current step overflowed the model's
	// context and an overflow compaction was queued for it; the retry
	// that follows fails the turn if it overflows too (docs/design.md §3.5).
	overflowed  bool
	overflowErr error
	messages    []history.Message
	usage       provider.Usage
	err         error
	// toolCalls are the tool calls of the last assistant message, by ID:
	// CancelToolCall cancels one through it (runTools makes them).
	toolCalls map[string]*toolCall
	span      trace.Span // invoke_agent; nil without telemetry
}

// loop owns a session's state. Only its goroutine touches these fields; the
// worker goroutine receives copies in closures and posts results back as
// functions that the loop applies.
type loop struct {
	s        *Session
	log      *zap.Logger
	store    history.Store
	prov     provider.Provider
	sumProv  provider.Provider // Config.SummaryProvider; nil = prov
	hook     func(context.Context, *PendingCompaction) error
	tools    map[string]Tool
	specs    []provider.ToolSpec
	maxTool  int
	planOn   bool // Config.Plan: tools[PlanTool] is the built-in plan tool
	prune    PruneConfig
	set      settings
	title    string // the session's title; "" until it has one
	cwd      string
	version  uint64
	active   []history.Message
	summary  string
	archived int64 // messages archived in Segments
	// activePlans is planCalls(active), kept as active changes (appended,
	// a compaction's commit, a resync): a turn request asks it at every
	// step (requestSummary).
	activePlans int
	// files is the file ledger (FileLedger): the fold of segLedger and of
	// Active. segLedger is the fold of the standing Segments' Files alone,
	// oldest Segment first: a compaction folds in its Segment's, not all
	// again. filesStale: segLedger may no longer be the store's (a resync
	// changed the archive); the next runTools reads the Segments again.
	files      *FileLedger
	segLedger  *FileLedger
	filesNote  string // filesNote(segLedger)
	filesStale bool
	nextPos    int64 // the timeline position the next stored entry takes (history.Snapshot.NextPosition)
	feed       *feed
	elog       eventLog // the event log (docs/design.md §6.1)
	q          queue.Queue[*command]
	// queued is how many commands in q count against maxQueue
	// (command.counted); only enqueue, take, remove and drain change it.
	queued, maxQueue int

	turn    *turn
	running *command // the compaction in the worker
	// runSummary is the summary text the running compaction has streamed so
	// far, and draft the assistant message the turn's step is streaming: a
	// Replay that finds them hands them on (Session.Replay).
	runSummary strings.Builder
	draft      draft
	cancelJ    context.CancelCauseFunc // cancels it, with ErrCancelled or ErrClosed
	busy       bool                    // a job is in the worker
	closing    bool
	lease      history.Lease // nil unless the store is shared (history.Leaser)
	stale      bool          // a failed write could not be read back: reload before the next one
	storeTO    time.Duration // Config.StoreTimeout: the deadline of each store call
	// closeTimer ends the store calls closeGrace after the close began.
	closeTimer *time.Timer

	tel *telemetry // nil = no telemetry
	// compSpan is the span of the running compaction (nil without
	// telemetry).
	compSpan trace.Span
	meter    meter         // makes the usage ledger's records
	cost     provider.Cost // the session's cumulative cost (UsageEvent.SessionCost)

	// Automatic compaction state (docs/design.md §3).
	// lastTurn is the context of the latest turn response (at open, of the
	// last one in the usage ledger), 0 when none; it stays while a
	// compaction makes it stale, for an Uncompact to bring back.
	// afterTurn are the standing Segments committed after that response,
	// oldest first (at open, those usageSoFar found after it): a turn
	// response empties it, a commit appends to it, an Uncompact takes out
	// the Segment it undid: live, the order of events in the loop decides,
	// never the clock. The context figures follow from both
	// (contextTokens, context).
	lastTurn     int
	afterTurn    []segContext
	autoQueued   bool // an automatic compaction is queued or running
	autoBlocked  bool // an automatic compaction of this turn failed or had nothing to do; cleared when a turn starts
	autoFailures int  // consecutive failed automatic compactions; suspended at maxAutoFailures
	// The guard against compactions that cannot get the context under the
	// threshold (docs/compaction.md "When compaction cannot help").
	autoCheck *CompactResult // an automatic compaction committed: the next usage report measures it
	autoHold  int            // no automatic compaction until the context reaches it; 0 = no hold
	autoTold  bool           // the hold was reported (AutoCompactEvent.Held) since the context was last under the threshold

	jobs    chan func()
	results chan func(*loop)
}

// work is the worker goroutine: it runs jobs one at a time.
func (l *loop) work() {
	for job := range l.jobs {
		job()
	}
}

// progress posts a function for the loop to apply while a job goes on: a
// delta to publish, a tool result stored.
type progress func(func(*loop))

// submit hands a job to the worker and marks it busy. The job runs in the
// worker on its own copies; it may post progress, and returns its one
// result, which the loop applies once it has marked the worker free again.
// That is the only way the worker becomes free: no job can leave it busy,
// none can free it early.
func (l *loop) submit(job func(post progress) (result func(*loop))) {
	l.busy = true
	post := progress(func(f func(*loop)) { l.results <- f })
	l.jobs <- func() {
		result := job(post)
		l.results <- func(l *loop) {
			l.busy = false
			result(l)
		}
	}
}

func (l *loop) run() {
	defer close(l.s.done)
	defer l.s.stopStore()
	defer l.release()
	defer l.s.stopEmbedder() // before the lease goes: its writes are fenced by it
	defer close(l.jobs)
	inbox, closing := l.s.inbox, l.s.closing
	var lost <-chan struct{}
	if l.lease != nil {
		lost = l.lease.Lost()
	}
	for {
		if !l.busy {
			if l.closing {
				l.shutdown()
				if !l.busy && !l.elog.busy {
					return
				}
			} else {
				l.advance()
			}
		}
		l.flushLog(false)
		select {
		case c := <-inbox:
			l.accept(c)
		case f := <-l.s.ctl:
			f(l)
		case f := <-l.results:
			f(l)
		case <-closing:
			inbox, closing = nil, nil
			l.beginClose()
		case <-lost:
			lost = nil
			l.loseLease()
		}
	}
}

// loseLease closes the session after another process took it over: every
// write it would make would be refused (history.ErrFenced).
func (l *loop) loseLease() {
	l.log.Error("the session's lease was lost; closing the session")
	l.s.leaseLost.Store(true)
	l.s.once.Do(func() { close(l.s.closing) })
}

// release gives the lease up once the loop and the worker are done.
func (l *loop) release() {
	if l.closeTimer != nil {
		l.closeTimer.Stop()
	}
	if l.lease != nil {
		releaseLease(l.lease, l.log)
	}
}

// accept puts an admitted command into the queue, or refuses it (the queue
// is full; a Compact whose Through is not in Active) through its verdict.
func (l *loop) accept(c *command) {
	err := l.admissible(c)
	c.verdict <- err
	if err != nil {
		return
	}
	l.enqueue(c)
	if c.kind == kindCompact {
		l.publish(l.compactionEvent(c, PhaseQueued))
	}
}

// enqueue puts c at the back of its kind's queue.
func (l *loop) enqueue(c *command) {
	if c.counted() {
		l.queued++
	}
	if c.kind == kindPrompt {
		l.q.Push(queue.Prompt, c.id, c)
		return
	}
	l.q.Push(queue.Checkpoint, c.id, c)
}

// admissible checks what only the loop can: there is room in the queue
// (Config.MaxQueue), and a Through names a message in Active.
func (l *loop) admissible(c *command) error {
	if c.counted() && l.queued >= l.maxQueue {
		return fmt.Errorf("%w: %d commands are waiting", ErrQueueFull, l.queued)
	}
	if c.kind == kindCompact && c.through != "" {
		if !slices.ContainsFunc(l.active, func(m history.Message) bool { return m.ID == c.through }) {
			return invalid("message %q is not in Active", c.through)
		}
	}
	return nil
}

// counted reports whether c counts against Config.MaxQueue: every public
// command does; automatic compactions do not.
func (c *command) counted() bool { return c.kind != kindCompact || c.trigger == TriggerManual }

// take removes the next command to run from the queue.
func (l *loop) take(idle bool) (*command, bool) {
	c, ok := l.q.Next(idle)
	if ok && c.counted() {
		l.queued--
	}
	return c, ok
}

// remove removes command id from the queue.
func (l *loop) remove(id string) (*command, bool) {
	c, ok := l.q.Remove(id)
	if ok && c.counted() {
		l.queued--
	}
	return c, ok
}

// drain empties the queue and returns what it held, in queue order.
func (l *loop) drain() []*command {
	l.queued = 0
	return l.q.Drain()
}

// advance starts the next piece of work, if any, while the worker is free.
// During a turn, checkpoint commands are taken only at a step checkpoint or
// once the last step has ended (docs/design.md §2.2, §2.5).
func (l *loop) advance() {
	for !l.busy && !l.closing {
		if l.stale {
			l.reload()
			continue
		}
		t := l.turn
		if t == nil {
			c, ok := l.take(true)
			if !ok {
				return
			}
			l.start(c)
			continue
		}
		if t.phase == phaseCheckpoint || t.phase == phaseEnded {
			if c, ok := l.take(false); ok {
				l.start(c)
				continue
			}
		}
		switch t.phase {
		case phaseStep, phaseCheckpoint:
			l.step()
		case phaseTools:
			l.runTools()
		case phaseEnded:
			l.endTurn()
		}
	}
}

// start runs a command taken from the queue.
func (l *loop) start(c *command) {
	switch c.kind {
	case kindPrompt:
		l.startTurn(c)
	case kindSteer:
		l.startSteer(c)
	case kindConfigure:
		l.startConfigure(c)
	case kindCompact:
		l.startCompaction(c)
	case kindUncompact:
		l.startUncompact(c)
	}
}

func (l *loop) turnID() string {
	if l.turn != nil {
		return l.turn.cmd.id
	}
	return ""
}

func (l *loop) publish(p Payload) { l.logPublished(l.feed.Publish(p)) }

// shareActive returns the first n Active messages for the worker without
// copying them: the loop never changes a message of l.active in place (it
// appends, or replaces the slice), and the capacity is capped at n so that
// an append writes past the view. Copying Active for every provider request
// cost O(Active) per step.
func (l *loop) shareActive(n int) []history.Message {
	return l.active[:n:n]
}

// appended applies messages that the worker committed at version v.
func (l *loop) appended(v uint64, msgs ...history.Message) {
	l.version = v
	titled := false
	if l.title == "" && len(l.active) == 0 && l.archived == 0 {
		// The store titles an untitled session after its first message.
		l.title = history.DefaultTitle(msgs[0].Text)
		l.publishSettings()
		titled = l.title != ""
	}
	l.active = append(l.active, msgs...)
	l.activePlans += planCalls(msgs)
	l.files.foldMessages(msgs)
	if l.s.embed != nil {
		l.s.embed.add(l.nextPos, msgs)
	}
	for i := range msgs {
		if l.turn != nil && l.turn.phase != phaseEnded {
			l.turn.messages = append(l.turn.messages, msgs[i])
		}
		if msgs[i].ID == l.draft.id {
			l.draft.reset()
		}
		l.publish(&MessageEvent{Message: msgs[i], TurnID: l.turnID(), Position: l.nextPos})
		l.nextPos++
		if i == 0 && titled {
			l.publish(titleEvent(*l.s.settings.Load(), l.turnID()))
		}
	}
}

// commit appends msgs in the worker; once they are in the store the loop
// applies them (publishing their events) and calls then with the store's
// error, if any.
func (l *loop) commit(msgs []history.Message, then func(l *loop, err error)) {
	// History never holds a tool call without its answer: calls left
	// unanswered (their results could not be stored) are answered before
	// anything else is appended after them.
	if len(msgs) > 0 && msgs[0].Role != history.RoleTool {
		if calls := unanswered(l.active); len(calls) > 0 {
			msgs = append(notRun(calls, "its result could not be recorded"), msgs...)
		}
	}
	w, v := l.writer(), l.version
	l.submit(func(progress) func(*loop) {
		nv, snap, err := w.append(v, msgs)
		return func(l *loop) {
			if err == nil {
				l.appended(nv, msgs...)
			} else {
				l.resync(snap)
			}
			then(l, err)
		}
	})
}

func (l *loop) writer() writer {
	return writer{store: l.store, id: l.s.id, base: l.s.storeCtx, timeout: l.storeTO}
}

func (l *loop) startSteer(c *command) {
	msg := history.Message{ID: newID(), Role: history.RoleUser, Text: c.text, Attachments: c.attachments, Steer: true, CreatedAt: time.Now()}
	l.commit([]history.Message{msg}, func(l *loop, err error) {
		if err != nil {
			c.finishSteer(SteerResult{Err: fmt.Errorf("session: store steer: %w", err)})
			return
		}
		c.finishSteer(SteerResult{Message: msg})
	})
}

func (l *loop) startConfigure(c *command) {
	next := c.configure.configured(c.configure.apply(l.set))
	if _, mine := l.tools[RecallTool]; mine && next.Recall {
		c.finishConf(ConfigureResult{Err: invalid("tool %q is one of Config.Tools: Recall cannot be turned on", RecallTool)})
		return
	}
	if err := next.validate(); err != nil {
		c.finishConf(ConfigureResult{Err: err})
		return
	}
	blob, err := marshalSettings(next)
	if err != nil {
		c.finishConf(ConfigureResult{Err: err})
		return
	}
	// A change of a value is recorded in the timeline; one that only
	// repeats the values (it may still add to Configured) is not.
	changed := changedSettings(&l.set, &next)
	var data json.RawMessage
	if len(changed) > 0 {
		if data, err = json.Marshal(settingsRecord{Before: l.set, After: next, Title: l.title, Changed: changed}); err != nil {
			c.finishConf(ConfigureResult{Err: fmt.Errorf("session: encode the settings record: %w", err)})
			return
		}
	}
	w, v, pos := l.writer(), l.version, l.nextPos
	l.submit(func(progress) func(*loop) {
		nv, recorded, snap, err := w.recordConfig(v, blob, data, pos)
		return func(l *loop) {
			if err != nil {
				l.resync(snap)
				c.finishConf(ConfigureResult{Err: fmt.Errorf("session: store settings: %w", err)})
				return
			}
			l.version = nv
			l.set = next
			if c.configure.SummaryProvider != nil {
				l.sumProv = c.configure.SummaryProvider
			}
			l.publishSettings()
			if len(changed) > 0 {
				at := NoPosition
				if recorded {
					at = pos
					l.nextPos++
				}
				l.publish(&SettingsEvent{Settings: *l.s.settings.Load(), Changed: changed, TurnID: l.turnID(), Position: at})
			}
			if r := c.configure; r.AutoCompactTokens != nil || r.ContextWindow != nil || r.AutoCompactRatio != nil {
				l.resumeAuto("the threshold was configured")
				l.releaseHold()
			}
			c.finishConf(ConfigureResult{})
		}
	})
}

// cancel handles Handle.Cancel for command id.
func (l *loop) cancel(id string) {
	if c, ok := l.remove(id); ok {
		l.abandon(c, ErrCancelled)
		return
	}
	if l.turn != nil && l.turn.cmd.id == id {
		l.turn.cancel(ErrCancelled)
		return
	}
	if l.running != nil && l.running.id == id {
		l.cancelJ(ErrCancelled)
	}
}

// interrupt implements Session.Interrupt.
func (l *loop) interrupt() {
	if l.turn != nil {
		l.turn.cancel(ErrCancelled)
	}
	if l.running != nil {
		l.cancelJ(ErrCancelled)
	}
	for _, c := range l.drain() {
		if c.kind == kindCompact {
			l.abandon(c, ErrCancelled)
			continue
		}
		l.enqueue(c)
	}
}

// abandon finishes a command that never ran.
func (l *loop) abandon(c *command, err error) {
	if c.kind == kindCompact {
		res := compactFailed(c, err)
		res.Cancelled = true
		l.finishCompaction(c, res)
		return
	}
	if c.kind == kindPrompt {
		// The timeline says every prompt ended, also one that never ran.
		res := TurnResult{Err: err}
		l.publish(&TurnEvent{TurnID: c.id, Phase: TurnFinished, Result: &res})
	}
	c.fail(err)
}

func (l *loop) beginClose() {
	l.closing = true
	// The calls in flight, and those closing makes, have closeGrace; a
	// stuck store keeps Close waiting no longer (Session.Close).
	l.closeTimer = time.AfterFunc(closeGrace, l.s.stopStore)
	for _, c := range l.drain() {
		l.abandon(c, l.s.closedErr())
	}
	if l.turn != nil {
		l.turn.cancel(l.s.closedErr())
	}
	if l.running != nil {
		l.cancelJ(l.s.closedErr())
	}
}

// shutdown finishes what is left once the worker is free; it may submit one
// last job (answering unanswered tool calls of the turn).
func (l *loop) shutdown() {
	if t := l.turn; t != nil {
		if t.phase != phaseEnded {
			l.endWith(l.s.closedErr())
		}
		l.endTurn()
		if l.busy {
			return
		}
	}
	l.flushLog(true)
	l.feed.CloseAll(l.s.closedErr())
}

// settingsRecord is what the timeline records of a settings change
// (history.ConfigRecord.Data): the settings before and after it, the title
// then, and the names of the settings that changed. Replay rebuilds each
// SettingsEvent from it.
type settingsRecord struct {
	Before  settings `json:"before"`
	After   settings `json:"after"`
	Title   string   `json:"title,omitempty"`
	Changed []string `json:"changed"`
}

// changedSettings names the settings whose values differ between a and b,
// in the order of settingFields.
func changedSettings(a, b *settings) []string {
	var out []string
	for _, f := range settingFields {
		if f.value(a) != f.value(b) {
			out = append(out, f.name())
		}
	}
	return out
}

func marshalSettings(set settings) ([]byte, error) {
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("session: encode settings: %w", err)
	}
	return b, nil
}

// unanswered returns the tool calls at the end of msgs that have no result.
func unanswered(msgs []history.Message) []history.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == history.RoleTool {
			continue
		}
		if m.Role != history.RoleAssistant || len(m.ToolCalls) == 0 {
			return nil
		}
		answered := map[string]bool{}
		for _, r := range msgs[i+1:] {
			answered[r.ToolCallID] = true
		}
		var out []history.ToolCall
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				out = append(out, tc)
			}
		}
		return out
	}
	return nil
}

// notRun returns tool result messages that say the calls did not run.
func notRun(calls []history.ToolCall, why string) []history.Message {
	out := make([]history.Message, len(calls))
	now := time.Now()
	for i, tc := range calls {
		out[i] = history.Message{ID: newID(), Role: history.RoleTool, ToolCallID: tc.ID, Text: history.ToolErrorPrefix + " tool " + tc.Name + " did not run: " + why, CreatedAt: now}
	}
	return out
}
