package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// handleV2 dispatches one request or notification of a v2 connection. v2
// has no authenticate and no session/load (session/resume with replayFrom
// replays), and its request IDs must not be null.
func (s *server) handleV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if string(req.ID) == "null" {
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "ACP v2 request IDs must be strings or integers")
	}
	switch req.Method {
	case MethodSessionNew:
		return s.newSessionV2(ctx, req)
	case MethodSessionResume:
		return s.resumeSessionV2(ctx, req)
	case MethodSessionPrompt:
		return s.promptV2(ctx, req)
	case MethodSessionCancel:
		return nil, s.cancel(req, func(a *agentSession) { a.post(a.cancelHeld) })
	case MethodToolCallCancel:
		return s.cancelToolCall(ctx, req)
	}
	return s.handleShared(ctx, req)
}

func (s *server) newSessionV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p NewSessionRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.create(ctx, place{p.Cwd, p.AdditionalDirectories, mcpCount(p.McpServers)}, func(id string) any { return NewSessionResponseV2{SessionID: id} })
}

// resumeSessionV2 handles session/resume: with replayFrom {"type":"start"}
// the whole session is replayed, then its current state_update, then the
// response; without replayFrom nothing is replayed.
func (s *server) resumeSessionV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p ResumeSessionRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	replay := p.ReplayFrom != nil
	if replay && p.ReplayFrom.Type != ReplayFromStart {
		return nil, invalidParams(`field "replayFrom": replay from %q is not supported (only "start")`, p.ReplayFrom.Type)
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, mcpCount(p.McpServers)}, replay, ResumeSessionResponseV2{})
}

// promptV2 handles a v2 session/prompt. It is answered with its receipt
// {messageId} once its user message is in the session (the owner echoes
// the message, reports the session running, then answers), and its turn
// ends with the idle state_update. A /compact prompt is inserted at once,
// as a user message of its own, and ends when its compaction does.
func (s *server) promptV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	return s.admitPrompt(ctx, req, func(a *agentSession, resp *jsonrpc.Responder, text string) {
		w := &waitingPrompt{resp: resp}
		var id string
		if cid, name, cancelled, ok := slashPrompt(ctx, a, resp, text, w); ok {
			if cid == "" {
				return // refused; the error response is queued
			}
			w.end = func(ev session.Payload) (StopReason, *ErrorObject) {
				if cancelled(ev) {
					return StopCancelled, nil
				}
				return StopEndTurn, nil
			}
			w.stop = func() bool { return false }
			a.prompts[cid] = w
			msgID := name + "_" + cid
			a.enqueue(a.surf.userMessage(history.Message{ID: msgID, Role: history.RoleUser, Text: text}, false))
			a.insert(w, msgID)
			return
		}
		h, err := a.sess.Prompt(ctx, session.PromptRequest{Text: text})
		if err != nil {
			a.respond(resp, nil, sessionError(err))
			return
		}
		id, w.cancel = h.ID(), h.Cancel
		w.end = func(ev session.Payload) (StopReason, *ErrorObject) {
			return turnEnd(turnResult(h, ev))
		}
		a.prompts[id] = w
		// Until it is inserted, a $/cancel_request removes the prompt.
		w.stop = context.AfterFunc(ctx, func() {
			a.post(func() {
				if w := a.prompts[id]; w != nil && !w.inserted {
					w.cancelled = true
					w.cancel()
				}
			})
		})
	})
}
