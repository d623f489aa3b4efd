package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/plural"
	"github.com/sessionkit/sessionkit/provider"
)

// usage records the provider-reported usage of a turn response and queues an
// automatic compaction when it reaches the threshold (docs/design.md §3).
func (l *loop) usage(r *history.UsageRecord) {
	l.lastTurn, l.afterTurn = usageOf(r).Total(), nil
	l.spent(r, l.contextTokens())
	thr := l.set.threshold()
	l.measureHold(thr)
	if thr == 0 || l.contextTokens() < thr || l.autoQueued || l.autoBlocked || l.autoFailures >= maxAutoFailures || l.contextTokens() < l.autoHold {
		return
	}
	l.autoQueued = true
	l.log.Debug("automatic compaction queued", zap.Int("context_tokens", l.contextTokens()), zap.Int("threshold", thr))
	l.queueCompaction(TriggerAuto)
}

// segContext is a standing Segment committed after the latest turn
// response (loop.afterTurn): its ID and its ContextAfter.
type segContext struct {
	id    string
	after int
}

// contextTokens is the context of the latest turn response, or 0 while a
// Segment committed after it stands: the figure is stale then until the
// next turn response (§3.3). It follows from lastTurn and afterTurn, as
// opening the session decides it from the store (usageSoFar).
func (l *loop) contextTokens() int {
	if len(l.afterTurn) > 0 {
		return 0
	}
	return l.lastTurn
}

// queueCompaction queues a compaction of the session's own (automatic or
// overflow) at the front of the checkpoint commands. No Handle of it is
// handed out and it does not count against Config.MaxQueue.
func (l *loop) queueCompaction(trigger history.Trigger) {
	c := &command{id: newID(), kind: kindCompact, trigger: trigger, pos: NoPosition, finishComp: func(CompactResult) {}}
	l.q.PushFront(c.id, c)
	l.publish(l.compactionEvent(c, PhaseQueued))
}

// startCompaction runs compaction c: the one algorithm of docs/design.md §4
// for manual and automatic compactions alike, in phases as a turn runs in
// steps. The plan is made here, in the loop; then each phase is one worker
// job whose one result the loop applies before it starts the next:
// beginCompaction records the attempt, summarize makes the summary (and
// records a failure), commitCompaction makes the canonical commit.
func (l *loop) startCompaction(c *command) {
	plan, err := l.planCompaction(c)
	if err != nil {
		l.finishCompaction(c, compactFailed(c, err))
		return
	}
	// The record takes the next timeline position: the worker is free, so no
	// other write can come first.
	rec := history.CompactionRecord{CompactID: c.id, Trigger: c.trigger, Instructions: c.text, StartedAt: time.Now(), Position: l.nextPos}
	if plan.Archive == 0 {
		l.nothingToCompact(c, plan, rec)
		return
	}
	l.beginCompaction(l.newCompaction(c, plan, rec))
}

// planCompaction chooses the prefix compaction c archives: the oldest half
// (§4.1), or up to CompactRequest.Through (§4.11).
func (l *loop) planCompaction(c *command) (compact.Cut, error) {
	if c.through == "" {
		return compact.CutFor(l.active), nil
	}
	plan, ok := compact.CutThrough(l.active, c.through)
	if !ok {
		// It was in Active when Compact was called; a compaction queued
		// before this one archived it since.
		return plan, invalid("message %q is no longer in Active", c.through)
	}
	return plan, nil
}

// nothingToCompact ends compaction c, whose plan archives nothing (§4.2): no
// model call, a completed action that explains, and a record for replay.
func (l *loop) nothingToCompact(c *command, plan compact.Cut, rec history.CompactionRecord) {
	rec.Status = history.StatusNothingToCompact
	text := fmt.Sprintf("Nothing to compact: the conversation has %d user and assistant messages in its active history, and a compaction needs at least 2.", plan.N)
	w, v := l.writer(), l.version
	l.submit(func(progress) func(*loop) {
		nv, snap, err := w.begin(v, rec)
		return func(l *loop) {
			if err != nil {
				// The record is for replay only; the outcome stands.
				l.log.Warn("cannot record a compaction with nothing to compact", zap.Error(err))
				l.resync(snap)
			} else {
				l.version = nv
				c.pos = l.take1()
			}
			l.publish(&ActionEvent{ID: newID(), Kind: ActionKindCompact, Status: ActionCompleted, Text: text, CompactID: c.id})
			l.finishCompaction(c, CompactResult{CompactID: c.id, Success: true, Reason: ReasonNothingToCompact, Trigger: c.trigger})
		}
	})
}

// compaction is a running compaction as its phases hand it on. It belongs
// to the loop: a phase's job works on copies, and its result stores what
// the phase found out.
type compaction struct {
	c        *command
	ctx      context.Context // cancelled by loop.cancelJ
	archive  int             // the plan's Archive
	rec      history.CompactionRecord
	in       compact.Input     // the summary input: the prefix to archive, the instructions
	all      []history.Message // Active as the compaction started (shared: read only)
	composer compact.Composer
	info     provider.Info // what makes the summary
	system   string        // the system prompt, for the estimates
	before   int           // ContextBefore
	hook     func(context.Context, *PendingCompaction) error
	tel      *telemetry
	actionID string // the commit's action

	hookErr  error                // the hook vetoed the compaction (or panicked)
	supplied string               // the summary the hook supplied
	sum      *compact.Summary     // the summary, once made
	billed   *history.UsageRecord // the summary call's ledger record; nil when no call answered
	facts    []compact.Fact       // the prefix's facts, extracted beside the summary call
	files    []history.FileState  // the prefix's files (segmentFiles), folded in the same job
}

// newCompaction makes compaction c the running one, with what its phases
// need from the loop's state now.
func (l *loop) newCompaction(c *command, plan compact.Cut, rec history.CompactionRecord) *compaction {
	rec.Status = history.StatusInProgress
	ctx, cancel := context.WithCancelCause(context.Background())
	l.running, l.cancelJ = c, cancel
	if l.tel != nil {
		if l.turn != nil { // a child of the turn it runs in
			ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(l.turn.ctx))
		}
		ctx, l.compSpan = l.tel.start(ctx, CompactionSpanName, trace.SpanKindInternal,
			keyOperation.String(CompactionSpanName), keyCompactID.String(c.id), keyTrigger.String(string(c.trigger)),
			keyArchived.Int(plan.Archive), keyCtxBefore.Int(l.contextTokens()), l.tel.conv)
	}
	l.runSummary.Reset()
	composer := l.composer()
	all := l.shareActive(len(l.active))
	return &compaction{
		c: c, ctx: ctx, archive: plan.Archive, rec: rec,
		in:       compact.Input{PreviousSummary: l.summary, Prefix: all[:plan.Archive:plan.Archive], Instructions: c.text},
		all:      all,
		composer: *composer,
		info:     provider.Describe(composer.Provider),
		system:   l.set.system(),
		before:   l.contextTokens(),
		hook:     l.hook,
		tel:      l.tel,
		actionID: newID(),
	}
}

// beginCompaction runs the application's hook on the plan (§4.11, in the
// worker; what it decides is recorded with the attempt) and records the
// attempt as in progress, which makes an interrupted compaction visible
// after a crash (§5.5). Commit, then emit: the compaction is reported as
// started once its record is durable.
func (l *loop) beginCompaction(k *compaction) {
	c, w, v := k.c, l.writer(), l.version
	ctx, hook, rec, in := k.ctx, k.hook, k.rec, k.in
	l.submit(func(progress) func(*loop) {
		var hookErr error
		supplied := ""
		if hook != nil {
			p := &PendingCompaction{CompactID: c.id, Trigger: c.trigger, Messages: in.Prefix, Instructions: in.Instructions}
			hookErr = runHook(ctx, hook, p)
			in.Instructions, supplied = p.Instructions, p.Summary
			rec.Instructions = p.Instructions
		}
		nv, snap, err := w.begin(v, rec)
		return func(l *loop) {
			if err != nil {
				l.resync(snap)
				l.finishCompaction(c, compactFailed(c, fmt.Errorf("session: record compaction: %w", err)))
				return
			}
			k.rec, k.in, k.hookErr, k.supplied = rec, in, hookErr, supplied
			l.version = nv
			c.pos = l.take1()
			ev := l.compactionEvent(c, PhaseStarted)
			ev.Archive = k.archive
			l.publish(ev)
			l.summarize(k)
		}
	})
}

// summarize makes the summary: the hook's, or one model call streaming
// deltas. A compaction that fails here (§4.5) or is cancelled (§4.8)
// commits nothing and publishes no action; the same job records its end.
func (l *loop) summarize(k *compaction) {
	c, w, v, run, m, turnID := k.c, l.writer(), l.version, *k, l.meter, l.turnID()
	l.submit(func(post progress) func(*loop) {
		// The prefix's facts (for the Segment's fidelity) are extracted
		// beside the summary call, from the prefix the compaction holds
		// read only, and always waited for before the job ends.
		factsc := make(chan []compact.Fact, 1)
		go func() { factsc <- compact.Facts(run.in.Prefix) }()
		sum, info, err := run.summary(post)
		facts := <-factsc
		var billed *history.UsageRecord
		if sum != nil && run.supplied == "" && run.hookErr == nil { // a model call answered
			r := m.record(provider.PurposeSummary, info, sum.Model, sum.Usage, turnID, c.id)
			billed = &r
		}
		if err == nil {
			files := segmentFiles(run.in.Prefix) // off the loop: it reads the whole prefix
			return func(l *loop) {
				k.sum, k.info, k.facts, k.files, k.billed = sum, info, facts, files, billed
				// §4.6: the canonical commit. From here on it is never torn.
				l.publish(&ActionEvent{ID: k.actionID, Kind: ActionKindCompact, Status: ActionRunning, Text: "Compacting: archiving " + plural.Count(k.archive, "message") + ".", CompactID: c.id})
				l.publish(l.compactionEvent(c, PhaseCommitting))
				l.commitCompaction(k)
			}
		}
		status := history.StatusFailed
		cancelled := run.ctx.Err() != nil && run.hookErr == nil
		if cancelled {
			status = history.StatusCancelled
			err = context.Cause(run.ctx) // ErrCancelled or ErrClosed
		}
		// The call was paid for: its record goes in the ledger, though the
		// compaction stores nothing else.
		var uerr error
		if billed != nil {
			uerr = w.recordUsage([]history.UsageRecord{*billed})
		}
		nv, snap, ferr := w.finish(v, c.id, status, err.Error())
		return func(l *loop) {
			l.billed(billed, uerr)
			switch {
			case ferr != nil:
				// It stays in progress in the store; the next open records
				// it as interrupted.
				l.log.Warn("cannot record the end of a compaction", zap.Error(ferr))
				l.resync(snap)
			case snap != nil:
				l.resync(snap)
			default:
				l.version = nv
			}
			res := compactFailed(c, err)
			res.Cancelled = cancelled
			res.ContextBefore = k.before
			if billed != nil {
				res.Usage, res.Cost = usageOf(billed), costOf(billed)
			}
			l.finishCompaction(c, res)
		}
	})
}

// summary makes the summary of k, a copy, in the worker, posting its
// deltas; it returns what made it.
func (k compaction) summary(post progress) (*compact.Summary, provider.Info, error) {
	var (
		sum *compact.Summary
		err error
	)
	switch {
	case k.hookErr != nil:
		return nil, k.info, k.hookErr
	case k.ctx.Err() != nil:
	case k.supplied != "":
		// A summary the hook supplied: committed like a generated one.
		text := strings.TrimSpace(k.supplied)
		if text == "" {
			return nil, k.info, compact.ErrEmptySummary
		}
		sum, k.info = &compact.Summary{Text: text}, provider.Info{Name: HookSummaryProvider}
	default:
		c := k.c
		k.composer.BytesPerToken = bytesPerToken(k.system, k.in.PreviousSummary, k.all, k.before)
		// The summary provider's retries are reported like a turn's.
		rctx := provider.WithRetryReports(k.ctx, func(r provider.Retry) {
			post(func(l *loop) {
				ev := retryEvent(l.turnID(), r)
				ev.CompactID = c.id
				l.publish(ev)
			})
		})
		var span *chat
		rctx, span = k.tel.startChat(rctx, k.info, "")
		defer func() {
			if span == nil {
				return // no telemetry: nothing to clean or allocate
			}
			var rec *history.UsageRecord
			if sum != nil {
				u, _ := cleanUsage(sum.Usage)
				rec = &history.UsageRecord{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
			}
			span.end(rec, modelOf(sum), err)
		}()
		sum, err = k.composer.Summarize(rctx, k.in, func(delta string) {
			if delta != "" {
				post(func(l *loop) {
					keepDraft(&l.runSummary, delta)
					ev := l.compactionEvent(c, PhaseDelta)
					ev.Delta = delta
					l.publish(ev)
				})
			}
		})
	}
	if err == nil && k.ctx.Err() != nil {
		err = k.ctx.Err()
	}
	return sum, k.info, err
}

// commitCompaction makes the canonical commit (§4.6): the prefix archived as
// a Segment with the summary, in one store transaction. Active is then
// exactly what the store holds after its boundary; the next provider
// request is built from it (§4.7).
func (l *loop) commitCompaction(k *compaction) {
	c, sum := k.c, k.sum
	model := k.info.Model
	if sum.Model != "" {
		model = sum.Model
	}
	after := compact.EstimateTokens(k.system, 0) + compact.EstimateTokens(sum.Text, 0) + compact.EstimateMessages(k.all[k.archive:], 0)
	commit := history.Commit{
		CompactID:       c.id,
		SegmentID:       newID(),
		Archive:         k.archive,
		Summary:         sum.Text,
		InputTokens:     sum.Usage.InputTokens,
		OutputTokens:    sum.Usage.OutputTokens,
		SummaryProvider: k.info.Name,
		SummaryModel:    model,
		ContextBefore:   k.before,
		ContextAfter:    after,
		Files:           k.files,
	}
	if k.billed != nil {
		commit.Usage = []history.UsageRecord{*k.billed}
		commit.InputTokens, commit.OutputTokens = k.billed.InputTokens, k.billed.OutputTokens
	}
	w, v, rec, archived, facts := l.writer(), l.version, k.rec, l.archived, k.facts
	l.submit(func(progress) func(*loop) {
		commit.Fidelity = compact.FidelityOf(facts, sum.Text)
		commit.At = time.Now()
		rec.FinishedAt = commit.At
		nv, seg, snap, err := w.commit(v, commit, rec, archived)
		var uerr error
		if err != nil {
			// The commit did not land, the summary call was paid for all
			// the same.
			uerr = w.recordUsage(commit.Usage)
		}
		return func(l *loop) {
			l.billed(k.billed, uerr)
			if err != nil {
				l.resync(snap)
				l.publish(&ActionEvent{ID: k.actionID, Kind: ActionKindCompact, Status: ActionFailed, Text: "Compaction failed: " + err.Error(), CompactID: c.id})
				res := compactFailed(c, err)
				res.Usage, res.ContextBefore, res.LeftOut = sum.Usage, k.before, sum.LeftOut
				if k.billed != nil {
					res.Usage, res.Cost = usageOf(k.billed), costOf(k.billed)
				}
				l.finishCompaction(c, res)
				return
			}
			seg.Messages = k.in.Prefix // the store does not read them back (O(1) commit)
			l.version = nv
			l.activePlans -= planCalls(l.active[:k.archive])
			l.active = slices.Clone(l.active[k.archive:])
			l.summary = seg.Summary
			l.archived += int64(k.archive)
			if len(commit.Files) > 0 {
				l.addSegFiles(commit.Files)
			}
			// Stale until the next turn response (§3.3): the estimate.
			l.afterTurn = append(l.afterTurn, segContext{id: seg.ID, after: after})
			l.publish(&ActionEvent{ID: k.actionID, Kind: ActionKindCompact, Status: ActionCompleted, Text: "Compacted: archived " + plural.Count(k.archive, "message") + " into a summary.", CompactID: c.id})
			res := CompactResult{
				CompactID: c.id, Success: true, Compacted: true, Reason: ReasonCompacted, Trigger: c.trigger, Segment: seg, Usage: sum.Usage,
				ContextBefore: k.before, ContextAfter: after, LeftOut: sum.LeftOut, Fidelity: commit.Fidelity,
			}
			if k.billed != nil {
				res.Usage, res.Cost = usageOf(k.billed), costOf(k.billed)
			}
			res.ContextGrew, res.Note = contextNote(k.before, after)
			l.finishCompaction(c, res)
		}
	})
}

// billed publishes the UsageEvent of a summary call recorded in the
// ledger (r nil: no call answered); uerr is the error of recording it,
// when it was recorded apart from the commit.
func (l *loop) billed(r *history.UsageRecord, uerr error) {
	switch {
	case r == nil:
	case uerr != nil:
		l.log.Warn("cannot record the usage of a summary call", zap.String("compaction", r.CompactID), zap.Error(uerr))
	default:
		l.spent(r, 0)
	}
}

// contextNote reports a compaction that did not make the context smaller
// (before known, after not below it) and the Note that says so.
func contextNote(before, after int) (bool, string) {
	if before <= 0 || after < before {
		return false, ""
	}
	return true, fmt.Sprintf("the context did not shrink: about %d tokens after the compaction (an estimate) against %d before; the summary is longer than what it replaced", after, before)
}

// HookSummaryProvider is the Segment.SummaryProvider of a summary that
// Config.BeforeCompact supplied.
const HookSummaryProvider = "hook"

// ErrHookPanicked is wrapped by the error of a compaction whose
// BeforeCompact hook panicked.
var ErrHookPanicked = errors.New("session: BeforeCompact panicked")

// runHook runs the BeforeCompact hook; a panic in it is an error.
func runHook(ctx context.Context, hook func(context.Context, *PendingCompaction) error, plan *PendingCompaction) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrHookPanicked, r)
		}
	}()
	if err := hook(ctx, plan); err != nil {
		return fmt.Errorf("session: BeforeCompact vetoed the compaction: %w", err)
	}
	return nil
}

// bytesPerToken calibrates the token estimate of the summary input with
// the provider's own figure: contextTokens (input plus output of the last
// turn response) stood for about the system prompt, the summary and
// Active. 0 (the default estimate) without a figure.
func bytesPerToken(system, summary string, active []history.Message, contextTokens int) float64 {
	if contextTokens <= 0 {
		return 0
	}
	n := len(system) + len(summary)
	for i := range active {
		n += len(active[i].Text)
		for _, tc := range active[i].ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	bpt := float64(n) / float64(contextTokens)
	return min(max(bpt, 1), 2*compact.DefaultBytesPerToken)
}

// modelOf is the model a summary reported, "" for none.
func modelOf(sum *compact.Summary) string {
	if sum == nil {
		return ""
	}
	return sum.Model
}

// endCompactionSpan ends the span of the running compaction with its
// outcome.
func (l *loop) endCompactionSpan(res *CompactResult) {
	span := l.compSpan
	l.compSpan = nil
	if span == nil {
		return
	}
	span.SetAttributes(keyCompactDone.String(string(res.Reason)), keyCtxAfter.Int(res.ContextAfter))
	if res.Compacted && res.Fidelity.Facts > 0 {
		span.SetAttributes(keyFidelity.Float64(float64(res.Fidelity.Kept) / float64(res.Fidelity.Facts)))
	}
	var err error
	if res.Reason == ReasonCompactFailed {
		err = errors.New(res.Error)
		if res.Cancelled {
			err = ErrCancelled
		}
	}
	endSpan(span, err)
}

// finishCompaction publishes the result and finishes the handle.
func (l *loop) finishCompaction(c *command, res CompactResult) {
	if l.running == c {
		l.endCompactionSpan(&res)
		l.cancelJ(nil) // its phases are over: release the context
		l.running, l.cancelJ = nil, nil
		l.runSummary.Reset()
	}
	if c.trigger == TriggerOverflow {
		l.overflowCompacted(res)
	}
	if c.trigger == TriggerAuto {
		l.autoQueued = false
		if res.Compacted {
			l.autoCheck = &res
		}
		// §3.3: no second automatic compaction in this turn after one that
		// did not compact, whatever the turn appends meanwhile.
		l.autoBlocked = !res.Compacted
	}
	switch {
	case res.Compacted:
		l.resumeAuto("a compaction succeeded")
	case c.trigger == TriggerAuto && res.Reason == ReasonCompactFailed && !res.Cancelled:
		l.autoFailures++
		if l.autoFailures == maxAutoFailures {
			l.log.Warn("automatic compaction suspended", zap.Int("failures", l.autoFailures), zap.String("error", res.Error))
			l.publish(&AutoCompactEvent{Suspended: true, Failures: l.autoFailures, Error: res.Error, TurnID: l.turnID()})
		}
	}
	ev := l.compactionEvent(c, PhaseFinished)
	ev.Result = &res
	l.publish(ev)
	c.finishComp(res)
}

// overflowCompacted ends the turn whose step overflowed when its overflow
// compaction did not compact (docs/design.md §3.5): with the overflow error, or
// the turn's own cancellation.
func (l *loop) overflowCompacted(res CompactResult) {
	t := l.turn
	if t == nil || res.Compacted || t.phase == phaseEnded {
		return
	}
	if t.ctx.Err() != nil {
		l.endWith(context.Cause(t.ctx))
		return
	}
	l.endWith(t.overflowErr)
}

// queueOverflow queues the overflow compaction of the active turn's step
// at the front of the checkpoint commands.
func (l *loop) queueOverflow() {
	l.log.Debug("overflow compaction queued")
	l.queueCompaction(TriggerOverflow)
}

// compactionEvent returns the lifecycle event of compaction c in phase.
func (l *loop) compactionEvent(c *command, phase Phase) *CompactionEvent {
	return &CompactionEvent{CompactID: c.id, Trigger: c.trigger, Phase: phase, TurnID: l.turnID(), Position: c.pos}
}

// take1 takes the next timeline position for a compaction record the worker
// has just stored.
func (l *loop) take1() int64 {
	p := l.nextPos
	l.nextPos++
	return p
}

// maxAutoFailures is how many automatic compactions in a row may fail
// before automatic compaction is suspended (docs/design.md §3.3).
const maxAutoFailures = 3

// resumeAuto ends a suspension of automatic compaction, and the count of
// failures that leads to one: a compaction succeeded, or Configure set the
// threshold again.
func (l *loop) resumeAuto(why string) {
	suspended := l.autoFailures >= maxAutoFailures
	l.autoFailures = 0
	if suspended {
		l.log.Info("automatic compaction resumed", zap.String("why", why))
		l.publish(&AutoCompactEvent{TurnID: l.turnID()})
	}
}

// autoHoldMargin is how much the context must grow, past what an automatic
// compaction left it at, before another automatic compaction may run when
// that one did not get the context under the threshold thr: a quarter of
// the threshold (docs/compaction.md "When compaction cannot help").
func autoHoldMargin(thr int) int { return max(thr/4, 1) }

// measureHold applies the guard against compactions that cannot help,
// with the context just reported and the threshold thr. The first report
// after an automatic compaction measures it: at or above the threshold,
// no automatic compaction runs until the context has grown by
// autoHoldMargin(thr) past it (the hold), and the first hold since the
// context was last under the threshold is reported (AutoCompactEvent with
// Held). A context under the threshold ends a hold.
func (l *loop) measureHold(thr int) {
	check := l.autoCheck
	l.autoCheck = nil
	if thr == 0 || l.contextTokens() < thr {
		l.releaseHold()
		return
	}
	if check == nil {
		return
	}
	l.autoHold = l.contextTokens() + autoHoldMargin(thr)
	if l.autoTold {
		l.log.Debug("automatic compaction held again", zap.Int("context_tokens", l.contextTokens()), zap.Int("resume_at", l.autoHold))
		return
	}
	l.autoTold = true
	ev := &AutoCompactEvent{
		Held: true, CompactID: check.CompactID, Threshold: thr, ResumeAt: l.autoHold,
		ContextBefore: check.ContextBefore, ContextAfter: l.contextTokens(),
		Grew: check.ContextBefore > 0 && l.contextTokens() >= check.ContextBefore, TurnID: l.turnID(),
	}
	l.log.Warn("automatic compaction held: the last one left the context above the threshold",
		zap.Int("context_before", ev.ContextBefore), zap.Int("context_after", ev.ContextAfter), zap.Int("threshold", thr), zap.Int("resume_at", ev.ResumeAt))
	l.publish(ev)
}

// releaseHold ends a hold of automatic compaction (the context is under
// the threshold, or the threshold was configured): the next hold is
// reported again.
func (l *loop) releaseHold() {
	l.autoHold, l.autoTold = 0, false
}

// AutoCompactEvent reports that automatic compaction was suspended or
// resumed (docs/design.md §3.3), or held. After 3 automatic compactions in
// a row have failed, none is queued any more (Suspended, with the count and
// the last error) until a compaction, manual or automatic, succeeds or
// Configure sets the threshold again (not Suspended). Manual compactions are
// never suspended.
//
// Held reports an automatic compaction that did not get the context under
// the threshold: the first context the provider reported after it
// (ContextAfter) is still at or above Threshold, or larger than before
// (Grew). Compacting again at once would not help and would run at every
// step, so no automatic compaction runs until the context reaches ResumeAt
// (ContextAfter plus a quarter of the threshold); then one may run, and if
// it does not help either the hold starts again, silently. A context under
// the threshold or a Configure of the threshold ends the hold. It is
// reported once, until the context is under the threshold again. What to
// change: a higher threshold (or larger context window), a shorter system
// prompt or fewer tools, or a manual Compact with instructions for a
// shorter summary.
type AutoCompactEvent struct {
	Suspended bool
	Failures  int    // consecutive failed automatic compactions; Suspended only
	Error     string // the last failure's error; Suspended only
	TurnID    string // the turn it happened in, "" when the session was idle

	Held          bool   // automatic compaction is held (see above)
	CompactID     string // Held: the automatic compaction that did not help
	ContextBefore int    // Held: the context when it started (0 = unknown)
	ContextAfter  int    // Held: the first context reported after it
	Threshold     int    // Held: the automatic threshold
	ResumeAt      int    // Held: no automatic compaction until the context reaches it
	Grew          bool   // Held: ContextAfter is not smaller than ContextBefore
}

func (*AutoCompactEvent) payload() {}

// Durable implements Payload.
func (*AutoCompactEvent) Durable() bool { return true }
