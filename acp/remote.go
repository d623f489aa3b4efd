package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// RemoteSession offers the session surface over ACP (SEMANTICS §8): Prompt
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
type RemoteSession struct {
	c  *Client
	id string

	sendMu   sync.Mutex // orders requests on the wire in call order
	mu       sync.Mutex
	closed   error // set once the session is closed or the connection lost
	feed     *session.Feed
	timeline Timeline
	commands []AvailableCommand
	turns    []*remoteTurn                          // prompts in flight, oldest first
	compacts map[string]func(session.CompactResult) // extension compactions by ID
	early    map[string]session.CompactResult       // results that arrived before their Handle was registered
	fallback *fallbackCompact                       // a /compact prompt in flight
	entities map[string]bool                        // compaction entities seen started
	pending  map[string]func(error)                 // every unfinished Handle, to fail on connection loss
}

var _ session.Agent = (*RemoteSession)(nil)

// remoteTurn assembles the messages of one prompt from its updates.
type remoteTurn struct {
	id       string
	messages []history.Message
	draft    *history.Message // assistant message being streamed (its Text is in text)
	text     strings.Builder  // the draft's text: appending to a string per chunk was O(n²)
	resp     *jsonrpc.Pending // the session/prompt request
}

// answered reports whether the turn's response has arrived.
func (t *remoteTurn) answered() bool {
	if t.resp == nil {
		return false
	}
	select {
	case <-t.resp.Done():
		return true
	default:
		return false
	}
}

// fallbackCompact is a Compact sent as a /compact prompt.
type fallbackCompact struct {
	id     string // the Handle's ID
	entity string // the agent's compaction ID, once seen
	finish func(session.CompactResult)
	result *session.CompactResult
}

func newRemoteSession(c *Client, id string) *RemoteSession {
	return &RemoteSession{
		c: c, id: id,
		feed:     session.NewFeed(0),
		compacts: map[string]func(session.CompactResult){},
		early:    map[string]session.CompactResult{},
		entities: map[string]bool{},
		pending:  map[string]func(error){},
	}
}

// ID returns the ACP session ID.
func (r *RemoteSession) ID() string { return r.id }

// Timeline returns a copy of the session's timeline as reduced from every
// update received (replay included).
func (r *RemoteSession) Timeline() Timeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timeline.Clone()
}

// Commands returns the slash commands the agent advertised last.
func (r *RemoteSession) Commands() []AvailableCommand {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AvailableCommand(nil), r.commands...)
}

func newHandleID() string { return uuid.Must(uuid.NewV7()).String() }

func (r *RemoteSession) cancelRemote() {
	_ = r.c.conn.Notify(context.Background(), MethodSessionCancel, CancelNotification{SessionID: r.id})
}

// Prompt sends a prompt and returns its Handle once the request is written;
// the Handle finishes with the session/prompt response. TurnResult.Messages
// are assembled from the turn's updates (the prompt, assistant text, tool
// calls and results); TurnResult.Usage is not known over ACP and stays zero.
// Handle.Cancel sends session/cancel. Errors: session.ErrInvalid,
// session.ErrClosed, or an error wrapping ErrConnection.
func (r *RemoteSession) Prompt(ctx context.Context, req session.PromptRequest) (*session.Handle[session.TurnResult], error) {
	if strings.TrimSpace(req.Text) == "" {
		return nil, fmt.Errorf("%w: prompt text is empty", session.ErrInvalid)
	}
	id := newHandleID()
	h, finish := session.NewHandle[session.TurnResult](id, r.cancelRemote)
	t := &remoteTurn{id: id, messages: []history.Message{{ID: id, Role: history.RoleUser, Text: req.Text, CreatedAt: time.Now()}}}
	failed := func(err error) {
		r.mu.Lock()
		msgs := slices.Clone(t.messages)
		r.mu.Unlock()
		finish(session.TurnResult{Messages: msgs, Err: err})
	}
	p, err := r.send(ctx, id, failed, func() error {
		r.turns = append(r.turns, t)
		r.feed.Publish(&session.TurnEvent{TurnID: id, Phase: session.TurnStarted})
		r.feed.Publish(&session.MessageEvent{Message: t.messages[0], TurnID: id})
		return nil
	}, MethodSessionPrompt, PromptRequest{SessionID: r.id, Prompt: []ContentBlock{TextBlock(req.Text)}})
	if err != nil {
		r.mu.Lock()
		r.turns = removeTurn(r.turns, t) // never sent
		r.mu.Unlock()
		return nil, err
	}
	r.mu.Lock()
	t.resp = p
	r.mu.Unlock()
	go func() {
		resp, err := r.c.waitPrompt(p)
		r.mu.Lock()
		delete(r.pending, id)
		r.flush(t)
		r.turns = removeTurn(r.turns, t)
		res := session.TurnResult{Messages: t.messages, Err: promptError(resp.StopReason, err)}
		r.feed.Publish(&session.TurnEvent{TurnID: id, Phase: session.TurnFinished, Result: &res})
		r.mu.Unlock()
		finish(res)
	}()
	return h, nil
}

// send runs before under the lock (an error from it sends nothing),
// registers a pending Handle, and writes the request. Requests go out in the
// order of the calls.
func (r *RemoteSession) send(ctx context.Context, id string, fail func(error), before func() error, method string, params any) (*jsonrpc.Pending, error) {
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	r.mu.Lock()
	if r.closed != nil {
		r.mu.Unlock()
		return nil, r.closed
	}
	if err := before(); err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.pending[id] = fail
	r.mu.Unlock()
	p, err := r.c.conn.Go(ctx, method, params)
	if err != nil {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		return nil, r.wrap(err)
	}
	return p, nil
}

// wrap turns a connection error into one wrapping ErrConnection.
func (r *RemoteSession) wrap(err error) error {
	if errors.Is(err, jsonrpc.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrConnection, err)
	}
	return err
}

func removeTurn(ts []*remoteTurn, t *remoteTurn) []*remoteTurn {
	for i, x := range ts {
		if x == t {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}

// promptError maps a prompt's outcome to TurnResult.Err.
func promptError(stop StopReason, err error) error {
	switch {
	case err != nil:
		if errors.Is(err, jsonrpc.ErrClosed) {
			return fmt.Errorf("%w: %w", ErrConnection, err)
		}
		return fmt.Errorf("acp: session/prompt: %w", err)
	case stop == StopCancelled:
		return session.ErrCancelled
	case stop == StopMaxTurnRequests:
		return session.ErrTooManySteps
	case stop == StopEndTurn, stop == "":
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
	if !r.offersCompactCommand() {
		return nil, fmt.Errorf("%w: neither the %s method nor a /%s command", ErrUnsupported, MethodCompact, CompactCommand)
	}
	return r.compactFallback(ctx, req)
}

func (r *RemoteSession) offersCompactCommand() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.commands {
		if c.Name == CompactCommand {
			return true
		}
	}
	return false
}

func (r *RemoteSession) compactExtension(ctx context.Context, req session.CompactRequest) (*session.Handle[session.CompactResult], error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed != nil {
		return nil, closed
	}
	var acc CompactAccepted
	if err := r.c.conn.Call(ctx, MethodCompact, CompactParams{SessionID: r.id, Instructions: req.Instructions}, &acc); err != nil {
		return nil, r.wrap(fmt.Errorf("acp: %s: %w", MethodCompact, err))
	}
	h, finish := session.NewHandle[session.CompactResult](acc.CompactID, r.cancelRemote)
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.early[acc.CompactID]; ok {
		delete(r.early, acc.CompactID)
		finish(res)
		return h, nil
	}
	if r.closed != nil {
		finish(session.CompactResult{CompactID: acc.CompactID, Reason: session.ReasonCompactFailed, Error: r.closed.Error(), Trigger: session.TriggerManual})
		return h, nil
	}
	r.compacts[acc.CompactID] = finish
	r.pending[acc.CompactID] = func(err error) {
		finish(session.CompactResult{CompactID: acc.CompactID, Reason: session.ReasonCompactFailed, Error: err.Error(), Trigger: session.TriggerManual})
	}
	if r.c.opts.RequestTimeout > 0 {
		time.AfterFunc(r.c.opts.RequestTimeout, func() {
			r.mu.Lock()
			_, waiting := r.compacts[acc.CompactID]
			delete(r.compacts, acc.CompactID)
			delete(r.pending, acc.CompactID)
			r.mu.Unlock()
			if waiting {
				finish(session.CompactResult{CompactID: acc.CompactID, Reason: session.ReasonCompactFailed, Trigger: session.TriggerManual,
					Error: fmt.Errorf("acp: no result from the agent within %v: %w", r.c.opts.RequestTimeout, context.DeadlineExceeded).Error()})
			}
		})
	}
	return h, nil
}

// compactFinished finishes an extension compaction.
func (r *RemoteSession) compactFinished(id string, res session.CompactResult) {
	r.mu.Lock()
	finish, ok := r.compacts[id]
	delete(r.compacts, id)
	delete(r.pending, id)
	if !ok {
		r.early[id] = res
	}
	r.mu.Unlock()
	if ok {
		finish(res)
	}
}

func (r *RemoteSession) compactFallback(ctx context.Context, req session.CompactRequest) (*session.Handle[session.CompactResult], error) {
	id := newHandleID()
	h, finish := session.NewHandle[session.CompactResult](id, r.cancelRemote)
	fc := &fallbackCompact{id: id, finish: finish}
	failed := func(err error) {
		finish(session.CompactResult{CompactID: id, Reason: session.ReasonCompactFailed, Error: err.Error(), Trigger: session.TriggerManual})
	}
	text := "/" + CompactCommand
	if s := strings.TrimSpace(req.Instructions); s != "" {
		text += " " + s
	}
	p, err := r.send(ctx, id, failed, func() error {
		if r.fallback != nil {
			return fmt.Errorf("%w: a /%s is already in flight", session.ErrQueueFull, CompactCommand)
		}
		r.fallback = fc
		return nil
	}, MethodSessionPrompt, PromptRequest{SessionID: r.id, Prompt: []ContentBlock{TextBlock(text)}})
	if err != nil {
		r.mu.Lock()
		if r.fallback == fc { // never sent
			r.fallback = nil
		}
		r.mu.Unlock()
		return nil, err
	}
	go func() {
		resp, err := r.c.waitPrompt(p)
		r.mu.Lock()
		delete(r.pending, id)
		if r.fallback == fc {
			r.fallback = nil
		}
		res := fc.result
		r.mu.Unlock()
		switch {
		case res != nil:
			finish(*res)
		case err != nil:
			failed(r.wrap(err))
		case resp.StopReason == StopCancelled:
			finish(session.CompactResult{CompactID: id, Reason: session.ReasonCompactFailed, Error: session.ErrCancelled.Error(), Trigger: session.TriggerManual, Cancelled: true})
		default:
			finish(session.CompactResult{CompactID: id, Success: true, Reason: session.ReasonNothingToCompact, Trigger: session.TriggerManual})
		}
	}()
	return h, nil
}

// Subscribe returns a subscription to the events built from the agent's
// updates: *MessageEvent, *DeltaEvent, *UsageEvent, *TurnEvent and
// *CompactionEvent (started, delta, finished), in the order the updates
// arrived. Sequence numbers are this RemoteSession's own.
func (r *RemoteSession) Subscribe(ctx context.Context, opts session.SubscribeOptions) (*session.Subscription, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed != nil {
		return nil, session.ErrClosed
	}
	return r.feed.Subscribe(ctx, opts, func(s *session.Subscription) {
		r.mu.Lock()
		r.feed.Unsubscribe(s, nil)
		r.mu.Unlock()
	})
}

// Close ends the remote session on this side: pending Handles finish with
// session.ErrClosed and subscriptions end. The agent keeps the session; the
// Client stays open.
func (r *RemoteSession) Close() error {
	r.fail(session.ErrClosed)
	r.c.mu.Lock()
	delete(r.c.sessions, r.id)
	r.c.mu.Unlock()
	return nil
}

// fail finishes every pending Handle with err and ends the subscriptions.
func (r *RemoteSession) fail(err error) {
	r.mu.Lock()
	if r.closed != nil {
		r.mu.Unlock()
		return
	}
	r.closed = err
	pending := r.pending
	r.pending = map[string]func(error){}
	r.compacts = map[string]func(session.CompactResult){}
	r.feed.CloseAll(err)
	r.mu.Unlock()
	for _, f := range pending {
		f(err)
	}
}

// update applies one session/update from the agent (in receive order).
func (r *RemoteSession) update(u SessionUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline.Apply(u)
	// A turn whose response has arrived is over: the dispatcher delivered the
	// response before this update, even if the goroutine waiting for it has
	// not run yet.
	for len(r.turns) > 0 && r.turns[0].answered() {
		r.flush(r.turns[0])
		r.turns = r.turns[1:]
	}
	var t *remoteTurn
	if len(r.turns) > 0 {
		t = r.turns[0]
	}
	turnID := ""
	if t != nil {
		turnID = t.id
	}
	switch v := u.(type) {
	case *AvailableCommandsUpdate:
		r.commands = append([]AvailableCommand(nil), v.AvailableCommands...)
	case *AgentMessageChunk:
		text := blocksText([]ContentBlock{v.Content})
		if t != nil {
			if t.draft == nil {
				t.draft = &history.Message{ID: newHandleID(), Role: history.RoleAssistant, CreatedAt: time.Now()}
			}
			t.text.WriteString(text)
		}
		r.feed.Publish(&session.DeltaEvent{TurnID: turnID, Text: text})
	case *ToolCall:
		if t != nil {
			if t.draft == nil {
				t.draft = &history.Message{ID: newHandleID(), Role: history.RoleAssistant, CreatedAt: time.Now()}
			}
			t.draft.ToolCalls = append(t.draft.ToolCalls, history.ToolCall{ID: v.ToolCallID, Name: v.Title, Arguments: v.RawInput})
		}
	case *ToolCallUpdate:
		status, _ := v.Status.Get()
		if status != "completed" && status != "failed" {
			return
		}
		var text string
		if content, ok := v.Content.Get(); ok {
			for _, c := range content {
				if c.Content != nil {
					text += blocksText([]ContentBlock{c.Content.Content})
				}
			}
		}
		msg := history.Message{ID: newHandleID(), Role: history.RoleTool, ToolCallID: v.ToolCallID, Text: text, CreatedAt: time.Now()}
		if t != nil {
			r.flush(t)
			t.messages = append(t.messages, msg)
		}
		r.feed.Publish(&session.MessageEvent{Message: msg, TurnID: turnID})
	case *UsageUpdate:
		if t != nil {
			r.flush(t)
		}
		r.feed.Publish(&session.UsageEvent{Purpose: "turn", ContextTokens: int(v.Used), TurnID: turnID})
	case *CompactionUpdate:
		if t != nil {
			r.flush(t)
		}
		r.compactionUpdate(v, turnID)
	case *CompactionSummaryChunk:
		r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Phase: session.PhaseDelta, Delta: blocksText([]ContentBlock{v.Content}), TurnID: turnID})
	}
}

// flush publishes the turn's assistant draft as a committed message.
func (r *RemoteSession) flush(t *remoteTurn) {
	if t.draft == nil {
		return
	}
	m := *t.draft
	m.Text = t.text.String()
	t.draft = nil
	t.text.Reset()
	t.messages = append(t.messages, m)
	r.feed.Publish(&session.MessageEvent{Message: m, TurnID: t.id})
}

func (r *RemoteSession) compactionUpdate(v *CompactionUpdate, turnID string) {
	fc := r.fallback
	if fc != nil && fc.entity == "" && !r.entities[v.CompactionID] {
		fc.entity = v.CompactionID // the first new entity while /compact is in flight
	}
	e := r.timeline.Compaction(v.CompactionID)
	trigger := triggerOf(e.Meta)
	if !r.entities[v.CompactionID] {
		r.entities[v.CompactionID] = true
		r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Trigger: trigger, Phase: session.PhaseStarted, TurnID: turnID})
	}
	if !v.Status.Terminal() {
		return
	}
	res := session.CompactResult{CompactID: v.CompactionID, Trigger: trigger}
	switch v.Status {
	case CompactionCompleted:
		res.Success, res.Compacted, res.Reason = true, true, session.ReasonCompacted
		res.Segment = &history.Segment{CompactID: v.CompactionID, Trigger: trigger, Summary: e.SummaryText(), CreatedAt: time.Now()}
	case CompactionCancelled:
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
			out.Segment.CompactID = fc.id
		}
		fc.result = &out
	}
	r.feed.Publish(&session.CompactionEvent{CompactID: v.CompactionID, Trigger: trigger, Phase: session.PhaseFinished, Result: &res, TurnID: turnID})
}

// triggerOf reads the trigger a sessionkit agent puts in the entity's
// _meta; other agents do not say, and "manual" is assumed.
func triggerOf(meta map[string]any) string {
	if m, ok := meta[MetaKey].(map[string]any); ok {
		if t, ok := m["trigger"].(string); ok && (t == session.TriggerAuto || t == session.TriggerManual) {
			return t
		}
	}
	return session.TriggerManual
}
