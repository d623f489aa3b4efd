package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// forwardBuffer is the subscription buffer of a session's forwarder. A
// client that stops reading blocks the forwarder's writes; the session goes
// on, and once this many events wait the subscription is ended and resumed
// from the last delivered sequence number (durable events are replayed;
// text deltas in between are lost, and the message they belong to is then
// sent whole).
const forwardBuffer = 1 << 14

// keepFinished bounds the record of finished turn and compaction IDs that
// prompt handlers wait for.
const keepFinished = 256

// agentSession is one ACP session of a connection: a session.Session and the
// forwarder goroutine that turns its events into session/update
// notifications.
type agentSession struct {
	srv  *server
	sess *session.Session
	log  *zap.Logger
	done chan struct{} // closed when the forwarder has exited
	jobs chan func()   // run on the forwarder goroutine, between events

	mu        sync.Mutex
	extension map[string]bool // compactions requested with _sessionkit/compact
	prompted  map[string]bool // compactions requested with a /compact prompt
	finished  signals         // ID → its last event was forwarded
	responded signals         // ID → the response of its prompt was written
	gaps      int             // times events were lost (trimmed while the client was behind)

	// Forwarder state.
	streamed  bool            // the current assistant message's text went out as deltas
	afterText bool            // the last update sent was agent text
	lost      bool            // deltas may have been lost (resubscribed after falling behind)
	entities  map[string]bool // compactions whose start was reported
}

func newAgentSession(srv *server, sess *session.Session) *agentSession {
	return &agentSession{
		srv:       srv,
		sess:      sess,
		log:       srv.log.With(zap.String("session", sess.ID())),
		done:      make(chan struct{}),
		jobs:      make(chan func()),
		extension: map[string]bool{},
		prompted:  map[string]bool{},
		entities:  map[string]bool{},
	}
}

// start subscribes to the session's live events and starts the forwarder.
func (a *agentSession) start() {
	sub, err := a.sess.Subscribe(context.Background(), session.SubscribeOptions{Buffer: forwardBuffer})
	if err != nil {
		a.log.Error("cannot subscribe to the session", zap.Error(err))
		close(a.done)
		return
	}
	go a.run(sub)
}

func (a *agentSession) close() {
	_ = a.sess.Close()
	<-a.done
}

func (a *agentSession) run(sub *session.Subscription) {
	defer close(a.done)
	// A session that closed by itself (it lost its lease on a shared store)
	// is no longer served here: session/load opens it anew.
	defer a.srv.forget(a)
	for {
		select {
		case ev, ok := <-sub.Events():
			if ok {
				a.forward(ev)
				continue
			}
			if sub = a.resubscribe(sub); sub == nil {
				return
			}
		case job := <-a.jobs:
			job()
		}
	}
}

// resubscribe continues after the subscription ended because the client
// fell behind: from the last delivered event, or live when those events
// are no longer retained (the client then misses them; logged). It returns
// nil when the session has closed.
func (a *agentSession) resubscribe(sub *session.Subscription) *session.Subscription {
	var slow *session.SlowSubscriberError
	if !errors.As(sub.Err(), &slow) {
		return nil
	}
	a.log.Warn("client fell behind; resuming from the last delivered event", zap.Uint64("seq", slow.LastSeq))
	a.lost = true
	next, err := a.sess.Subscribe(context.Background(), session.SubscribeOptions{After: slow.LastSeq, Buffer: forwardBuffer})
	if errors.Is(err, session.ErrEventsTrimmed) {
		a.log.Error("client fell too far behind: updates were lost; resuming live", zap.Uint64("seq", slow.LastSeq))
		next, err = a.sess.Subscribe(context.Background(), session.SubscribeOptions{Buffer: forwardBuffer})
		// The lost events may have ended commands whose prompts wait for
		// them: release every waiter, and tell later ones not to wait.
		a.mu.Lock()
		a.gaps++
		for id := range a.finished.m {
			a.finished.fire(id)
		}
		a.mu.Unlock()
	}
	if err != nil {
		return nil
	}
	return next
}

// do runs f on the forwarder goroutine (whose state the notifications
// touch) and waits for it; it does nothing once the forwarder has exited.
func (a *agentSession) do(f func()) {
	done := make(chan struct{})
	select {
	case a.jobs <- func() { f(); close(done) }:
		<-done
	case <-a.done:
	}
}

// signals are one-shot events by ID (bounded: the oldest are forgotten).
// Either side may come first: the waiter gets the channel, the firer closes
// it. Guarded by agentSession.mu.
type signals struct {
	m     map[string]chan struct{}
	order []string
}

func (g *signals) get(id string) chan struct{} {
	if g.m == nil {
		g.m = map[string]chan struct{}{}
	}
	ch, ok := g.m[id]
	if !ok {
		ch = make(chan struct{})
		g.m[id] = ch
		g.order = append(g.order, id)
		if len(g.order) > keepFinished {
			delete(g.m, g.order[0])
			g.order = g.order[1:]
		}
	}
	return ch
}

func (g *signals) fire(id string) {
	ch := g.get(id)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// gapCount returns how many times events were lost so far; a prompt reads
// it before it queues its command and passes it to await.
func (a *agentSession) gapCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gaps
}

// markForwarded records that id's last event has been forwarded.
func (a *agentSession) markForwarded(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.finished.fire(id)
}

// markResponded records that the response of the prompt that ran id has
// been written.
func (a *agentSession) markResponded(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.responded.fire(id)
}

// waitResponded holds the forwarder until the prompt that ran id has been
// answered, so that updates of what runs next (the next queued prompt) never
// precede that response on the wire. Bounded by cancelWait.
func (a *agentSession) waitResponded(id string) {
	a.mu.Lock()
	ch := a.responded.get(id)
	a.mu.Unlock()
	timer := time.NewTimer(cancelWait)
	defer timer.Stop()
	select {
	case <-ch:
	case <-a.srv.conn.Done():
	case <-timer.C:
		a.log.Warn("no response written for a finished prompt", zap.String("id", id))
	}
	a.mu.Lock()
	delete(a.responded.m, id)
	a.mu.Unlock()
}

// cancelWait bounds how long a cancelled prompt waits for its command to
// end and its updates to be written before it answers.
const cancelWait = 5 * time.Second

// await waits until the command id is done (finished is closed) and every
// update it caused has been written, so that a response sent next follows
// them on the wire (§7.3). When ctx ends first ($/cancel_request for the
// prompt), cancel stops that command and await still waits, up to
// cancelWait, for the command's terminal updates before it returns ctx's
// error; when the connection is closing it returns at once.
func (a *agentSession) await(ctx context.Context, id string, gaps int, finished <-chan struct{}, cancel func()) error {
	var cancelled error
	select {
	case <-finished:
	case <-ctx.Done():
		cancelled = ctx.Err()
		cancel() // this prompt's command only: removed if queued, stopped if running
		timer := time.NewTimer(cancelWait)
		defer timer.Stop()
		select {
		case <-finished:
		case <-a.srv.conn.Done():
			return cancelled
		case <-timer.C:
			return cancelled
		}
	}
	a.mu.Lock()
	if a.gaps != gaps { // events were lost since the command was queued
		a.mu.Unlock()
		return cancelled
	}
	ch := a.finished.get(id)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.finished.m, id)
		a.mu.Unlock()
	}()
	if cancelled == nil {
		select {
		case <-ch:
		case <-a.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	timer := time.NewTimer(cancelWait)
	defer timer.Stop()
	select {
	case <-ch:
	case <-a.done:
	case <-a.srv.conn.Done():
	case <-timer.C:
	}
	return cancelled
}

// notify sends one session/update.
func (a *agentSession) notify(u SessionUpdate) {
	switch v := u.(type) {
	case *CompactionUpdate:
		if err := v.Validate(); err != nil {
			a.log.Error("not sending an invalid update", zap.Error(err))
			return
		}
	case *CompactionSummaryChunk:
		if err := v.Validate(); err != nil {
			a.log.Error("not sending an invalid update", zap.Error(err))
			return
		}
	}
	_, a.afterText = u.(*AgentMessageChunk)
	err := a.srv.conn.Notify(context.Background(), MethodSessionUpdate, SessionNotification{SessionID: a.sess.ID(), Update: u})
	if err != nil && !errors.Is(err, jsonrpc.ErrClosed) {
		a.log.Warn("cannot send a session update", zap.Error(err))
	}
}

func (a *agentSession) text(s string) {
	if s != "" {
		a.notify(&AgentMessageChunk{Content: TextBlock(s)})
	}
}

// note sends agent text about the session itself (compaction fallbacks), set
// apart from agent text it follows: a v1 client joins consecutive chunks.
func (a *agentSession) note(s string) {
	if a.afterText {
		s = "\n\n" + s
	}
	a.text(s)
}

// nothingText is the answer to a compaction with nothing to compact, live
// and on replay.
const nothingText = "Nothing to compact: a compaction needs at least two user or assistant messages in the active history.\n\n"

// advertise sends the slash commands the agent offers (§7.7).
func (a *agentSession) advertise() {
	a.notify(&AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{{
		Name:        CompactCommand,
		Description: "Compact the conversation: summarize the older half of the history to free context",
		Input:       &AvailableCommandInput{Hint: "optional instructions for the summary"},
	}}})
}

// forward turns one session event into session/update notifications.
func (a *agentSession) forward(ev session.Event) {
	switch p := ev.Payload.(type) {
	case *session.DeltaEvent:
		a.streamed = true
		a.text(p.Text)
	case *session.MessageEvent:
		a.message(p.Message, true)
	case *session.UsageEvent:
		if p.ContextTokens > 0 {
			a.notify(&UsageUpdate{Used: uint64(p.ContextTokens), Size: a.srv.contextWindow()})
		}
	case *session.ActionEvent:
		// A compaction with nothing to compact opens no entity; its action
		// text is the user's answer (§7.3).
		if p.Kind == session.ActionKindCompact && p.Status == session.ActionCompleted && !a.entities[p.CompactID] {
			a.note(nothingText)
		}
	case *session.CompactionEvent:
		a.compaction(p)
	case *session.TurnEvent:
		if p.Phase == session.TurnFinished {
			// Every turn of an ACP session was started by a session/prompt.
			a.markForwarded(p.TurnID)
			a.waitResponded(p.TurnID)
		}
	}
}

// message forwards a committed message. Live, assistant text normally went
// out as deltas already.
func (a *agentSession) message(m history.Message, live bool) {
	switch m.Role {
	case history.RoleUser:
		if !live {
			a.notify(&UserMessageChunk{Content: TextBlock(m.Text)})
		}
	case history.RoleAssistant:
		if (!live || !a.streamed || a.lost) && m.Text != "" {
			a.text(m.Text)
		}
		a.streamed, a.lost = false, false
		for _, c := range m.ToolCalls {
			a.notify(&ToolCall{
				ToolCallID: c.ID,
				Title:      c.Name,
				Kind:       "other",
				Status:     "in_progress",
				RawInput:   c.Arguments,
			})
		}
	case history.RoleTool:
		status := ToolCallStatus("completed")
		if strings.HasPrefix(m.Text, "error:") {
			status = "failed"
		}
		a.notify(&ToolCallUpdate{
			ToolCallID: m.ToolCallID,
			Status:     Value(status),
			Content:    Value([]ToolCallContent{{Content: &ToolContent{Content: TextBlock(m.Text)}}}),
		})
	}
}

// compaction forwards a compaction lifecycle event (§7.3): with the
// capability, one entity per compaction that started; without it, agent
// text.
func (a *agentSession) compaction(p *session.CompactionEvent) {
	capable := a.srv.capable()
	switch p.Phase {
	case session.PhaseStarted:
		a.entities[p.CompactID] = true
		if capable {
			a.notify(&CompactionUpdate{
				CompactionID: p.CompactID,
				Status:       CompactionInProgress,
				Meta:         Value(map[string]any{MetaKey: map[string]any{"trigger": p.Trigger}}),
			})
		} else {
			a.note("Compacting the conversation…\n\n")
		}
	case session.PhaseDelta:
		if capable && !a.srv.opts.OmitSummaries {
			a.notify(&CompactionSummaryChunk{CompactionID: p.CompactID, Content: TextBlock(p.Delta)})
		}
	case session.PhaseFinished:
		if a.entities[p.CompactID] {
			delete(a.entities, p.CompactID)
			a.terminal(p.CompactID, p.Result, capable)
			if p.Result.Compacted {
				a.usageAfterCompaction()
			}
		}
		a.mu.Lock()
		ext := a.extension[p.CompactID]
		prompted := a.prompted[p.CompactID]
		delete(a.extension, p.CompactID)
		delete(a.prompted, p.CompactID)
		a.mu.Unlock()
		if ext {
			err := a.srv.conn.Notify(context.Background(), MethodCompactFinished, CompactFinishedParams{
				SessionID: a.sess.ID(), CompactID: p.CompactID, Result: wireResult(p.Result),
			})
			if err != nil && !errors.Is(err, jsonrpc.ErrClosed) {
				a.log.Warn("cannot send compact_finished", zap.Error(err))
			}
		}
		a.markForwarded(p.CompactID)
		if prompted {
			a.waitResponded(p.CompactID)
		}
	}
}

// terminal sends the one terminal update of a compaction entity, or its
// fallback text.
func (a *agentSession) terminal(id string, res *session.CompactResult, capable bool) {
	var summary string
	if res.Segment != nil {
		summary = res.Segment.Summary
	}
	status := CompactionCompleted
	switch {
	case res.Compacted:
	case res.Cancelled:
		status = CompactionCancelled
	default:
		status = CompactionFailed
	}
	if capable {
		a.notify(a.terminalUpdate(id, status, summary, res.Error))
		return
	}
	a.note(fallbackText(status, res.Error, archived(res)))
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
func (a *agentSession) terminalUpdate(id string, status CompactionStatus, summary, errText string) *CompactionUpdate {
	u := &CompactionUpdate{CompactionID: id, Status: status}
	switch status {
	case CompactionCompleted:
		if !a.srv.opts.OmitSummaries && summary != "" {
			u.Summary = Value([]ContentBlock{TextBlock(summary)})
		}
	case CompactionFailed:
		u.Summary = Null[[]ContentBlock]()
		if errText == "" {
			errText = "compaction failed"
		}
		u.Error = Value(errText)
	default:
		u.Summary = Null[[]ContentBlock]()
	}
	return u
}

// fallbackText is what a client without the compaction capability sees.
func fallbackText(status CompactionStatus, errText string, archived int) string {
	switch status {
	case CompactionCompleted:
		if archived > 0 {
			return fmt.Sprintf("Compacted the conversation: %d earlier messages were summarized.\n\n", archived)
		}
		return "Compacted the conversation: earlier messages were summarized.\n\n"
	case CompactionCancelled:
		return "Compaction cancelled.\n\n"
	}
	return "Compaction failed: " + errText + "\n\n"
}

// usageAfterCompaction reports the context after a compaction. No provider
// has reported usage for it yet, so it is an estimate (4 characters a token)
// of the retained summary and Active; it only informs the user and never
// triggers anything.
func (a *agentSession) usageAfterCompaction() {
	ctx := context.Background()
	active, err := a.sess.Active(ctx)
	if err != nil {
		return
	}
	summary, err := a.sess.Summary(ctx)
	if err != nil {
		return
	}
	chars := len(summary)
	for _, m := range active {
		chars += len(m.Text)
		for _, c := range m.ToolCalls {
			chars += len(c.Arguments) + len(c.Name)
		}
	}
	a.notify(&UsageUpdate{Used: uint64((chars + 3) / 4), Size: a.srv.contextWindow()})
}

// replay sends the whole stored timeline of the session (§7.6): archived and
// active messages as message chunks, and each compaction at its position as
// one terminal update carrying its final state (or the fallback text).
func (a *agentSession) replay(ctx context.Context) error {
	tl, err := a.srv.store.Timeline(ctx, a.sess.ID())
	if err != nil {
		return err
	}
	capable := a.srv.capable()
	counts := map[string]int{} // messages per compaction, for the fallback text
	if !capable {
		segs, err := a.srv.store.Segments(ctx, a.sess.ID())
		if err != nil {
			return err
		}
		for _, s := range segs {
			counts[s.CompactID] = len(s.Messages)
		}
	}
	for _, e := range tl {
		if e.Message != nil {
			a.message(*e.Message, false)
			continue
		}
		c := e.Compaction
		var status CompactionStatus
		switch c.Status {
		case history.StatusCompleted:
			status = CompactionCompleted
		case history.StatusCancelled:
			status = CompactionCancelled
		case history.StatusFailed:
			status = CompactionFailed
		case history.StatusNothingToCompact:
			a.note(nothingText)
			continue
		default: // in progress: the session recovered it on open; be safe
			status = CompactionFailed
		}
		if capable {
			a.notify(a.terminalUpdate(c.CompactID, status, c.Summary, c.Error))
		} else {
			a.note(fallbackText(status, c.Error, counts[c.CompactID]))
		}
	}
	return nil
}
