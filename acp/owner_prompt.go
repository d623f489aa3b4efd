package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// waitingPrompt is a session/prompt (or a /compact prompt) waiting for its
// command to finish.
type waitingPrompt struct {
	resp      *jsonrpc.Responder
	compact   bool // a /compact prompt: answered when the compaction finishes
	uncompact bool // an /uncompact prompt: answered when the undo finishes
	cancelled bool // a $/cancel_request arrived: answered with RequestCancelled
	cancel    func()
	stop      func() bool // stops the context.AfterFunc watching the request
	// answer builds the response from the command's result: the one the
	// event that ended it carries (ev), or else the Handle's, which is set
	// once the command finished before a cut or the session closed.
	answer func(ev session.Payload) (any, error)
	// v2: the prompt was answered with its receipt ({messageId}); its end
	// is the idle state_update, whose stop reason end gives.
	inserted bool
	end      func(ev session.Payload) (schema.StopReason, *schema.ErrorObject)
}

// admitPromptV1 admits a v1 prompt; on the owner.
func (a *agentSession) admitPromptV1(ctx context.Context, resp *jsonrpc.Responder, in session.PromptRequest) {
	w := &waitingPrompt{resp: resp}
	if cid, _, cancelled, ok := a.slashPrompt(ctx, resp, in, w); ok {
		if cid == "" {
			return // refused; the error response is queued
		}
		w.answer = func(ev session.Payload) (any, error) {
			if cancelled(ev) {
				return schema.PromptResponse{StopReason: schema.StopCancelled}, nil
			}
			return schema.PromptResponse{StopReason: schema.StopEndTurn}, nil
		}
		a.watch(ctx, cid, w)
		return
	}
	h, ok := a.startTurn(ctx, resp, in, w)
	if !ok {
		return
	}
	w.answer = func(ev session.Payload) (any, error) {
		return turnResponse(turnResult(h, ev))
	}
	a.watch(ctx, h.ID(), w)
}

// admitPromptV2 admits a v2 prompt; on the owner.
func (a *agentSession) admitPromptV2(ctx context.Context, resp *jsonrpc.Responder, in session.PromptRequest) {
	w := &waitingPrompt{resp: resp}
	if cid, name, cancelled, ok := a.slashPrompt(ctx, resp, in, w); ok {
		if cid == "" {
			return // refused; the error response is queued
		}
		w.end = func(ev session.Payload) (schema.StopReason, *schema.ErrorObject) {
			if cancelled(ev) {
				return schema.StopCancelled, nil
			}
			return schema.StopEndTurn, nil
		}
		w.stop = func() bool { return false }
		a.prompts[cid] = w
		msgID := name + "_" + cid
		for _, u := range a.surf.userMessage(history.Message{ID: msgID, Role: history.RoleUser, Text: in.Text}, false) {
			a.enqueue(u)
		}
		a.insert(w, msgID)
		return
	}
	h, ok := a.startTurn(ctx, resp, in, w)
	if !ok {
		return
	}
	w.end = func(ev session.Payload) (schema.StopReason, *schema.ErrorObject) {
		return turnEnd(turnResult(h, ev))
	}
	a.watch(ctx, h.ID(), w)
}

// startTurn queues prompt in as a turn of the session, whose cancel is then
// w's; false when the session refused it (the error response is queued).
func (a *agentSession) startTurn(ctx context.Context, resp *jsonrpc.Responder, in session.PromptRequest, w *waitingPrompt) (*session.Handle[session.TurnResult], bool) {
	h, err := a.sess.Prompt(ctx, in)
	if err != nil {
		a.respond(resp, nil, sessionError(err))
		return nil, false
	}
	w.cancel = h.Cancel
	return h, true
}

// watch makes w the waiting prompt of command id. Until it is inserted (v2's
// receipt; a v1 prompt never is), the end of its request ctx (a
// $/cancel_request) cancels it: this prompt's command only, removed if
// queued, stopped if running.
func (a *agentSession) watch(ctx context.Context, id string, w *waitingPrompt) {
	a.prompts[id] = w
	w.stop = context.AfterFunc(ctx, func() {
		a.post(func() {
			if w := a.prompts[id]; w != nil && !w.inserted {
				w.cancelled = true
				w.cancel()
			}
		})
	})
}

// slashPrompt admits a /compact or /uncompact prompt, of either version, to
// the session. ok is false when in is no such command (a prompt with
// attachments never is). Otherwise id is the
// command's ID ("" when the session refused it: the error response is then
// queued), name the command's, w's kind and cancel are set, and cancelled
// tells from the event that ends the command whether it ended cancelled.
func (a *agentSession) slashPrompt(ctx context.Context, resp *jsonrpc.Responder, in session.PromptRequest, w *waitingPrompt) (id, name string, cancelled func(session.Payload) bool, ok bool) {
	if len(in.Attachments) > 0 {
		return "", "", nil, false
	}
	text := in.Text
	if _, ok := slashCommand(text, UncompactCommand); ok {
		h, err := a.sess.Uncompact(ctx, session.UncompactRequest{})
		if err != nil {
			a.respond(resp, nil, sessionError(err))
			return "", UncompactCommand, nil, true
		}
		w.uncompact, w.cancel = true, h.Cancel
		return h.ID(), UncompactCommand, func(session.Payload) bool { return false }, true
	}
	instr, ok := slashCommand(text, CompactCommand)
	if !ok {
		return "", "", nil, false
	}
	h, err := a.sess.Compact(ctx, session.CompactRequest{Instructions: instr})
	if err != nil {
		a.respond(resp, nil, sessionError(err))
		return "", CompactCommand, nil, true
	}
	w.compact, w.cancel = true, h.Cancel
	return h.ID(), CompactCommand, func(ev session.Payload) bool {
		res := compactResult(h, ev)
		return res != nil && res.Cancelled
	}, true
}

// slashCommand recognizes "/name [input]".
func slashCommand(text, name string) (input string, ok bool) {
	t := strings.TrimSpace(text)
	rest, found := strings.CutPrefix(t, "/"+name)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// compactResult is the result of a compaction command: the one the event
// that ended it carries (ev), or else the Handle's.
func compactResult(h *session.Handle[session.CompactResult], ev session.Payload) *session.CompactResult {
	if e, ok := ev.(*session.CompactionEvent); ok {
		return e.Result
	}
	return h.Result()
}

// turnResult is compactResult for a prompt.
func turnResult(h *session.Handle[session.TurnResult], ev session.Payload) *session.TurnResult {
	if e, ok := ev.(*session.TurnEvent); ok {
		return e.Result
	}
	return h.Result()
}

// turnResponse is the session/prompt response of a finished turn.
func turnResponse(res *session.TurnResult) (any, error) {
	switch {
	case res == nil:
		return nil, jsonrpc.NewError(jsonrpc.InternalError, "the turn has no result")
	case res.Err == nil:
		return schema.PromptResponse{StopReason: schema.StopEndTurn}, nil
	case errors.Is(res.Err, session.ErrCancelled), errors.Is(res.Err, session.ErrClosed):
		return schema.PromptResponse{StopReason: schema.StopCancelled}, nil
	case errors.Is(res.Err, session.ErrTooManySteps):
		return schema.PromptResponse{StopReason: schema.StopMaxTurnRequests}, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.InternalError, "the turn failed: %v", res.Err)
}

// respondPrompt queues the response of a waiting prompt and forgets it.
// ev is the event that ended its command, nil when there is none.
func (a *agentSession) respondPrompt(id string, w *waitingPrompt, ev session.Payload) {
	delete(a.prompts, id)
	w.stop()
	if w.inserted {
		a.settle(w.end(ev))
		return
	}
	if w.end != nil { // v2, never inserted: no receipt to give
		stop, e := w.end(ev)
		if stop == schema.StopError && !w.cancelled {
			a.respond(w.resp, nil, jsonrpc.NewError(jsonrpc.InternalError, "%s", e.Message))
			return
		}
		w.cancelled = true
	}
	if w.cancelled {
		a.respond(w.resp, nil, jsonrpc.NewError(jsonrpc.RequestCancelled, "request cancelled"))
		return
	}
	result, err := w.answer(ev)
	a.respond(w.resp, result, err)
}

// insert answers the v2 prompt w with its receipt: its user message
// messageID is in the session (and was echoed), and the session runs.
func (a *agentSession) insert(w *waitingPrompt, messageID string) {
	if !a.running {
		a.running = true
		a.enqueue(&schema.StateUpdate{State: schema.StateRunning})
	}
	a.respond(w.resp, schema.PromptResponseV2{MessageID: messageID}, nil)
	w.inserted = true
	w.stop() // the request is answered: its end no longer cancels the prompt
	w.stop = func() bool { return false }
}

// settle reports the end of an inserted v2 prompt: the session is idle,
// unless another inserted prompt still runs.
func (a *agentSession) settle(stop schema.StopReason, e *schema.ErrorObject) {
	for _, w := range a.prompts {
		if w.inserted {
			return
		}
	}
	if a.running {
		a.running = false
		a.enqueue(&schema.StateUpdate{State: schema.StateIdle, StopReason: stop, Error: e})
	}
}

// currentState queues the v2 session's state as it stands (after a
// replay): running while an inserted prompt waits, idle otherwise.
func (a *agentSession) currentState() {
	a.running = false
	for _, w := range a.prompts {
		if w.inserted {
			a.running = true
		}
	}
	if a.running {
		a.enqueue(&schema.StateUpdate{State: schema.StateRunning})
	} else {
		a.enqueue(&schema.StateUpdate{State: schema.StateIdle})
	}
}

// cancelHeld handles a v2 session/cancel: the prompts not yet inserted are
// removed and answered RequestCancelled, and the session is interrupted.
func (a *agentSession) cancelHeld() {
	for id, w := range a.prompts {
		if w.end != nil && !w.inserted {
			delete(a.prompts, id)
			w.stop()
			w.cancel()
			a.respond(w.resp, nil, jsonrpc.NewError(jsonrpc.RequestCancelled, "request cancelled: the session was cancelled"))
		}
	}
	a.sess.Interrupt()
}

// turnEnd is the v2 stop reason of a finished turn.
func turnEnd(res *session.TurnResult) (schema.StopReason, *schema.ErrorObject) {
	switch {
	case res == nil:
		return schema.StopError, &schema.ErrorObject{Code: jsonrpc.InternalError, Message: "the turn has no result"}
	case res.Err == nil:
		return schema.StopEndTurn, nil
	case errors.Is(res.Err, session.ErrCancelled), errors.Is(res.Err, session.ErrClosed):
		return schema.StopCancelled, nil
	case errors.Is(res.Err, session.ErrTooManySteps):
		return schema.StopMaxTurnRequests, nil
	}
	return schema.StopError, &schema.ErrorObject{Code: jsonrpc.InternalError, Message: fmt.Sprintf("the turn failed: %v", res.Err)}
}
