package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// ActionKindCompact is the Kind of compaction actions.
const ActionKindCompact = "compact"

// usage records the provider-reported usage of a turn response and queues an
// automatic compaction when it reaches the threshold (docs/design.md §3).
func (l *loop) usage(u provider.Usage) {
	l.contextTokens = u.Total()
	l.publish(&UsageEvent{Purpose: provider.PurposeTurn, Usage: u, ContextTokens: l.contextTokens, TurnID: l.turnID()})
	thr := l.set.threshold()
	if thr == 0 || l.contextTokens < thr || l.autoQueued || l.autoBlocked || l.autoFailures >= maxAutoFailures {
		return
	}
	c := &command{id: newID(), kind: kindCompact, trigger: TriggerAuto, pos: NoPosition}
	c.comp, c.finishComp = newHandle[CompactResult](c.id, nil)
	l.autoQueued = true
	l.q.PushFront(c.id, c)
	l.log.Debug("automatic compaction queued", zap.Int("context_tokens", l.contextTokens), zap.Int("threshold", thr))
	l.publish(l.compactionEvent(c, PhaseQueued))
}

// startCompaction runs compaction c: the one algorithm of docs/design.md §4 for
// manual and automatic compactions alike.
func (l *loop) startCompaction(c *command) {
	plan := compact.PlanFor(l.active)
	if c.through != "" {
		var ok bool
		if plan, ok = compact.PlanThrough(l.active, c.through); !ok {
			// It was in Active when Compact was called; a compaction
			// queued before this one archived it since.
			l.finishCompaction(c, compactFailed(c, invalid("message %q is no longer in Active", c.through)))
			return
		}
	}
	// The record takes the next timeline position: the worker is free, so no
	// other write can come first.
	rec := history.CompactionRecord{CompactID: c.id, Trigger: c.trigger, Instructions: c.text, StartedAt: time.Now(), Position: l.nextPos}
	w, v, archived := l.writer(), l.version, l.archived

	if plan.Archive == 0 { // §4.2: no model call, a completed action that explains
		rec.Status = history.StatusNothingToCompact
		text := fmt.Sprintf("Nothing to compact: the conversation has %d user and assistant messages in its active history, and a compaction needs at least 2.", plan.N)
		l.submit(func(post func(func(*loop))) {
			nv, snap, err := w.begin(v, rec)
			post(func(l *loop) {
				l.idle()
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
			})
		})
		return
	}

	rec.Status = history.StatusInProgress
	ctx, cancel := context.WithCancelCause(context.Background())
	l.running, l.cancelJ = c, cancel
	l.runSummary.Reset()
	composer := l.composer()
	info := provider.Describe(composer.Provider)
	all := l.shareActive(len(l.active))
	in := compact.Input{PreviousSummary: l.summary, Prefix: all[:plan.Archive:plan.Archive], Instructions: c.text}
	system, before, hook := l.set.SystemPrompt, l.contextTokens, l.hook
	actionID := newID()

	l.submit(func(post func(func(*loop))) {
		defer cancel(nil)
		// §4.11: the application's hook sees the plan first, in the
		// worker; what it decides is recorded with the attempt.
		var hookErr error
		supplied := ""
		if hook != nil {
			p := &CompactPlan{CompactID: c.id, Trigger: c.trigger, Messages: in.Prefix, Instructions: in.Instructions}
			hookErr = runHook(ctx, hook, p)
			in.Instructions, supplied = p.Instructions, p.Summary
			rec.Instructions = p.Instructions
		}
		// The in-progress record makes an interrupted compaction visible
		// after a crash (§5.5).
		v, snap, err := w.begin(v, rec)
		if err != nil {
			post(func(l *loop) {
				l.idle()
				l.resync(snap)
				l.finishCompaction(c, compactFailed(c, fmt.Errorf("session: record compaction: %w", err)))
			})
			return
		}
		// Commit, then emit: the compaction is reported as started once its
		// record is durable.
		post(func(l *loop) {
			l.version = v
			c.pos = l.take1()
			ev := l.compactionEvent(c, PhaseStarted)
			ev.Archive = plan.Archive
			l.publish(ev)
		})

		var sum *compact.Summary
		switch {
		case hookErr != nil:
			err = hookErr
		case ctx.Err() != nil:
		case supplied != "":
			// A summary the hook supplied: committed like a generated one.
			if text := strings.TrimSpace(supplied); text == "" {
				err = compact.ErrEmptySummary
			} else {
				sum = &compact.Summary{Text: text}
				info = provider.Info{Name: HookSummaryProvider}
			}
		default:
			composer.BytesPerToken = bytesPerToken(system, in.PreviousSummary, all, before)
			sum, err = composer.Summarize(ctx, in, func(delta string) {
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
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil { // §4.5, §4.8: nothing committed, no action
			status := history.StatusFailed
			cancelled := ctx.Err() != nil && hookErr == nil
			if cancelled {
				status = history.StatusCancelled
				err = context.Cause(ctx) // ErrCancelled or ErrClosed
			}
			nv, snap, ferr := w.finish(v, c.id, status, err.Error())
			post(func(l *loop) {
				l.idle()
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
				res.ContextBefore = before
				if sum != nil {
					res.Usage = sum.Usage
				}
				l.finishCompaction(c, res)
			})
			return
		}
		model := info.Model
		if sum.Model != "" {
			model = sum.Model
		}
		// §4.6: the canonical commit. From here on it is never torn.
		post(func(l *loop) {
			l.publish(&ActionEvent{ID: actionID, Kind: ActionKindCompact, Status: ActionRunning, Text: "Compacting: archiving " + plural(plan.Archive, "message") + ".", CompactID: c.id})
			l.publish(l.compactionEvent(c, PhaseCommitting))
		})
		after := compact.EstimateTokens(system, 0) + compact.EstimateTokens(sum.Text, 0) + compact.EstimateMessages(all[plan.Archive:], 0)
		commit := history.Commit{
			CompactID:       c.id,
			SegmentID:       newID(),
			Archive:         plan.Archive,
			Summary:         sum.Text,
			InputTokens:     sum.Usage.InputTokens,
			OutputTokens:    sum.Usage.OutputTokens,
			At:              time.Now(),
			SummaryProvider: info.Name,
			SummaryModel:    model,
			ContextBefore:   before,
			ContextAfter:    after,
		}
		rec.FinishedAt = commit.At
		nv, seg, snap, err := w.commit(v, commit, rec, archived)
		if err != nil {
			post(func(l *loop) {
				l.idle()
				l.resync(snap)
				l.publish(&ActionEvent{ID: actionID, Kind: ActionKindCompact, Status: ActionFailed, Text: "Compaction failed: " + err.Error(), CompactID: c.id})
				res := compactFailed(c, err)
				res.Usage = sum.Usage
				res.ContextBefore = before
				res.LeftOut = sum.LeftOut
				l.finishCompaction(c, res)
			})
			return
		}
		seg.Messages = in.Prefix // the store does not read them back (O(1) commit)
		post(func(l *loop) {
			l.idle()
			l.version = nv
			// Active is exactly what the store now holds after its boundary;
			// the next provider request is built from it (§4.7).
			l.active = slices.Clone(l.active[plan.Archive:])
			l.summary = seg.Summary
			l.archived += int64(plan.Archive)
			l.contextTokens = 0 // stale until the next turn response (§3.3)
			l.publish(&ActionEvent{ID: actionID, Kind: ActionKindCompact, Status: ActionCompleted, Text: "Compacted: archived " + plural(plan.Archive, "message") + " into a summary.", CompactID: c.id})
			l.finishCompaction(c, CompactResult{
				CompactID: c.id, Success: true, Compacted: true, Reason: ReasonCompacted, Trigger: c.trigger, Segment: seg, Usage: sum.Usage,
				ContextBefore: before, ContextAfter: after, LeftOut: sum.LeftOut,
			})
		})
	})
}

// HookSummaryProvider is the Segment.SummaryProvider of a summary that
// Config.BeforeCompact supplied.
const HookSummaryProvider = "hook"

// ErrHookPanicked is wrapped by the error of a compaction whose
// BeforeCompact hook panicked.
var ErrHookPanicked = errors.New("session: BeforeCompact panicked")

// runHook runs the BeforeCompact hook; a panic in it is an error.
func runHook(ctx context.Context, hook func(context.Context, *CompactPlan) error, plan *CompactPlan) (err error) {
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

// finishCompaction publishes the result and finishes the handle.
func (l *loop) finishCompaction(c *command, res CompactResult) {
	if l.running == c {
		l.running, l.cancelJ = nil, nil
		l.runSummary.Reset()
	}
	if c.trigger == TriggerOverflow {
		l.overflowCompacted(res)
	}
	if c.trigger == TriggerAuto {
		l.autoQueued = false
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
	c := &command{id: newID(), kind: kindCompact, trigger: TriggerOverflow, pos: NoPosition}
	c.comp, c.finishComp = newHandle[CompactResult](c.id, nil)
	l.q.PushFront(c.id, c)
	l.log.Debug("overflow compaction queued")
	l.publish(l.compactionEvent(c, PhaseQueued))
}

// compactionEvent returns the lifecycle event of compaction c in phase.
func (l *loop) compactionEvent(c *command, phase string) *CompactionEvent {
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

// AutoCompactEvent reports that automatic compaction was suspended or
// resumed (docs/design.md §3.3). After 3 automatic compactions in a row have
// failed, none is queued any more (Suspended, with the count and the last
// error) until a compaction, manual or automatic, succeeds or Configure sets
// the threshold again (not Suspended). Manual compactions are never
// suspended.
type AutoCompactEvent struct {
	Suspended bool
	Failures  int    // consecutive failed automatic compactions; Suspended only
	Error     string // the last failure's error; Suspended only
	TurnID    string // the turn it happened in, "" when the session was idle
}

func (*AutoCompactEvent) payload() {}

// Durable implements Payload.
func (*AutoCompactEvent) Durable() bool { return true }

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
