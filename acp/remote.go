package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/eventfeed"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// RemoteSession offers the session surface over ACP (docs/design.md §8): Prompt
// and Compact return Handles, Subscribe yields the event types of a local
// session built from the agent's session updates. It satisfies
// session.Agent. It is safe for concurrent use.
//
// Compact uses the _sessionkit/compact extension when the agent offers it
// (its Handle is returned once the agent has queued the command, and
// finishes with the agent's CompactResult). Against an agent that only
// advertises a /compact command it sends that command as a prompt and
// finishes the Handle from the terminal compaction_update. Against an agent
// with neither it returns ErrUnsupported and sends nothing.
//
// # One owner
//
// One goroutine owns a remote session's state: the turns in flight, the
// compactions waiting for their results, the message being streamed, the
// timeline and the subscribers. Everything else sends it functions: the
// connection's dispatcher hands it each update and each response in the
// order they arrived, and the methods hand it their calls. Requests are
// written by that goroutine, so they reach the agent in call order, and a
// response is applied after every update the agent sent before it.
type RemoteSession struct {
	c    *Client
	id   string
	ops  chan func()   // run on the owner goroutine
	quit chan struct{} // closed by stop: the owner exits
	done chan struct{} // closed when the owner has exited

	// Owned by the owner goroutine (run).
	closed   error // set once the session is closed or the connection lost
	feed     *eventfeed.Feed[session.Event, session.Payload]
	timeline Timeline
	commands []schema.AvailableCommand
	turns    []*remoteTurn             // prompts in flight, oldest first
	compacts map[string]*remoteCompact // extension compactions by the agent's ID
	fallback *remoteCompact            // a /compact prompt in flight
	entities map[string]bool           // compaction entities seen started
	tools    map[string]bool           // v2: tool calls created (their first tool_call_update)
}

var _ session.Agent = (*RemoteSession)(nil)

// remoteTurn assembles the messages of one prompt from its updates.
type remoteTurn struct {
	id       string
	messages []history.Message
	draft    *history.Message // assistant message being streamed (its Text is in text)
	named    bool             // the draft's ID is the agent's messageId
	text     strings.Builder  // the draft's text: appending to a string per chunk was O(n²)
	finish   func(session.TurnResult)
	timer    *time.Timer // ClientOptions.RequestTimeout; nil without one
	inserted bool        // v2: the agent answered with the prompt's receipt
}

// remoteCompact is a compaction waiting for its result.
type remoteCompact struct {
	id       string // the Handle's ID
	entity   string // fallback: the agent's compaction ID, once seen
	finish   func(session.CompactResult)
	result   *session.CompactResult // fallback: set by the terminal update
	timer    *time.Timer
	inserted bool // v2 fallback: the /compact prompt's receipt arrived
}

func newRemoteSession(c *Client, id string) *RemoteSession {
	r := &RemoteSession{
		c: c, id: id,
		ops:      make(chan func()),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		feed:     newFeed(),
		compacts: map[string]*remoteCompact{},
		entities: map[string]bool{},
		tools:    map[string]bool{},
		timeline: Timeline{Protocol: c.Protocol()},
	}
	go r.run()
	return r
}

// newFeed returns the timeline of a remote session: the events of a local
// session, numbered and retained as a local session's (Config.EventHistory
// at its default), with the same errors.
func newFeed() *eventfeed.Feed[session.Event, session.Payload] {
	return eventfeed.NewFeed(eventfeed.Config[session.Event, session.Payload]{
		Keep:   session.DefaultEventHistory,
		Buffer: session.DefaultBuffer,
		Event: func(seq uint64, t time.Time, p session.Payload) session.Event {
			return session.Event{Seq: seq, Time: t, Payload: p}
		},
		Slow:    func(lastSeq uint64) error { return &session.SlowSubscriberError{LastSeq: lastSeq} },
		Invalid: session.ErrInvalid,
		Trimmed: session.ErrEventsTrimmed,
	})
}

// newHandle returns a pending session.Handle whose Cancel sends
// session/cancel, and the function that finishes it.
func newHandle[R any](r *RemoteSession, id string) (*session.Handle[R], func(R)) {
	h, finish := eventfeed.NewHandle[R](id, r.cancelRemote)
	return (*session.Handle[R])(h), finish
}

func (r *RemoteSession) run() {
	defer close(r.done)
	for {
		select {
		case f := <-r.ops:
			f()
		case <-r.quit:
			return
		}
	}
}

// do runs f on the owner goroutine and waits for it; it reports false when
// the owner has exited.
func (r *RemoteSession) do(f func()) bool {
	ran := make(chan struct{})
	select {
	case r.ops <- func() { f(); close(ran) }:
		<-ran
		return true
	case <-r.done:
		return false
	}
}

// try runs f on the owner goroutine and returns its error, or the error of
// a session whose owner has exited.
func (r *RemoteSession) try(f func() error) error {
	var err error
	if !r.do(func() { err = f() }) {
		return r.gone()
	}
	return err
}

// post runs f on the owner goroutine without waiting for it to finish; it
// returns once the owner has taken f, so functions posted one after the
// other run in that order.
func (r *RemoteSession) post(f func()) {
	select {
	case r.ops <- f:
	case <-r.done:
	}
}

// ID returns the ACP session ID.
func (r *RemoteSession) ID() string { return r.id }

// Timeline returns a copy of the session's timeline as reduced from every
// update received (replay included).
func (r *RemoteSession) Timeline() Timeline {
	var t Timeline
	r.do(func() { t = r.timeline.Clone() })
	return t
}

// Commands returns the slash commands the agent advertised last.
func (r *RemoteSession) Commands() []schema.AvailableCommand {
	var out []schema.AvailableCommand
	r.do(func() { out = slices.Clone(r.commands) })
	return out
}

func newHandleID() string { return uuid.Must(uuid.NewV7()).String() }

func (r *RemoteSession) cancelRemote() {
	_ = r.c.conn.Notify(context.Background(), schema.MethodSessionCancel, schema.CancelNotification{SessionID: r.id})
}

// gone is the error of a call after the owner goroutine has exited: why
// the session closed. (The owner set it before it exited.)
func (r *RemoteSession) gone() error {
	<-r.done
	return r.closed
}

// timeout starts the RequestTimeout timer of a command, which posts f;
// nil without a timeout. The owner stops it when the command finishes.
func (r *RemoteSession) timeout(f func(err error)) *time.Timer {
	d := r.c.opts.RequestTimeout
	if d <= 0 {
		return nil
	}
	return time.AfterFunc(d, func() {
		r.post(func() { f(fmt.Errorf("acp: no answer from the agent within %v: %w", d, context.DeadlineExceeded)) })
	})
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// Prompt sends a prompt and returns its Handle once the request is written;
// the Handle finishes with the session/prompt response (v1), or, over v2,
// with the idle state_update after the prompt's receipt ({messageId}: an
// error instead of a receipt finishes it with that error). TurnResult.Messages
// are assembled from the turn's updates (the prompt, assistant text by
// messageId, tool calls and results); TurnResult.Usage is not known over
// ACP and stays zero. The prompt's attachments are sent as the content
// blocks they stand for (a link's Note is not sent). Handle.Cancel sends
// session/cancel. Errors:
// session.ErrInvalid, session.ErrClosed, or an error wrapping ErrConnection.
func (r *RemoteSession) Prompt(ctx context.Context, req session.PromptRequest) (*session.Handle[session.TurnResult], error) {
	if strings.TrimSpace(req.Text) == "" && len(req.Attachments) == 0 {
		return nil, fmt.Errorf("%w: prompt text is empty", session.ErrInvalid)
	}
	if err := history.ValidAttachments(req.Text, req.Attachments); err != nil {
		return nil, fmt.Errorf("%w: prompt: %w", session.ErrInvalid, err)
	}
	id := newHandleID()
	h, finish := newHandle[session.TurnResult](r, id)
	err := r.try(func() error {
		if r.closed != nil {
			return r.closed
		}
		user := history.Message{ID: id, Role: history.RoleUser, Text: req.Text, Attachments: req.Attachments, CreatedAt: time.Now()}
		t := &remoteTurn{id: id, finish: finish, messages: []history.Message{user}}
		params := schema.PromptRequest{SessionID: r.id, Prompt: messageBlocks(&user)}
		err := r.c.conn.Send(ctx, schema.MethodSessionPrompt, params, func(raw json.RawMessage, err error) {
			r.post(func() { r.answered(t, raw, err) })
		})
		if err != nil {
			return r.wrap(err)
		}
		r.turns = append(r.turns, t)
		t.timer = r.timeout(func(err error) { r.endTurn(t, err) })
		r.feed.Publish(&session.TurnEvent{TurnID: id, Phase: session.TurnStarted})
		r.feed.Publish(&session.MessageEvent{Message: t.messages[0], TurnID: id})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// answered applies a session/prompt response (or its failure).
func (r *RemoteSession) answered(t *remoteTurn, raw json.RawMessage, err error) {
	if err != nil {
		r.endTurn(t, r.rpcErr("session/prompt", err))
		return
	}
	inserted, stop, err := r.c.surf.promptAnswer(raw)
	switch {
	case err != nil:
		r.endTurn(t, fmt.Errorf("acp: session/prompt: %w", err))
	case inserted:
		t.inserted = true // the turn ends with the idle state
	default:
		r.endTurn(t, promptError(stop))
	}
}

// endTurn finishes turn t, if it is still in flight.
func (r *RemoteSession) endTurn(t *remoteTurn, err error) {
	i := slices.Index(r.turns, t)
	if i < 0 {
		return
	}
	r.turns = slices.Delete(r.turns, i, i+1)
	stopTimer(t.timer)
	r.flush(t)
	res := session.TurnResult{Messages: t.messages, Err: err}
	r.feed.Publish(&session.TurnEvent{TurnID: t.id, Phase: session.TurnFinished, Result: &res})
	t.finish(res)
}

// wrap turns a connection error into one wrapping ErrConnection.
func (r *RemoteSession) wrap(err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	return err
}

// rpcErr describes a failed request: an error of the agent as *RPCError, a
// lost connection wrapping ErrConnection.
func (r *RemoteSession) rpcErr(method string, err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	return fmt.Errorf("acp: %s: %w", method, asRPCError(err))
}

// promptError maps a prompt's stop reason to TurnResult.Err.
func promptError(stop schema.StopReason) error {
	switch stop {
	case schema.StopCancelled:
		return session.ErrCancelled
	case schema.StopMaxTurnRequests:
		return session.ErrTooManySteps
	case schema.StopEndTurn, "":
		return nil
	}
	return fmt.Errorf("acp: the turn stopped: %s", stop)
}

// Compact asks the agent for a manual compaction (see RemoteSession for the
// two ways). With the extension, the Handle's ID is the agent's compact ID
// and its result carries the same fields as a local session's. Over the
// /compact fallback the Handle's ID is chosen by this client (the agent
// names its compaction only once it starts; Subscribe's CompactionEvents
// carry the agent's ID), the Segment holds the summary but not the archived
// messages, and a turn that ends without any compaction entity counts as
// nothing_to_compact. Handle.Cancel sends session/cancel.
func (r *RemoteSession) Compact(ctx context.Context, req session.CompactRequest) (*session.Handle[session.CompactResult], error) {
	if r.c.extension() {
		return r.compactExtension(ctx, req)
	}
	var offered bool
	r.do(func() {
		offered = slices.ContainsFunc(r.commands, func(c schema.AvailableCommand) bool { return c.Name == CompactCommand })
	})
	if !offered {
		return nil, fmt.Errorf("%w: neither the %s method nor a /%s command", ErrUnsupported, schema.MethodCompact, CompactCommand)
	}
	return r.compactFallback(ctx, req)
}

// compactExtension sends _sessionkit/compact and returns the Handle once
// the agent has accepted it. The acceptance is applied by the owner before
// any later update, so the compaction's result (compact_finished, which the
// agent sends after it) always finds its Handle.
func (r *RemoteSession) compactExtension(ctx context.Context, req session.CompactRequest) (*session.Handle[session.CompactResult], error) {
	type accepted struct {
		h   *session.Handle[session.CompactResult]
		err error
	}
	got := make(chan accepted, 1)
	err := r.try(func() error {
		if r.closed != nil {
			return r.closed
		}
		params := schema.CompactParams{SessionID: r.id, Instructions: req.Instructions}
		err := r.c.conn.Send(ctx, schema.MethodCompact, params, func(raw json.RawMessage, err error) {
			r.post(func() {
				var acc schema.CompactAccepted
				if err == nil {
					err = json.Unmarshal(raw, &acc)
				}
				if err != nil {
					got <- accepted{err: r.rpcErr(schema.MethodCompact, err)}
					return
				}
				h, finish := newHandle[session.CompactResult](r, acc.CompactID)
				rc := &remoteCompact{id: acc.CompactID, finish: finish}
				if r.closed != nil {
					finish(failedCompact(acc.CompactID, r.closed))
				} else {
					r.compacts[acc.CompactID] = rc
					rc.timer = r.timeout(func(err error) { r.endCompact(rc, failedCompact(rc.id, err)) })
				}
				got <- accepted{h: h}
			})
		})
		return r.wrap(err)
	})
	if err != nil {
		return nil, err
	}
	select {
	case a := <-got:
		return a.h, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func failedCompact(id string, err error) session.CompactResult {
	return session.CompactResult{CompactID: id, Reason: session.ReasonCompactFailed, Error: err.Error(), Trigger: session.TriggerManual}
}

// endCompact finishes an extension compaction, if it still waits.
func (r *RemoteSession) endCompact(rc *remoteCompact, res session.CompactResult) {
	if r.compacts[rc.id] != rc {
		return
	}
	delete(r.compacts, rc.id)
	stopTimer(rc.timer)
	rc.finish(res)
}

// compactFinished applies _sessionkit/compact_finished.
func (r *RemoteSession) compactFinished(id string, res session.CompactResult) {
	if rc := r.compacts[id]; rc != nil {
		r.endCompact(rc, res)
	}
}

func (r *RemoteSession) compactFallback(ctx context.Context, req session.CompactRequest) (*session.Handle[session.CompactResult], error) {
	id := newHandleID()
	h, finish := newHandle[session.CompactResult](r, id)
	text := "/" + CompactCommand
	if s := strings.TrimSpace(req.Instructions); s != "" {
		text += " " + s
	}
	err := r.try(func() error {
		switch {
		case r.closed != nil:
			return r.closed
		case r.fallback != nil:
			return fmt.Errorf("%w: a /%s is already in flight", session.ErrQueueFull, CompactCommand)
		}
		fc := &remoteCompact{id: id, finish: finish}
		params := schema.PromptRequest{SessionID: r.id, Prompt: []schema.ContentBlock{schema.TextBlock(text)}}
		err := r.c.conn.Send(ctx, schema.MethodSessionPrompt, params, func(raw json.RawMessage, err error) {
			r.post(func() { r.fallbackAnswered(fc, raw, err) })
		})
		if err != nil {
			return r.wrap(err)
		}
		r.fallback = fc
		fc.timer = r.timeout(func(err error) { r.endFallback(fc, failedCompact(id, err)) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// fallbackAnswered finishes a /compact prompt from its response: with the
// result of its entity, or from the stop reason when there was none. Over
// v2 the response is the receipt, and the idle state_update ends it.
func (r *RemoteSession) fallbackAnswered(fc *remoteCompact, raw json.RawMessage, err error) {
	var stop schema.StopReason
	if err == nil {
		var inserted bool
		if inserted, stop, err = r.c.surf.promptAnswer(raw); err == nil && inserted {
			fc.inserted = true // the idle state_update ends it
			return
		}
	}
	r.fallbackEnded(fc, stop, err)
}

// fallbackEnded finishes a /compact prompt that ended with stop (or err).
func (r *RemoteSession) fallbackEnded(fc *remoteCompact, stop schema.StopReason, err error) {
	id := fc.id
	switch {
	case fc.result != nil:
		r.endFallback(fc, *fc.result)
	case err != nil:
		r.endFallback(fc, failedCompact(id, r.rpcErr("session/prompt", err)))
	case stop == schema.StopCancelled:
		r.endFallback(fc, session.CompactResult{CompactID: id, Reason: session.ReasonCompactFailed, Error: session.ErrCancelled.Error(), Trigger: session.TriggerManual, Cancelled: true})
	default:
		r.endFallback(fc, session.CompactResult{CompactID: id, Success: true, Reason: session.ReasonNothingToCompact, Trigger: session.TriggerManual})
	}
}

func (r *RemoteSession) endFallback(fc *remoteCompact, res session.CompactResult) {
	if r.fallback != fc {
		return
	}
	r.fallback = nil
	stopTimer(fc.timer)
	fc.finish(res)
}

// Subscribe returns a subscription to the events built from the agent's
// updates: *MessageEvent, *DeltaEvent, *UsageEvent, *TurnEvent and
// *CompactionEvent (started, delta, finished), in the order the updates
// arrived. Sequence numbers are this RemoteSession's own.
func (r *RemoteSession) Subscribe(ctx context.Context, opts session.SubscribeOptions) (*session.Subscription, error) {
	var sub *eventfeed.Subscription[session.Event]
	err := r.try(func() error {
		if r.closed != nil {
			return session.ErrClosed
		}
		var err error
		sub, err = r.feed.Subscribe(ctx, opts.After, opts.Buffer, func(s *eventfeed.Subscription[session.Event]) {
			r.post(func() { r.feed.Unsubscribe(s, nil) })
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return (*session.Subscription)(sub), nil
}

// Close ends the remote session on this side: pending Handles finish with
// session.ErrClosed, subscriptions end, and its goroutine exits. The agent
// keeps the session (see Client.CloseSession); the Client stays open.
func (r *RemoteSession) Close() error {
	r.c.forget(r)
	r.stop(session.ErrClosed)
	return nil
}

// stop fails every pending Handle with err, ends the subscriptions and ends
// the owner goroutine.
func (r *RemoteSession) stop(err error) {
	if r.do(func() { r.fail(err) }) {
		close(r.quit)
		<-r.done
	}
}

// fail finishes every pending Handle with err and ends the subscriptions.
func (r *RemoteSession) fail(err error) {
	if r.closed != nil {
		return
	}
	r.closed = err
	for len(r.turns) > 0 {
		r.endTurn(r.turns[0], err)
	}
	for _, rc := range r.compacts {
		r.endCompact(rc, failedCompact(rc.id, err))
	}
	if fc := r.fallback; fc != nil {
		r.endFallback(fc, failedCompact(fc.id, err))
	}
	r.feed.CloseAll(err)
}

// update applies one session/update from the agent (in receive order).
func (r *RemoteSession) update(u schema.SessionUpdate) {
	if r.closed != nil {
		return
	}
	r.timeline.Apply(u)
	var t *remoteTurn
	turnID := ""
	if len(r.turns) > 0 {
		t = r.turns[0]
		turnID = t.id
	}
	switch v := u.(type) {
	case *schema.AvailableCommandsUpdate:
		r.commands = slices.Clone(v.AvailableCommands)
	case *schema.AvailableCommandsUpdateV2:
		r.commands = r.commands[:0:0]
		for _, c := range v.AvailableCommands {
			ac := schema.AvailableCommand{Name: c.Name, Description: c.Description}
			if c.Input != nil {
				ac.Input = &schema.AvailableCommandInput{Hint: c.Input.Hint}
			}
			r.commands = append(r.commands, ac)
		}
	case *schema.AgentMessageChunk:
		r.agentChunk(t, turnID, v.MessageID, v.Content)
	case *schema.AgentMessageChunkV2:
		r.agentChunk(t, turnID, v.MessageID, v.Content)
	case *schema.StateUpdate:
		if v.State == schema.StateIdle {
			r.idle(v)
		}
	case *schema.ToolCall:
		name := v.Name // the tool's name; the title is for people
		if name == "" {
			name = v.Title
		}
		r.toolCall(t, v.ToolCallID, name, v.RawInput)
	case *schema.ToolCallUpdate:
		if r.c.surf.updateCreatesToolCall() && !r.tools[v.ToolCallID] {
			r.tools[v.ToolCallID] = true
			name, _ := v.Name.Get()
			if name == "" {
				name, _ = v.Title.Get()
			}
			r.toolCall(t, v.ToolCallID, name, v.RawInput)
		}
		status, _ := v.Status.Get()
		if status != "completed" && status != "failed" {
			return
		}
		var text strings.Builder
		if content, ok := v.Content.Get(); ok {
			for _, c := range content {
				if c.Content != nil {
					text.WriteString(blocksText([]schema.ContentBlock{c.Content.Content}))
				}
			}
		}
		msg := history.Message{ID: newHandleID(), Role: history.RoleTool, ToolCallID: v.ToolCallID, Text: text.String(), CreatedAt: time.Now()}
		if t != nil {
			r.flush(t)
			t.messages = append(t.messages, msg)
		}
		r.feed.Publish(&session.MessageEvent{Message: msg, TurnID: turnID})
	case *schema.UsageUpdate:
		if t != nil {
			r.flush(t)
		}
		ev := &session.UsageEvent{Purpose: "turn", ContextTokens: int(v.Used), TurnID: turnID}
		if v.Cost != nil {
			ev.SessionCost = provider.Cost{Amount: v.Cost.Amount, Currency: v.Cost.Currency}
		}
		r.feed.Publish(ev)
	case *schema.CompactionUpdate:
		// A message whose chunks name it goes on after the compaction
		// entity (one message stays one message); one whose chunks do not
		// ends here.
		if t != nil && !t.named {
			r.flush(t)
		}
		r.compactionUpdate(v, turnID)
	case *schema.CompactionSummaryChunk:
		r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Phase: session.PhaseDelta, Delta: blocksText([]schema.ContentBlock{v.Content}), TurnID: turnID, Position: session.NoPosition})
	}
}

// agentChunk applies a chunk of agent text.
func (r *RemoteSession) agentChunk(t *remoteTurn, turnID, messageID string, content schema.ContentBlock) {
	text := blocksText([]schema.ContentBlock{content})
	if t != nil {
		if t.draft != nil && messageID != "" && t.draft.ID != messageID {
			r.flush(t) // a new messageId starts a new message
		}
		if t.draft == nil {
			id := messageID
			if id == "" {
				id = newHandleID()
			}
			t.draft = &history.Message{ID: id, Role: history.RoleAssistant, CreatedAt: time.Now()}
			t.named = messageID != ""
		}
		t.text.WriteString(text)
	}
	r.feed.Publish(&session.DeltaEvent{TurnID: turnID, MessageID: messageID, Text: text})
}

// toolCall adds a tool call to the turn's assistant draft.
func (r *RemoteSession) toolCall(t *remoteTurn, id, name string, args json.RawMessage) {
	if t == nil {
		return
	}
	if t.draft == nil {
		t.draft = &history.Message{ID: newHandleID(), Role: history.RoleAssistant, CreatedAt: time.Now()}
	}
	t.draft.ToolCalls = append(t.draft.ToolCalls, history.ToolCall{ID: id, Name: name, Arguments: args})
}

// idle applies a v2 idle state_update: it ends the oldest inserted prompt
// (or /compact prompt) with its stop reason.
func (r *RemoteSession) idle(v *schema.StateUpdate) {
	for _, t := range r.turns {
		if t.inserted {
			r.endTurn(t, idleError(v))
			return
		}
	}
	if fc := r.fallback; fc != nil && fc.inserted {
		var err error
		if v.StopReason == schema.StopError {
			err = idleError(v)
		}
		r.fallbackEnded(fc, v.StopReason, err)
	}
}

// idleError maps a v2 idle state to TurnResult.Err.
func idleError(v *schema.StateUpdate) error {
	if v.StopReason == schema.StopError {
		msg := "the turn failed"
		if v.Error != nil {
			return &RPCError{Code: v.Error.Code, Message: v.Error.Message, Data: v.Error.Data}
		}
		return errors.New("acp: " + msg)
	}
	return promptError(v.StopReason)
}

// flush publishes the turn's assistant draft as a committed message.
func (r *RemoteSession) flush(t *remoteTurn) {
	if t.draft == nil {
		return
	}
	m := *t.draft
	m.Text = t.text.String()
	t.draft, t.named = nil, false
	t.text.Reset()
	t.messages = append(t.messages, m)
	r.feed.Publish(&session.MessageEvent{Message: m, TurnID: t.id})
}

func (r *RemoteSession) compactionUpdate(v *schema.CompactionUpdate, turnID string) {
	fc := r.fallback
	if fc != nil && fc.entity == "" && !r.entities[v.CompactionID] {
		fc.entity = v.CompactionID // the first new entity while /compact is in flight
	}
	e := r.timeline.Compaction(v.CompactionID)
	trigger := triggerOf(e.Meta)
	if !r.entities[v.CompactionID] {
		r.entities[v.CompactionID] = true
		r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Trigger: trigger, Phase: session.PhaseStarted, TurnID: turnID, Position: session.NoPosition})
	}
	if !v.Status.Terminal() {
		return
	}
	res := session.CompactResult{CompactID: v.CompactionID, Trigger: trigger}
	switch v.Status {
	case schema.CompactionCompleted:
		res.Success, res.Compacted, res.Reason = true, true, session.ReasonCompacted
		res.Fidelity = fidelityOf(e.Meta)
		res.Segment = &history.Segment{CompactID: v.CompactionID, Trigger: trigger, Summary: e.SummaryText(), CreatedAt: time.Now(), Fidelity: res.Fidelity,
			Files: filesOf(e.Meta)}
	case schema.CompactionCancelled:
		res.Reason, res.Cancelled, res.Error = session.ReasonCompactFailed, true, session.ErrCancelled.Error()
	default:
		res.Reason, res.Error = session.ReasonCompactFailed, "compaction failed"
		if e.Error != nil {
			res.Error = *e.Error
		}
	}
	if fc != nil && fc.entity == v.CompactionID {
		out := res
		out.CompactID = fc.id
		if out.Segment != nil {
			seg := *out.Segment
			seg.CompactID = fc.id
			out.Segment = &seg
		}
		fc.result = &out
	}
	r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Trigger: trigger, Phase: session.PhaseFinished, Result: &res, TurnID: turnID, Position: session.NoPosition})
}

// triggerOf reads the trigger a sessionkit agent puts in the entity's
// _meta; other agents do not say, and "manual" is assumed.
func triggerOf(meta map[string]any) history.Trigger {
	if m, ok := meta[schema.MetaKey].(map[string]any); ok {
		if t, ok := m["trigger"].(string); ok && history.ValidTrigger(history.Trigger(t)) {
			return history.Trigger(t)
		}
	}
	return session.TriggerManual
}
