package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// promptText joins the prompt's content into the text of a user message.
func promptText(blocks []ContentBlock) (string, error) {
	var parts []string
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.URI))
		case b.Resource != nil && b.Resource.Resource.Text != nil:
			r := b.Resource.Resource
			parts = append(parts, fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.URI, *r.Text))
		default:
			return "", invalidParams("field \"prompt\": item %d: content of type %q is not supported by this agent", i, b.Type())
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", invalidParams(`field "prompt": the prompt has no text`)
	}
	return text, nil
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

// prompt handles session/prompt. The command is admitted on the session's
// owner goroutine, which answers the request once the command has finished
// and every update it caused is queued before the response (§7.3); a
// $/cancel_request cancels that command only and is answered
// RequestCancelled after its updates.
func (s *server) prompt(ctx context.Context, req *jsonrpc.Request) (any, error) {
	return s.admitPrompt(ctx, req, func(a *agentSession, resp *jsonrpc.Responder, text string) {
		w := &waitingPrompt{resp: resp}
		var id string
		if cid, _, cancelled, ok := slashPrompt(ctx, a, resp, text, w); ok {
			if cid == "" {
				return // refused; the error response is queued
			}
			id = cid
			w.answer = func(ev session.Payload) (any, error) {
				if cancelled(ev) {
					return PromptResponse{StopReason: StopCancelled}, nil
				}
				return PromptResponse{StopReason: StopEndTurn}, nil
			}
		} else {
			h, err := a.sess.Prompt(ctx, session.PromptRequest{Text: text})
			if err != nil {
				a.respond(resp, nil, sessionError(err))
				return
			}
			id, w.cancel = h.ID(), h.Cancel
			w.answer = func(ev session.Payload) (any, error) {
				return turnResponse(turnResult(h, ev))
			}
		}
		a.prompts[id] = w
		w.stop = context.AfterFunc(ctx, func() {
			a.post(func() {
				if w := a.prompts[id]; w != nil {
					w.cancelled = true
					w.cancel() // this prompt's command only: removed if queued, stopped if running
				}
			})
		})
	})
}

// slashPrompt admits a /compact or /uncompact prompt, of either version, on
// a's session. ok is false when text is no such command. Otherwise id is the
// command's ID ("" when the session refused it: the error response is then
// queued), name the command's, w's kind and cancel are set, and cancelled
// tells from the event that ends the command whether it ended cancelled.
func slashPrompt(ctx context.Context, a *agentSession, resp *jsonrpc.Responder, text string, w *waitingPrompt) (id, name string, cancelled func(session.Payload) bool, ok bool) {
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

// admitPrompt decodes and checks a session/prompt (of either version) and
// runs admit on the session's owner goroutine with the request's deferred
// Responder and the prompt's text.
func (s *server) admitPrompt(ctx context.Context, req *jsonrpc.Request, admit func(a *agentSession, resp *jsonrpc.Responder, text string)) (any, error) {
	var p PromptRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return nil, err
	}
	resp := jsonrpc.Defer(ctx)
	return a.admit(ctx, resp, func() { admit(a, resp, text) })
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
		return PromptResponse{StopReason: StopEndTurn}, nil
	case errors.Is(res.Err, session.ErrCancelled), errors.Is(res.Err, session.ErrClosed):
		return PromptResponse{StopReason: StopCancelled}, nil
	case errors.Is(res.Err, session.ErrTooManySteps):
		return PromptResponse{StopReason: StopMaxTurnRequests}, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.InternalError, "the turn failed: %v", res.Err)
}
