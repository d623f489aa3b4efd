package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
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
		System:   l.set.SystemPrompt,
		Summary:  l.requestSummary(),
		Messages: l.requestMessages(),
		Tools:    l.requestTools(),
	}
	w, v, prov, ctx, turnID := l.writer(), l.version, l.prov, t.ctx, t.cmd.id
	// The assistant message's ID is chosen before it streams, so that every
	// delta names the message it belongs to.
	msgID := newID()
	l.draft.id = msgID
	l.draft.text.Reset()
	l.submit(func(post progress) func(*loop) {
		resp, err := prov.Complete(ctx, req, func(text string) {
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
			return func(l *loop) {
				l.draft.id = ""
				l.draft.text.Reset()
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
		nv, snap, err := w.append(v, []history.Message{msg})
		return func(l *loop) {
			if err != nil {
				l.draft.id = ""
				l.draft.text.Reset()
				l.resync(snap)
				l.endWith(fmt.Errorf("session: store reply: %w", err))
				return
			}
			l.appended(nv, msg)
			l.turn.overflowed, l.turn.overflowErr = false, nil
			l.turn.usage = resp.Usage
			l.usage(resp.Usage)
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
	w, v, ctx, tools, log := l.writer(), l.version, t.ctx, l.runnable(), l.log
	l.submit(func(post progress) func(*loop) {
		for _, tc := range calls {
			var text string
			if ctx.Err() != nil {
				text = notRun([]history.ToolCall{tc}, "the turn was cancelled")[0].Text
			} else {
				text = runTool(ctx, log, tools, tc)
			}
			msg := history.Message{ID: newID(), Role: history.RoleTool, ToolCallID: tc.ID, Text: text, CreatedAt: time.Now()}
			nv, snap, err := w.append(v, []history.Message{msg})
			if err != nil {
				return func(l *loop) {
					l.resync(snap)
					l.endWith(fmt.Errorf("session: store tool result: %w", err))
				}
			}
			v = nv
			post(func(l *loop) { l.appended(nv, msg) })
		}
		return func(l *loop) { l.turn.phase = phaseCheckpoint }
	})
}

// runTool runs one tool call and returns the text of its result.
func runTool(ctx context.Context, log *zap.Logger, tools map[string]Tool, tc history.ToolCall) (text string) {
	tool, ok := tools[tc.Name]
	if !ok {
		return fmt.Sprintf("error: unknown tool %q", tc.Name)
	}
	defer func() {
		if r := recover(); r != nil {
			log.Error("tool panicked", zap.String("tool", tc.Name), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			text = fmt.Sprintf("error: tool %s failed: panic: %v", tc.Name, r)
		}
	}()
	args := tc.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	out, err := tool.Run(WithToolCallID(ctx, tc.ID), args)
	if err != nil {
		return fmt.Sprintf("error: tool %s failed: %v", tc.Name, err)
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
	res := TurnResult{Messages: t.messages, Usage: t.usage, Err: t.err}
	l.publish(&TurnEvent{TurnID: t.cmd.id, Phase: TurnFinished, Result: &res})
	t.cmd.finishTurn(res)
}
