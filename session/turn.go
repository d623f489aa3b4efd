package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

func (l *loop) maxSteps() int {
	if l.set.MaxSteps > 0 {
		return l.set.MaxSteps
	}
	return DefaultMaxSteps
}

// startTurn starts the turn of prompt c: it commits the user message.
func (l *loop) startTurn(c *command) {
	ctx, cancel := context.WithCancelCause(context.Background())
	l.turn = &turn{cmd: c, ctx: ctx, cancel: cancel, phase: phaseStep}
	if l.tel != nil {
		l.turn.ctx, l.turn.span = l.tel.startTurn(ctx, provider.Describe(l.prov).Name, l.set.Model)
	}
	l.autoBlocked = false // §3.3: the back-off of the last turn ends with it
	l.publish(&TurnEvent{TurnID: c.id, Phase: TurnStarted})
	msg := history.Message{ID: newID(), Role: history.RoleUser, Text: c.text, Attachments: c.attachments, CreatedAt: time.Now()}
	l.commit([]history.Message{msg}, func(l *loop, err error) {
		if err != nil {
			l.endWith(fmt.Errorf("session: store prompt: %w", err))
		}
	})
}

// endWith ends the active turn with err (the first error wins).
func (l *loop) endWith(err error) {
	if l.turn.err == nil {
		l.turn.err = err
	}
	l.turn.phase = phaseEnded
}

// step makes the next provider request of the turn, built from the
// canonical history as it is now: system prompt, retained summary, Active
// (docs/design.md §4.7, §4.10).
func (l *loop) step() {
	t := l.turn
	switch {
	case t.ctx.Err() != nil:
		l.endWith(context.Cause(t.ctx))
		return
	case t.steps >= l.maxSteps():
		l.endWith(fmt.Errorf("%w (%d)", ErrTooManySteps, l.maxSteps()))
		return
	}
	t.steps++
	req := &provider.Request{
		Purpose:  provider.PurposeTurn,
		Model:    l.set.Model,
		System:   l.set.system(),
		Summary:  l.requestSummary(),
		Messages: l.requestMessages(),
		Tools:    l.requestTools(),
	}
	w, v, prov, ctx, turnID, m, tel := l.writer(), l.version, l.prov, t.ctx, t.cmd.id, l.meter, l.tel
	// The assistant message's ID is chosen before it streams, so that every
	// delta names the message it belongs to.
	msgID := newID()
	l.draft.reset()
	l.draft.id = msgID
	l.submit(func(post progress) func(*loop) {
		cctx, span := tel.startChat(ctx, provider.Describe(prov), req.Model)
		rctx := provider.WithRetryReports(cctx, func(r provider.Retry) {
			span.retried(r)
			post(func(l *loop) { l.publish(retryEvent(turnID, r)) })
		})
		rctx = provider.WithThoughtDeltas(rctx, func(text string) {
			post(func(l *loop) {
				keepDraft(&l.draft.thoughts, text)
				l.publish(&ThoughtDeltaEvent{TurnID: turnID, MessageID: msgID, Text: text})
			})
		})
		resp, err := prov.Complete(rctx, req, func(text string) {
			if text != "" {
				post(func(l *loop) {
					keepDraft(&l.draft.text, text)
					l.publish(&DeltaEvent{TurnID: turnID, MessageID: msgID, Text: text})
				})
			}
		})
		if err == nil && resp == nil {
			err = errors.New("provider returned no response")
		}
		if err != nil {
			span.end(nil, "", err)
			return func(l *loop) {
				l.draft.reset()
				if ctx.Err() != nil {
					l.endWith(context.Cause(ctx))
					return
				}
				err = fmt.Errorf("session: provider: %w", err)
				// §3.5: one overflow compaction per step, then one retry.
				if t := l.turn; errors.Is(err, provider.ErrContextOverflow) && l.set.CompactOnOverflow && !t.overflowed {
					t.overflowed, t.overflowErr = true, err
					t.steps-- // the retry is the same step
					l.queueOverflow()
					t.phase = phaseCheckpoint
					return
				}
				l.endWith(err)
			}
		}
		msg := assistantMessage(resp.Message, msgID)
		model := resp.Model
		if model == "" {
			model = req.Model
		}
		rec := m.record(provider.PurposeTurn, provider.Describe(prov), model, resp.Usage, turnID, "")
		span.end(&rec, resp.Model, nil)
		// The response's record goes with its message, in one transaction.
		nv, snap, err := w.append(v, []history.Message{msg}, rec)
		return func(l *loop) {
			if err != nil {
				l.draft.reset()
				l.resync(snap)
				l.endWith(fmt.Errorf("session: store reply: %w", err))
				return
			}
			l.appended(nv, msg)
			l.turn.overflowed, l.turn.overflowErr = false, nil
			l.turn.usage = usageOf(&rec)
			l.usage(&rec)
			if len(msg.ToolCalls) > 0 {
				l.turn.phase = phaseTools
			} else {
				l.turn.phase = phaseEnded
			}
		}
	})
}

// assistantMessage makes a provider's message fit for history.
func assistantMessage(m history.Message, id string) history.Message {
	m.ID = id
	m.Role = history.RoleAssistant
	m.CreatedAt = time.Now()
	m.Steer = false
	m.ToolCallID = ""
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		if tc.ID == "" {
			tc.ID = "call_" + newID()
		}
		if tc.Name == "" {
			tc.Name = "unnamed"
		}
		if len(tc.Arguments) > 0 && !json.Valid(tc.Arguments) {
			// Keep what the model sent, as a JSON string, so history stays valid.
			raw, _ := json.Marshal(string(tc.Arguments))
			tc.Arguments = raw
		}
	}
	return m
}

// runTools runs the tool calls of the last assistant message one after the
// other, committing each result before its event, then reaches the step
// checkpoint. Calls left when the turn is cancelled get a result saying so,
// so that history never holds a call without its answer.
func (l *loop) runTools() {
	t := l.turn
	calls := unanswered(l.active)
	w, v, ctx, tools, log, tel := l.writer(), l.version, t.ctx, l.runnable(), l.log, l.tel
	set, planOn := l.set, l.planOn
	// The worker's view of the file ledger, which the calls read and
	// record into: it shares the loop's files until a call records one
	// (copy on write), so a batch that records nothing copies nothing; the
	// loop folds the same accesses from the results.
	led, stale, active := l.files.share(), l.filesStale, l.shareActive(len(l.active))
	// Each call runs on a context of its own, made here on the loop so
	// that CancelToolCall finds it before the worker starts the call.
	states := make([]*toolCall, len(calls))
	t.toolCalls = make(map[string]*toolCall, len(calls))
	for i, tc := range calls {
		c := &toolCall{}
		c.ctx, c.cancel = context.WithCancelCause(ctx)
		states[i], t.toolCalls[tc.ID] = c, c
	}
	l.submit(func(post progress) func(*loop) {
		defer func() { led.release() }()
		if stale {
			// The archive changed under the session (a resync): its
			// files are read again, so the guard never forgets a file
			// for it.
			var segs [][]history.FileState
			err := w.call(func(ctx context.Context) (err error) {
				segs, err = readStandingFiles(ctx, w.store, w.id)
				return err
			})
			if err == nil {
				led.release()
				led = ledgerOf(segs, active)
				post(func(l *loop) { l.setSegFiles(segs) })
			}
		}
		for i, tc := range calls {
			c := states[i]
			var text string
			switch {
			case ctx.Err() != nil:
				text = notRun([]history.ToolCall{tc}, "the turn was cancelled")[0].Text
			case c.state.Load() == toolCallCancelled:
				text = ToolCallCancelledText + ": " + tc.Name + " did not run"
			default:
				tctx, span := tel.startTool(c.ctx, tc)
				text = runTool(WithFileLedger(tctx, led), log, tools, tc)
				endTool(span, text)
				// The call is over: a cancel from now on finds nothing to
				// cancel. One that came first makes the result say so.
				if !c.state.CompareAndSwap(toolCallRunning, toolCallDone) && ctx.Err() == nil {
					text = cancelledResult(tc.Name, text)
				}
			}
			c.state.Store(toolCallDone)
			c.cancel(nil) // release the context
			msg := history.Message{ID: newID(), Role: history.RoleTool, ToolCallID: tc.ID, Text: text, CreatedAt: time.Now(), Files: led.take(tc.ID)}
			nv, snap, err := w.append(v, []history.Message{msg})
			if err != nil {
				return func(l *loop) {
					l.resync(snap)
					l.endWith(fmt.Errorf("session: store tool result: %w", err))
				}
			}
			v = nv
			post(func(l *loop) { l.appended(nv, msg) })
			if tc.Name == PlanTool && planOn {
				pv, next, snap, err := keepPlan(w, v, set, tc, text)
				switch {
				case errors.Is(err, errNoPlan):
				case err != nil:
					return func(l *loop) {
						l.resync(snap)
						l.endWith(fmt.Errorf("session: store plan: %w", err))
					}
				default:
					v, set = pv, next
					post(func(l *loop) {
						l.version = pv
						l.set.Plan = next.Plan
						l.publishSettings()
					})
				}
			}
		}
		return func(l *loop) { l.turn.phase = phaseCheckpoint }
	})
}

// runTool runs one tool call and returns the text of its result.
func runTool(ctx context.Context, log *zap.Logger, tools map[string]Tool, tc history.ToolCall) (text string) {
	tool, ok := tools[tc.Name]
	if !ok {
		return fmt.Sprintf("%s unknown tool %q", history.ToolErrorPrefix, tc.Name)
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("tool panicked", zap.String("tool", tc.Name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			text = fmt.Sprintf("%s tool %s failed: panic: %v", history.ToolErrorPrefix, tc.Name, r)
		}
	}()
	args := tc.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	out, err := tool.Run(WithToolCallID(ctx, tc.ID), args)
	if err != nil {
		return fmt.Sprintf("%s tool %s failed: %v", history.ToolErrorPrefix, tc.Name, err)
	}
	return out
}

// endTurn finishes the active turn once its checkpoint commands have run.
func (l *loop) endTurn() {
	t := l.turn
	if calls := unanswered(l.active); len(calls) > 0 {
		msgs := notRun(calls, "the turn ended first")
		l.commit(msgs, func(l *loop, err error) {
			if err != nil {
				l.log.Error("cannot answer unanswered tool calls", zap.Error(err))
				l.finishTurn(t)
				return
			}
			t.messages = append(t.messages, msgs...)
		})
		return
	}
	l.finishTurn(t)
}

func (l *loop) finishTurn(t *turn) {
	l.turn = nil
	t.cancel(nil)
	if t.span != nil {
		endSpan(t.span, t.err)
	}
	res := TurnResult{Messages: t.messages, Usage: t.usage, Err: t.err}
	l.publish(&TurnEvent{TurnID: t.cmd.id, Phase: TurnFinished, Result: &res})
	t.cmd.finishTurn(res)
}

// ErrNoToolCall is returned by [Session.CancelToolCall] when no call of
// that ID is running or waiting to run in the active turn: it is unknown,
// or it has its result already.
var ErrNoToolCall = errors.New("session: no such tool call is running")

// ToolCallCancelledText begins the result of a tool call cancelled with
// [Session.CancelToolCall]; the tool's own output, if it gave any, follows.
// It is an error result (history.ToolFailed), and how a client tells a
// cancelled call from a failed one in durable history.
const ToolCallCancelledText = history.ToolErrorPrefix + " the user cancelled this tool call"

// errToolCallCancelled is the cause of a tool call's context that
// CancelToolCall ended.
var errToolCallCancelled = errors.New("session: the tool call was cancelled")

// CancelToolCall cancels one tool call of the active turn, by its ID (the
// ID of its history.ToolCall, [ToolCallID] in the tool), as an editor's stop
// button on one call asks (ACP v2 tool_call/cancel): the context the tool
// runs on ends, with a cause that wraps [ErrCancelled], or the call does
// not start if it was waiting for an earlier call of its message. Its
// result, committed as usual, begins with [ToolCallCancelledText], and the
// turn goes on: the model reads the result at the next step (what the tool
// returned follows the note, whether it noticed the cancel or not). A call
// that returned before the cancel came is over, committed or not: it keeps
// its own result, and the cancel is ErrNoToolCall. CancelToolCall returns
// once the cancellation is made, not when the tool has stopped. Errors:
// [ErrNoToolCall] when no such call is running or waiting to run,
// [ErrClosed], or ctx's error.
func (s *Session) CancelToolCall(ctx context.Context, callID string) error {
	var err error
	if e := s.read(ctx, func(l *loop) { err = l.cancelToolCall(callID) }); e != nil {
		return e
	}
	return err
}

// toolCall is one call of runTools that CancelToolCall may cancel. Its
// state is the one thing the loop and the worker share: whichever of the
// two moves it from running first decides whether the call was cancelled.
type toolCall struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	state  atomic.Int32 // toolCallRunning (also: waiting to run), toolCallCancelled, toolCallDone
}

const (
	toolCallRunning int32 = iota
	toolCallCancelled
	toolCallDone
)

func (l *loop) cancelToolCall(id string) error {
	t := l.turn
	var c *toolCall
	if t != nil {
		c = t.toolCalls[id]
	}
	if c == nil || !c.state.CompareAndSwap(toolCallRunning, toolCallCancelled) {
		return fmt.Errorf("%w: %q", ErrNoToolCall, id)
	}
	c.cancel(fmt.Errorf("%w (%w)", errToolCallCancelled, ErrCancelled))
	return nil
}

// cancelledResult is the result of a call cancelled while it ran: what the
// tool returned after the note that the user cancelled it.
func cancelledResult(name, out string) string {
	if out == "" {
		return ToolCallCancelledText + ": " + name + " was stopped"
	}
	return ToolCallCancelledText + ": " + name + " was stopped; what it returned:\n" + out
}

// RetryEvent reports that the provider failed a request and retries it
// (provider.ReportRetry): the answer is delayed by Wait. The request is a
// turn's (TurnID) or a compaction's summary call (CompactID, with the
// TurnID of the turn it runs in, if any). Live only.
type RetryEvent struct {
	TurnID      string
	CompactID   string        // the compaction whose summary call is retried; "" for a turn's request
	Retry       int           // 1 for the first retry
	MaxRetries  int           // the retries the provider allows in all
	Wait        time.Duration // before the retry
	RateLimited bool          // the server refused the request for its rate or load
	Error       string        // the failure retried
}

func (*RetryEvent) payload() {}

// Durable implements Payload.
func (*RetryEvent) Durable() bool { return false }

func retryEvent(turnID string, r provider.Retry) *RetryEvent {
	ev := &RetryEvent{TurnID: turnID, Retry: r.Retry, MaxRetries: r.MaxRetries, Wait: r.Wait, RateLimited: r.RateLimited}
	if r.Err != nil {
		ev.Error = r.Err.Error()
	}
	return ev
}
