package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/internal/plural"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// subscriptionBuffer is the buffer of an ACP session's subscription to its
// session: how many events may wait for the owner. The owner goroutine only
// turns events into queued wire items (it never waits for the client), so
// the buffer only absorbs bursts; it is a bound, not an allocation (an idle
// session's subscription holds a small channel, and grows only while
// events wait). A subscription that overflows all the same is continued
// from the store (agentSession.ended), losing nothing.
var subscriptionBuffer = 1 << 14

// agentSession is one ACP session of a connection (docs/design.md §7.9).
//
// One goroutine, run, owns all of its state: the subscription to the
// session, the prompts waiting for their responses, the compaction entities
// the client holds, and the queue of what the connection is to send for the
// session, in order. Handlers never touch that state: they send run a
// function (ops) and, for requests answered later, the request's
// jsonrpc.Responder. A second goroutine, write, is the only one that writes
// for the session: whenever it is free it takes everything queued and
// writes it in order (updates, notifications and responses alike). Wire order is
// therefore the order in which run queued the items; no timer and no signal
// decides it.
//
// When the client stops reading, write blocks and the queue grows; run goes
// on reading the session's events, so the session is never held up, and
// consecutive text chunks of one message (and summary chunks of one
// compaction) are merged in the queue, so a lagging client loses nothing
// and what it is sent stays bounded by what happened.
type agentSession struct {
	// Set when it is built (newAgentSession); read-only since.
	srv  *server
	surf surface // the connection's protocol version
	sess *session.Session
	id   string
	log  *zap.Logger
	ops  chan func() // run on the owner goroutine
	// describe says how tool calls are shown (Toolset.Describe); nil: the
	// defaults.
	describe func(call history.ToolCall, result *history.Message) ToolCallDisplay
	out      chan []*outItem // to the writer: everything queued, whenever it is free
	done     chan struct{}   // closed when both goroutines have exited
	// reader reads the session's prompts (the request handlers call it);
	// set before start, never changed.
	reader promptReader

	// Owned by run.
	sub        *session.Subscription
	queue      []*outItem                  // queued, not yet taken by the writer
	prompts    map[string]*waitingPrompt   // by command ID
	extension  map[string]bool             // compactions requested with _sessionkit/compact
	open       map[string]int64            // compaction entities in progress on the client, by ID: their position
	summarized map[string]int              // bytes of each open entity's summary queued as chunks
	loading    bool                        // replaying the whole timeline (session/load)
	lastPos    int64                       // the newest timeline position forwarded
	lastSeq    uint64                      // the newest sequence number forwarded
	draft      string                      // the assistant message being streamed
	sent       int                         // bytes of its text queued so far
	thinking   string                      // the assistant message whose reasoning is being streamed
	thought    int                         // bytes of its reasoning queued so far
	afterText  bool                        // the last queued update is agent text
	used       uint64                      // the last context figure reported
	cost       provider.Cost               // the session's cost as last reported: it only rises (usage.go)
	closing    *jsonrpc.Responder          // a session/close waiting for the session to end
	queuedText int                         // bytes of text in queue
	title      string                      // the title last reported (session_info_update)
	told       choice                      // the mode and model last reported (the opening response, then SettingsEvents)
	calls      map[string]history.ToolCall // tool calls sent whose results are not, by ID
	shown      map[string]string           // the title each of calls was shown with
	plans      bool                        // calls of session.PlanTool are the built-in plan tool's (isPlan)
	running    bool                        // v2: the last state_update sent is running
	tools      toolState                   // of the Toolset (mcp.go)
	held       []schema.Notice             // notices waiting for the compaction that caused them to end (notice.go)
}

// outItem is one message the writer sends for the session: a session/update
// (update, or text for a merged chunk), another notification, or a response.
type outItem struct {
	update schema.SessionUpdate
	// A merged text chunk: chunk builds the update from the text.
	text  strings.Builder
	chunk func(text string) schema.SessionUpdate
	key   string // what may be merged into it: "m:"+messageID or "c:"+compactionID

	method string // another notification, or a request to the client
	params any
	// A request to the client: then gets its answer, on the connection's
	// dispatcher.
	then func(result json.RawMessage, err error)
	id   json.RawMessage // the request's ID once written (the writer's own)
	// cancel abandons a request queued before (cancelRequest).
	cancel *cancelRequest

	resp   *jsonrpc.Responder // a response
	result any
	err    error
}

// newAgentSession is the ACP session of sess on srv's connection, speaking
// surf, with the session's Toolset (its Describe, nil for the defaults;
// its Close); reader is what its prompts are read with; plans says
// whether calls named session.PlanTool are the built-in plan tool's. Its
// goroutines run from start on.
func newAgentSession(srv *server, sess *session.Session, surf surface, set Toolset, reader promptReader, plans bool) *agentSession {
	return &agentSession{
		plans:      plans,
		srv:        srv,
		surf:       surf,
		describe:   set.Describe,
		tools:      toolState{close: set.Close},
		reader:     reader,
		sess:       sess,
		id:         sess.ID(),
		log:        srv.log.With(zap.String("session", sess.ID())),
		ops:        make(chan func()),
		out:        make(chan []*outItem),
		done:       make(chan struct{}),
		prompts:    map[string]*waitingPrompt{},
		extension:  map[string]bool{},
		open:       map[string]int64{},
		summarized: map[string]int{},
		calls:      map[string]history.ToolCall{},
		shown:      map[string]string{},
		lastPos:    -1,
	}
}

// opened queues, on the owner, how the session answers o: with o.replay the
// whole timeline; on v2, for a session it resumes (with a replay or
// without), the session's current state_update, which the protocol
// requires before the response; then the response, then the commands the
// session offers. fresh says the owner has told this client nothing yet
// (start): a session it resumes on v2 without a replay has its stored
// usage follow the response.
func (a *agentSession) opened(o opening, fresh bool) error {
	if o.replay {
		if err := a.resubscribe(0, true); err != nil {
			return err
		}
	}
	if a.surf.states() && !o.created {
		a.currentState()
	}
	a.told = a.choice()
	a.respond(o.resp, a.srv.withChoice(o.result(a.id), a.told), nil)
	if fresh && !o.replay && !o.created && a.surf.states() {
		a.storedUsage() // v2 only: v1's session/resume is left as it was
	}
	a.advertise()
	if o.replay || o.created {
		// A title the session had from the start (Config.Title) was never
		// a change, so no event reports it: a client that starts from
		// nothing learns it here, unless the replay reported it.
		a.titled(a.sess.Settings().Title, time.Time{})
	}
	if o.client != nil {
		a.sendEarlyNotices(o.client)
	}
	return nil
}

// admit runs f, a request's admission, on the owner goroutine, which
// answers the request through resp (now or later). When f cannot run, the
// request is answered here: cancelled when ctx ended first, otherwise with
// the error that the session is closing.
func (a *agentSession) admit(ctx context.Context, resp *jsonrpc.Responder, f func()) (any, error) {
	if a.do(ctx, f) {
		return nil, nil
	}
	err := ctx.Err()
	if err == nil {
		err = jsonrpc.NewError(jsonrpc.InternalError, "session %q is closing", a.id)
	}
	return nil, resp.Respond(nil, err)
}

// do runs f on the owner goroutine and waits for it; it reports false, and
// f does not run, when the owner has exited or ctx ends first.
func (a *agentSession) do(ctx context.Context, f func()) bool {
	ran := make(chan struct{})
	select {
	case a.ops <- func() { f(); close(ran) }:
	case <-a.done:
		return false
	case <-ctx.Done():
		return false
	}
	<-ran
	return true
}

// post runs f on the owner goroutine without waiting.
func (a *agentSession) post(f func()) {
	select {
	case a.ops <- f:
	case <-a.done:
	}
}

// catchUp forwards every event the subscription holds already, without
// waiting for more. A tool's request to the client is queued after it: the
// session published the assistant message with the tool call before it ran
// the tool, so the tool_call update is queued before the tool's requests.
func (a *agentSession) catchUp() {
	for a.sub != nil {
		select {
		case ev, ok := <-a.sub.Events():
			if !ok {
				a.ended()
				continue
			}
			a.forward(ev, false)
		default:
			return
		}
	}
}

// run is the owner goroutine. It runs begin first and sends started its
// error; an error ends it.
func (a *agentSession) run(wdone chan struct{}, begin func() error, started chan<- error) {
	defer func() {
		<-wdone
		a.endTools() // the session ended: so do its tools (MCP servers)
		close(a.done)
	}()
	defer close(a.out)
	// A session that closed by itself (it lost its lease on a shared store)
	// is no longer served here: session/load opens it anew.
	defer a.srv.forget(a)
	if err := begin(); err != nil {
		if a.sub != nil {
			a.sub.Close()
		}
		started <- err
		return
	}
	started <- nil
	for {
		var (
			out    chan []*outItem
			events <-chan session.Event
		)
		if len(a.queue) > 0 {
			out = a.out
		}
		if a.sub != nil {
			events = a.sub.Events()
		} else if out == nil {
			return // the session ended and everything was handed to the writer
		}
		select {
		case out <- a.queue:
			// The writer has them now (and only reads them): what comes
			// next starts a new queue, which is where merging happens.
			a.queue, a.queuedText = nil, 0
		case ev, ok := <-events:
			if ok {
				a.forward(ev, false)
			} else {
				a.ended()
			}
		case f := <-a.ops:
			f()
		}
	}
}

// write is the only goroutine that writes for this session.
func (a *agentSession) write(done chan struct{}) {
	defer close(done)
	ctx := context.Background()
	for batch := range a.out {
		for _, it := range batch {
			a.writeItem(ctx, it)
		}
	}
}

// writeItem writes one queued item.
func (a *agentSession) writeItem(ctx context.Context, it *outItem) {
	var err error
	switch {
	case it.resp != nil:
		err = it.resp.Respond(it.result, it.err)
	case it.then != nil:
		// Written here, in order; the answer reaches the waiting tool
		// through then, never through this goroutine.
		if it.id, err = a.srv.conn.SendID(ctx, it.method, it.params, it.then); err != nil {
			it.then(nil, err)
		}
	case it.cancel != nil:
		err = a.writeCancel(ctx, it.cancel)
	case it.method != "":
		err = a.srv.conn.Notify(ctx, it.method, it.params)
	default:
		u := it.update
		if it.chunk != nil {
			u = it.chunk(it.text.String())
		}
		err = a.srv.conn.Notify(ctx, schema.MethodSessionUpdate, schema.SessionNotification{SessionID: a.id, Update: u})
	}
	if err != nil && !errors.Is(err, jsonrpc.ErrClosed) {
		a.log.Warn("cannot write to the client", zap.Error(err))
	}
}

// ended handles the end of the subscription: the session closed, or it fell
// behind after all.
func (a *agentSession) ended() {
	err := a.sub.Err()
	a.sub = nil
	var slow *session.SlowSubscriberError
	if errors.As(err, &slow) {
		a.log.Warn("fell behind the session; continuing from the event log", zap.Uint64("after", a.lastSeq))
		if err := a.resubscribe(a.lastSeq, false); err == nil {
			return
		} else if !errors.Is(err, session.ErrClosed) {
			a.log.Error("cannot continue the session's updates", zap.Error(err))
		}
	}
	// The session is closed. Every command it had ended, and that was
	// published before the end, so no prompt is left waiting; answer any
	// that is, rather than leave it.
	for id, p := range a.prompts {
		a.respondPrompt(id, p, nil)
	}
	a.endTools()
	if a.closing != nil {
		a.respond(a.closing, schema.CloseSessionResponse{}, nil)
		a.closing = nil
	}
}

// resubscribe replaces the subscription with a Replay after sequence number
// after and queues the replayed timeline. full (session/load, after 0)
// reports the whole timeline as a client that starts from nothing needs
// it; otherwise the replay continues what this client already has (after
// falling behind, from the last event forwarded): only entries it has not
// been sent, and the end of its open entities.
func (a *agentSession) resubscribe(after uint64, full bool) error {
	if a.sub != nil {
		a.sub.Close()
		a.sub = nil
	}
	rep, err := a.sess.Replay(context.Background(), session.ReplayOptions{After: after, Buffer: subscriptionBuffer})
	if err != nil {
		return err
	}
	a.sub = rep.Sub
	// The cost so far, before the replayed events (whose costs are older):
	// what a client is told never goes down.
	rose := false
	if rep, err := a.sess.Usage(context.Background()); err == nil {
		rose = a.raiseCost(rep.Total.Cost)
	} else {
		a.log.Warn("cannot read the session's usage", zap.Error(err))
	}
	if full {
		a.open, a.summarized = map[string]int64{}, map[string]int{}
		// The replay sends every call again (a call is committed before
		// its tool runs), so none of before is kept waiting for a result.
		a.calls, a.shown = map[string]history.ToolCall{}, map[string]string{}
		a.lastPos, a.lastSeq, a.draft, a.sent, a.afterText, a.title = -1, 0, "", 0, false, ""
		a.thinking, a.thought = "", 0
		a.told = a.srv.defaultChoice() // what the replayed changes start from
	}
	a.loading = full
	for _, ev := range rep.Events {
		a.forward(ev, true)
	}
	a.loading = false
	// The timeline holds no usage: a client that loads the session is told
	// its cost so far and its context (in a new process, the last turn
	// response's, or the estimate of a compaction after it), and one that
	// fell behind the cost and the context size it missed.
	resized := rep.ContextTokens > 0 && uint64(rep.ContextTokens) != a.used
	if resized {
		a.used = uint64(rep.ContextTokens)
	}
	if (full && a.cost.Known()) || rose || resized {
		a.enqueue(a.usageUpdate(estimatedIf(rep.ContextEstimated)))
	}
	// Prompts whose command finished before the cut: their end is in
	// neither the replay nor the new subscription.
	for id, p := range a.prompts {
		if !slices.Contains(rep.Pending, id) {
			a.respondPrompt(id, p, nil)
		}
	}
	return nil
}

// enqueue queues one update.
func (a *agentSession) enqueue(u schema.SessionUpdate) {
	switch v := u.(type) {
	case *schema.CompactionUpdate:
		if err := v.Validate(); err != nil {
			a.log.Error("not sending an invalid update", zap.Error(err))
			return
		}
	case *schema.CompactionSummaryChunk:
		if err := v.Validate(); err != nil {
			a.log.Error("not sending an invalid update", zap.Error(err))
			return
		}
	}
	_, a.afterText = u.(*schema.AgentMessageChunk)
	a.queue = append(a.queue, &outItem{update: u})
}

// Bounds of what waits for a client that does not read (§7.9). While less
// than mergeAfter bytes of text and fewer than mergeItems items wait, every
// delta is its own chunk (a client that keeps up, even through a burst,
// gets one chunk per delta); beyond either, a delta is merged into the last
// queued chunk of the same message or compaction; beyond dropAfter bytes
// deltas are not queued at all: the committed message then sends the text
// the client has not had, and a completed compaction carries its whole
// summary anyway.
const (
	mergeAfter = 1 << 20
	mergeItems = 1 << 14
	dropAfter  = 4 << 20
)

// enqueueText queues a text chunk and reports whether it did. A delta
// (droppable) is merged or left out as the bounds above say; other text
// always goes out.
func (a *agentSession) enqueueText(key, text string, droppable bool, chunk func(string) schema.SessionUpdate) bool {
	if text == "" {
		return true
	}
	if droppable && a.queuedText >= dropAfter {
		return false
	}
	a.queuedText += len(text)
	if n := len(a.queue); n > 0 && (a.queuedText > mergeAfter || n > mergeItems) && a.queue[n-1].chunk != nil && a.queue[n-1].key == key {
		a.queue[n-1].text.WriteString(text)
		return true
	}
	it := &outItem{chunk: chunk, key: key}
	it.text.WriteString(text)
	a.queue = append(a.queue, it)
	a.afterText = strings.HasPrefix(key, "m:")
	return true
}

// notify queues a notification other than session/update.
func (a *agentSession) notify(method string, params any) {
	a.queue = append(a.queue, &outItem{method: method, params: params})
}

// respond queues a response.
func (a *agentSession) respond(r *jsonrpc.Responder, result any, err error) {
	a.queue = append(a.queue, &outItem{resp: r, result: result, err: err})
}

// note queues agent text about the session itself (compaction fallbacks)
// about compaction compactID, set apart from agent text it follows: a v1
// client joins consecutive chunks (v2 sends it as a message of its own).
func (a *agentSession) note(compactID, s string) {
	id := a.surf.noteID(compactID)
	if a.afterText && id == "" {
		s = "\n\n" + s
	}
	a.enqueueText("m:"+id, s, false, a.surf.agentChunk(id))
}

// nothingText is the answer to a compaction with nothing to compact, live
// and on replay.
const nothingText = "Nothing to compact: a compaction needs at least two user or assistant messages in the active history.\n\n"

// advertise queues the slash commands the agent offers (§7.7).
func (a *agentSession) advertise() {
	a.enqueue(a.surf.commands())
}

// uncompacted reports an undo of a compaction (§4.11) as agent text at its
// position, live and on replay, and answers what waits for it.
func (a *agentSession) uncompacted(p *session.UncompactEvent, replayed bool) {
	if replayed && p.Position <= a.lastPos {
		return
	}
	if p.Position != session.NoPosition {
		a.lastPos = max(a.lastPos, p.Position)
	}
	a.note(p.ID, uncompactText(p))
	if replayed {
		return
	}
	if a.extension[p.ID] {
		delete(a.extension, p.ID)
		a.notify(schema.MethodUncompactFinished, schema.UncompactFinishedParams{SessionID: a.id, UncompactID: p.ID, SegmentID: p.SegmentID, Restored: p.Restored, Error: p.Error})
	}
	if w := a.prompts[p.ID]; w != nil && w.uncompact {
		a.respondPrompt(p.ID, w, p)
	}
}

// uncompactText is what the user reads about an undo.
func uncompactText(p *session.UncompactEvent) string {
	if p.NothingToUndo {
		return session.NothingToUndoText + "\n\n"
	}
	if p.Error != "" {
		return "Nothing was undone: " + p.Error + "\n\n"
	}
	return "Undid the last compaction: restored " + plural.Count(p.Restored, "message") + " to the active history.\n\n"
}

// forward turns one session event into queued updates. replayed events come
// from Session.Replay: the store's timeline and the state at the cut.
func (a *agentSession) forward(ev session.Event, replayed bool) {
	a.lastSeq = max(a.lastSeq, ev.Seq)
	defer a.notices(ev.Payload, replayed) // after the updates of the event itself
	switch p := ev.Payload.(type) {
	case *session.DeltaEvent:
		if p.MessageID != a.draft {
			a.draft, a.sent = p.MessageID, 0
		}
		text := p.Text
		if replayed { // the message's text so far: send what this client lacks
			text = unsent(text, a.sent)
		}
		if a.enqueueText("m:"+p.MessageID, text, true, a.surf.agentChunk(p.MessageID)) {
			a.sent += len(text)
		}
	case *session.ThoughtDeltaEvent:
		if p.MessageID != a.thinking {
			a.thinking, a.thought = p.MessageID, 0
		}
		text := p.Text
		if replayed { // the reasoning so far: send what this client lacks
			text = unsent(text, a.thought)
		}
		if a.enqueueText("t:"+p.MessageID, text, true, a.surf.thoughtChunk(p.MessageID)) {
			a.thought += len(text)
		}
	case *session.MessageEvent:
		if replayed && p.Position <= a.lastPos {
			return
		}
		a.lastPos = max(a.lastPos, p.Position)
		a.message(p.Message, p.TurnID, replayed)
	case *session.UsageEvent:
		rose := a.raiseCost(p.SessionCost)
		switch {
		case p.ContextTokens > 0:
			a.used = uint64(p.ContextTokens)
			a.enqueue(a.usageUpdate(nil))
		case rose && p.Purpose != provider.PurposeSummary:
			// A summary call's cost goes out with the compaction's end
			// (usageAfter).
			a.enqueue(a.usageUpdate(nil))
		}
	case *session.CompactionEvent:
		a.compaction(p, replayed)
	case *session.UncompactEvent:
		a.uncompacted(p, replayed)
	case *session.SettingsEvent:
		if replayed && p.Position != session.NoPosition && p.Position <= a.lastPos {
			return // replayed after falling behind: the client has it
		}
		if p.Position != session.NoPosition {
			a.lastPos = max(a.lastPos, p.Position)
		}
		a.titled(p.Settings.Title, ev.Time)
		if slices.Contains(p.Changed, "Mode") || slices.Contains(p.Changed, "Model") {
			c := a.choiceOf(p.Settings)
			a.chosen(a.told, c)
			a.told = c
		}
	case *session.TurnEvent:
		if p.Phase == session.TurnFinished {
			if w := a.prompts[p.TurnID]; w != nil && !w.compact && !w.uncompact {
				a.respondPrompt(p.TurnID, w, p)
			}
		}
	}
}

// unsent returns the part of text after the first sent bytes.
func unsent(text string, sent int) string {
	if sent >= len(text) {
		return ""
	}
	return text[sent:]
}

// message forwards a committed message of turn turnID ("" outside a turn
// and on replay). Live, user messages are the client's own prompts (v2
// echoes them, and answers the prompt with its receipt) and assistant text
// went out as deltas already.
func (a *agentSession) message(m history.Message, turnID string, replayed bool) {
	switch m.Role {
	case history.RoleUser:
		for _, u := range a.surf.userMessage(m, replayed) {
			a.enqueue(u)
		}
		if w := a.prompts[turnID]; w != nil && !replayed && a.surf.receipts() && !w.inserted {
			a.insert(w, m.ID)
		}
	case history.RoleAssistant:
		sent := 0
		if m.ID == a.draft {
			sent = a.sent
		}
		a.draft, a.sent = "", 0
		// The reasoning first (what was not streamed: all of it on replay).
		thought := 0
		if m.ID == a.thinking {
			thought = a.thought
		}
		a.thinking, a.thought = "", 0
		a.enqueueText("t:"+m.ID, unsent(thoughtText(m.Thoughts), thought), false, a.surf.thoughtChunk(m.ID))
		a.enqueueText("m:"+m.ID, unsent(m.Text, sent), false, a.surf.agentChunk(m.ID))
		for _, c := range m.ToolCalls {
			a.calls[c.ID] = c
			if a.isPlan(c) {
				continue // shown as the plan it sets, once it has (planned)
			}
			d := a.display(c, nil)
			a.shown[c.ID], _ = shownAs(c, d)
			a.enqueue(a.surf.toolCall(c, d))
		}
	case history.RoleTool:
		c, ok := a.calls[m.ToolCallID]
		delete(a.calls, m.ToolCallID)
		if !ok {
			c = history.ToolCall{ID: m.ToolCallID} // its call was not seen (a replay from the middle)
		}
		if a.isPlan(c) {
			a.planned(c, m)
			return
		}
		d := a.display(c, &m)
		if d.Title == "" {
			// The title the call was shown with: a call replayed without
			// its tool (an MCP server the load did not send again) keeps
			// its name as title to the end.
			d.Title = a.shown[c.ID]
		}
		delete(a.shown, c.ID)
		a.enqueue(a.surf.toolUpdate(toolResult(c, m, d)))
	}
}

// thoughtText is the readable reasoning of thoughts, as it streamed (the
// texts one after the other; a redacted thought has none).
func thoughtText(thoughts []history.Thought) string {
	var b strings.Builder
	for _, t := range thoughts {
		b.WriteString(t.Text)
	}
	return b.String()
}

// isPlan reports whether c is a call of the session's built-in plan tool
// (session.Config.Plan), shown as plan updates rather than as a tool call.
func (a *agentSession) isPlan(c history.ToolCall) bool {
	return a.plans && c.Name == session.PlanTool
}

// planned reports the plan that plan tool call c set, m being its result:
// nothing for a call that failed (the model reads why; the plan is as it
// was).
func (a *agentSession) planned(c history.ToolCall, m history.Message) {
	if history.ToolFailed(m.Text) {
		return
	}
	entries, err := session.ParsePlan(c.Arguments)
	if err != nil {
		return
	}
	wire := make([]schema.PlanEntry, len(entries))
	for i, e := range entries {
		wire[i] = schema.PlanEntry{Content: e.Content, Priority: schema.PlanEntryPriority(e.Priority), Status: schema.PlanEntryStatus(e.Status)}
	}
	a.enqueue(a.surf.plan(wire))
}

// titled reports the session's title t (session_info_update) unless it is
// the one reported last: from the SettingsEvent of each change, live and on
// replay (the title an untitled session takes from its first message comes
// right after that message), so a replay shows each title as it was. at is
// when it changed; zero leaves updatedAt out.
func (a *agentSession) titled(t string, at time.Time) {
	if t == "" || t == a.title {
		return
	}
	a.title = t
	u := &schema.SessionInfoUpdate{Title: schema.Value(t)}
	if !at.IsZero() {
		u.UpdatedAt = schema.Value(at.UTC().Format(time.RFC3339Nano))
	}
	a.enqueue(u)
}

// display is how tool call c (with its result, when given) is shown: as
// Toolset.Describe says, and a call of the session's built-in recall tool
// that it does not describe as recallDisplay says.
func (a *agentSession) display(c history.ToolCall, result *history.Message) ToolCallDisplay {
	var d ToolCallDisplay
	if a.describe != nil && c.Name != "" {
		d = a.describe(c, result)
	}
	if c.Name == session.RecallTool && d.Title == "" && d.Kind == "" {
		return recallDisplay(c)
	}
	return d
}

// toolResult is the final tool_call_update of call c with result m, as d
// shows it.
func toolResult(c history.ToolCall, m history.Message, d ToolCallDisplay) *schema.ToolCallUpdate {
	status := d.Status
	if strings.HasPrefix(m.Text, session.ToolCallCancelledText) {
		status = schema.ToolCallCancelled // v1 sends it as failed
	} else if status == "" {
		status = schema.ToolCallCompleted
		if history.ToolFailed(m.Text) {
			status = schema.ToolCallFailed
		}
	}
	u := &schema.ToolCallUpdate{
		ToolCallID: c.ID,
		Status:     schema.Value(status),
		Content:    schema.Value(append(slices.Clip(d.Content), schema.ToolCallContent{Content: &schema.ToolContent{Content: schema.TextBlock(m.Text)}})),
	}
	if d.Title != "" {
		u.Title = schema.Value(d.Title)
	}
	if len(d.Locations) > 0 {
		u.Locations = schema.Value(d.Locations)
	}
	return u
}

// compaction forwards a compaction lifecycle event (§7.3, §7.6): with the
// capability, one entity per compaction that started; without it, agent
// text.
func (a *agentSession) compaction(p *session.CompactionEvent, replayed bool) {
	capable := a.surf.capable()
	switch p.Phase {
	case session.PhaseStarted:
		if _, open := a.open[p.CompactID]; open {
			return // replayed after falling behind: the client has it
		}
		a.open[p.CompactID] = p.Position
		a.lastPos = max(a.lastPos, p.Position)
		if capable {
			a.enqueue(&schema.CompactionUpdate{
				CompactionID: p.CompactID,
				Status:       schema.CompactionInProgress,
				Meta:         schema.Value(map[string]any{schema.MetaKey: map[string]any{"trigger": string(p.Trigger)}}),
			})
		} else {
			a.note(p.CompactID, "Compacting the conversation…\n\n")
		}
	case session.PhaseDelta:
		if !capable || a.srv.opts.OmitSummaries {
			return
		}
		chunk := func(t string) schema.SessionUpdate {
			return &schema.CompactionSummaryChunk{CompactionID: p.CompactID, Content: schema.TextBlock(t)}
		}
		if a.loading {
			// The summary so far, as one replacement: a client that loads
			// the session may hold part of it already.
			a.enqueue(&schema.CompactionUpdate{CompactionID: p.CompactID, Status: schema.CompactionInProgress, Summary: schema.Value([]schema.ContentBlock{schema.TextBlock(p.Delta)})})
			return
		}
		// Live, or replayed to this client after it fell behind: the
		// replay holds the summary so far, of which the client lacks what
		// was not queued for it. Once a delta was left out (a client far
		// behind), none follows: the terminal update carries the whole
		// summary.
		sent, text := a.summarized[p.CompactID], p.Delta
		if sent < 0 {
			return
		}
		if replayed {
			text = unsent(text, sent)
		}
		if a.enqueueText("c:"+p.CompactID, text, !replayed, chunk) {
			a.summarized[p.CompactID] = sent + len(text)
		} else {
			a.summarized[p.CompactID] = -1
		}
	case session.PhaseFinished:
		delete(a.summarized, p.CompactID)
		a.finished(p, replayed, capable)
	}
}

// finished reports the end of a compaction: the one terminal update of its
// entity (live, or materialized on replay), text when there was nothing to
// compact, the usage after it, and whatever waits for it.
func (a *agentSession) finished(p *session.CompactionEvent, replayed, capable bool) {
	res := p.Result
	_, open := a.open[p.CompactID]
	var report bool
	switch {
	case open:
		report = true
	case replayed:
		// A compaction of the stored timeline: reported unless this client
		// was sent it already.
		report = p.Position > a.lastPos
	default:
		// Live, only an entity that was opened has an end to report, and
		// nothing_to_compact (which opens none) its text.
		report = res.Reason == session.ReasonNothingToCompact
	}
	if p.Position != session.NoPosition {
		a.lastPos = max(a.lastPos, p.Position)
	}
	switch {
	case !report:
	case res.Reason == session.ReasonNothingToCompact:
		a.note(p.CompactID, nothingText)
	default:
		delete(a.open, p.CompactID)
		a.terminal(p.CompactID, res, capable)
		a.sendHeld()
		if !a.loading { // live, or replayed to a client that fell behind
			a.usageAfter(res)
		}
	}
	if replayed {
		return
	}
	if a.extension[p.CompactID] {
		delete(a.extension, p.CompactID)
		a.notify(schema.MethodCompactFinished, schema.CompactFinishedParams{SessionID: a.id, CompactID: p.CompactID, Result: wireResult(res)})
	}
	if w := a.prompts[p.CompactID]; w != nil && w.compact {
		a.respondPrompt(p.CompactID, w, p)
	}
}

// terminal queues the one terminal update of a compaction entity, or its
// fallback text.
func (a *agentSession) terminal(id string, res *session.CompactResult, capable bool) {
	var summary string
	if res.Segment != nil {
		summary = res.Segment.Summary
	}
	status := schema.CompactionCompleted
	switch {
	case res.Compacted:
	case res.Cancelled:
		status = schema.CompactionCancelled
	default:
		status = schema.CompactionFailed
	}
	if capable {
		u := a.terminalUpdate(id, status, summary, res.Error)
		grewMeta(u, res)
		if status == schema.CompactionCompleted && res.Fidelity.Facts > 0 {
			u.Meta = withMeta(u.Meta, "fidelity", fidelityMeta(res.Fidelity))
		}
		if status == schema.CompactionCompleted && res.Segment != nil && len(res.Segment.Files) > 0 {
			u.Meta = withMeta(u.Meta, "files", filesMeta(res.Segment.Files))
		}
		if _, ok := u.Meta.Get(); ok {
			// A v1 client replaces the entity's _meta with this one: the
			// trigger stays in it.
			u.Meta = withMeta(u.Meta, "trigger", string(res.Trigger))
		}
		a.enqueue(u)
		return
	}
	text := fallbackText(status, res.Error, archived(res))
	if res.ContextGrew {
		text = strings.TrimSuffix(text, ".\n\n") + "; " + res.Note + ".\n\n"
	}
	a.note(id, text)
}

// grewMeta puts a compaction's ContextGrew and Note under _meta.sessionkit
// of its completed update (contextGrew: true, note, contextBefore,
// contextAfter), beside what is there already.
func grewMeta(u *schema.CompactionUpdate, res *session.CompactResult) {
	if !res.ContextGrew || u.Status != schema.CompactionCompleted {
		return
	}
	meta, _ := u.Meta.Get()
	if meta == nil {
		meta = map[string]any{}
	}
	sk, _ := meta[schema.MetaKey].(map[string]any)
	if sk == nil {
		sk = map[string]any{}
	}
	sk["contextGrew"], sk["note"] = true, res.Note
	sk["contextBefore"], sk["contextAfter"] = res.ContextBefore, res.ContextAfter
	meta[schema.MetaKey] = sk
	u.Meta = schema.Value(meta)
}

func archived(res *session.CompactResult) int {
	if res.Segment == nil {
		return 0
	}
	return len(res.Segment.Messages)
}

// terminalUpdate builds the terminal compaction_update: completed carries the
// final summary as an authoritative replacement (unless summaries are
// omitted); failed carries the error and summary null; cancelled carries
// summary null (nothing was retained).
func (a *agentSession) terminalUpdate(id string, status schema.CompactionStatus, summary, errText string) *schema.CompactionUpdate {
	u := &schema.CompactionUpdate{CompactionID: id, Status: status}
	switch status {
	case schema.CompactionCompleted:
		if !a.srv.opts.OmitSummaries && summary != "" {
			u.Summary = schema.Value([]schema.ContentBlock{schema.TextBlock(summary)})
		}
	case schema.CompactionFailed:
		u.Summary = schema.Null[[]schema.ContentBlock]()
		if errText == "" {
			errText = "compaction failed"
		}
		u.Error = schema.Value(errText)
	default:
		u.Summary = schema.Null[[]schema.ContentBlock]()
	}
	return u
}

// fallbackText is what a client without the compaction capability sees.
func fallbackText(status schema.CompactionStatus, errText string, archived int) string {
	switch status {
	case schema.CompactionCompleted:
		if archived > 0 {
			return fmt.Sprintf("Compacted the conversation: %d earlier messages were summarized.\n\n", archived)
		}
		return "Compacted the conversation: earlier messages were summarized.\n\n"
	case schema.CompactionCancelled:
		return "Compaction cancelled.\n\n"
	}
	return "Compaction failed: " + errText + "\n\n"
}

// usageAfter queues the usage after a compaction (§7.7). A failed or
// cancelled one left the context as it was: the last figure again. After a
// completed one no provider has reported usage yet, so the figure is the
// session's own estimate, which the finished event carries
// (CompactResult.ContextAfter: the system prompt, the new summary and the
// Active messages left), and _meta says it is one; it only informs the user
// and never triggers anything.
func (a *agentSession) usageAfter(res *session.CompactResult) {
	if !res.Compacted {
		if a.used > 0 || a.cost.Known() {
			a.enqueue(a.usageUpdate(nil))
		}
		return
	}
	a.used = uint64(max(res.ContextAfter, 0))
	a.enqueue(a.usageUpdate(estimated()))
}

// estimated is the _meta of a usage_update whose context is the session's
// estimate, not a provider's figure.
func estimated() map[string]any {
	return map[string]any{schema.MetaKey: map[string]any{"estimate": true}}
}

// estimatedIf is estimated() when est, otherwise no _meta.
func estimatedIf(est bool) map[string]any {
	if est {
		return estimated()
	}
	return nil
}
