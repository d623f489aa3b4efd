package acp

import (
	"context"
	"encoding/json"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// The requests that handlers and tools make of an ACP session: the methods
// of agentSession declared in this file are the only ones code outside
// owner*.go calls. Each may be called from any goroutine (start from the
// handler that opens the session): it sends the owner a function to run
// (do, post, admit) and changes no state itself. Only code in owner*.go
// changes an agentSession, and only on its owner goroutine;
// TestOwnerAloneChangesItsState checks the first half.

// opening is how an ACP session answers the request that opened or
// attached it (session/new, session/load, session/resume): optionally the
// whole timeline first, then the response, then the commands it offers,
// and to a client that starts from nothing a title no event reported.
type opening struct {
	resp   *jsonrpc.Responder
	result func(sessionID string) any
	// replay queues the whole timeline before the response (session/load,
	// a v2 session/resume with replayFrom); on v2 the session's current
	// state_update follows it.
	replay bool
	// created: a new session (session/new).
	created bool
	// client, when set, is the session's ToolClient: the notices its tools
	// gave while the session was being opened follow the response.
	client *ToolClient
}

// start starts the owner and the writer. The owner's first act is to
// subscribe to the session and queue what o says (the response that opens
// the session, after the whole timeline with o.replay); start returns when
// it has, with its error: then both goroutines have exited.
func (a *agentSession) start(o opening) error {
	started := make(chan error, 1)
	wdone := make(chan struct{})
	go a.write(wdone)
	go a.run(wdone, func() error {
		if !o.replay {
			var err error
			if a.sub, err = a.sess.Subscribe(context.Background(), session.SubscribeOptions{Buffer: subscriptionBuffer}); err != nil {
				return err
			}
		}
		return a.opened(o, true)
	}, started)
	err := <-started
	if err != nil {
		<-a.done
	}
	return err
}

// prompt hands a session/prompt, its text and its deferred Responder, to the
// owner, which admits the command to the session and answers resp, now (an
// error) or when the command has reached the point its version answers at;
// it may be called from any goroutine.
//
// On v1 the response follows every update of the command (§7.3), and a
// $/cancel_request cancels that command only and is answered
// RequestCancelled after its updates. On v2 the prompt is answered with its
// receipt {messageId} once its user message is in the session (the owner
// echoes the message, reports the session running, then answers), and its
// turn ends with the idle state_update; a /compact prompt is inserted at
// once, as a user message of its own, and ends when its compaction does.
func (a *agentSession) prompt(ctx context.Context, resp *jsonrpc.Responder, in session.PromptRequest) (any, error) {
	return a.admit(ctx, resp, func() {
		if a.surf.receipts() {
			a.admitPromptV2(ctx, resp, in)
		} else {
			a.admitPromptV1(ctx, resp, in)
		}
	})
}

// attach answers o for a session open on this connection already (maybe
// busy): the owner replays the timeline as the session stands at the cut,
// and the live updates continue exactly after it.
func (a *agentSession) attach(ctx context.Context, o opening) (any, error) {
	return a.admit(ctx, o.resp, func() {
		if err := a.opened(o, false); err != nil {
			a.respond(o.resp, nil, err)
		}
	})
}

// close handles session/close: the session is interrupted and closed (as
// session/cancel and Session.Close do it) and resp is answered after every
// update of what the close finished. The handler forgot the session
// already.
func (a *agentSession) close(ctx context.Context, resp *jsonrpc.Responder) (any, error) {
	// Not ctx itself: the handler forgot the session already, so a close
	// that a cancelled request left undone would leave it open for good
	// and this handler waiting on it.
	if !a.do(context.WithoutCancel(ctx), func() {
		a.closing = resp
		a.sess.Interrupt()
		_ = a.sess.Close() // the loop never waits for this goroutine
	}) {
		<-a.done // closed already, or closing: it was closed when this returns
		return nil, resp.Respond(schema.CloseSessionResponse{}, nil)
	}
	return nil, nil
}

// end handles the close of session/delete (delete.go): the session is
// interrupted and closed as close does it, and end returns once the owner
// and the writer have ended, so that every update of what the close
// finished is on the wire. The handler forgot the session already.
func (a *agentSession) end() {
	a.do(context.Background(), func() { // false: closed already, or closing
		a.sess.Interrupt()
		_ = a.sess.Close() // the loop never waits for this goroutine
	})
	<-a.done
}

// cancel handles session/cancel. On v1 the session is interrupted; on v2
// the owner also removes the prompts not yet inserted and answers them
// RequestCancelled (cancelHeld).
func (a *agentSession) cancel() {
	if a.surf.receipts() {
		a.post(a.cancelHeld)
		return
	}
	a.sess.Interrupt()
}

// startCommand handles an extension command (_sessionkit/compact,
// _sessionkit/uncompact): the owner starts it on the session, so that the
// answer, accepted(the command's ID), precedes every update of the command,
// and remembers that its end is to be reported with the matching
// _finished notification.
func (a *agentSession) startCommand(ctx context.Context, resp *jsonrpc.Responder, start func(*session.Session) (string, error), accepted func(id string) any) (any, error) {
	return a.admit(ctx, resp, func() {
		id, err := start(a.sess)
		if err != nil {
			a.respond(resp, nil, sessionError(err))
			return
		}
		a.extension[id] = true
		a.respond(resp, accepted(id), nil)
	})
}

// requestCancellable queues a request of a tool to the client, after
// every update queued before it (among them the tool_call update of the
// call running); then gets the client's answer, on the connection's
// dispatcher. It reports false, and queues nothing, when the owner has
// exited or ctx ended first. The tool may stop waiting for the answer:
// abandon, called once it has, queues after the request a $/cancel_request
// for it (the writer sends it if the request was written and is still
// unanswered: owner_toolcancel.go).
func (a *agentSession) requestCancellable(ctx context.Context, method string, params any, then func(result json.RawMessage, err error)) (abandon func(), ok bool) {
	it := &outItem{method: method, params: params, then: then}
	ok = a.do(ctx, func() {
		a.catchUp()
		a.queue = append(a.queue, it)
	})
	return func() { a.post(func() { a.queue = append(a.queue, &outItem{cancel: &cancelRequest{of: it}}) }) }, ok
}

// notice queues a tool's notice (ToolClient.Notice), after every update
// queued before it; false as for request.
func (a *agentSession) notice(ctx context.Context, n schema.Notice) bool {
	return a.do(ctx, func() {
		a.catchUp()
		a.sendNotice(n)
	})
}

// cancelToolCall handles tool_call/cancel (v2): the session cancels the
// call, whose end the owner then forwards like any other.
func (a *agentSession) cancelToolCall(ctx context.Context, callID string) error {
	return a.sess.CancelToolCall(ctx, callID)
}

// updateToolCall queues a tool's tool_call_update, after every update
// queued before it; false as for request.
func (a *agentSession) updateToolCall(ctx context.Context, u *schema.ToolCallUpdate) bool {
	return a.do(ctx, func() {
		a.catchUp()
		a.enqueue(a.surf.toolUpdate(u))
	})
}

// configure sets the session's config option id (ConfigMode, ConfigModel)
// to value, a value it takes, through session.Configure, and answers resp
// once the session has taken it: answer(the mode and model then), or the
// error why not.
func (a *agentSession) configure(ctx context.Context, resp *jsonrpc.Responder, id, value string, answer func(choice) any) (any, error) {
	return a.admit(ctx, resp, func() {
		a.choose(id, value, func(err error) {
			if err != nil {
				a.respond(resp, nil, err)
				return
			}
			a.respond(resp, answer(a.choice()), nil)
		})
	})
}

// mode is the session's current mode. It reads the session's published
// settings (session.Settings), which any goroutine may, and changes
// nothing.
func (a *agentSession) mode() string { return a.choice().mode }
