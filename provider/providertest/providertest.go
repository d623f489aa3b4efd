// Package providertest provides [Fake], a scripted [provider.Provider] for
// tests of code that makes model requests (sessions, compaction). A test
// queues the replies the fake gives, then inspects the requests it received.
//
//	fake := providertest.New()
//	fake.QueueTurn(providertest.Reply{Text: "hello", Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}})
//	fake.QueueSummary(providertest.Reply{Text: "- the user said hi", Deltas: []string{"- the user ", "said hi"}})
//	// ... run the code under test with fake as its provider ...
//	reqs := fake.Requests() // deep copies, in the order received
//
// # Scripting replies
//
// Replies wait in one queue in the order they were queued. A request takes the
// first reply whose Purpose is empty or equal to its own; [Fake.QueueTurn]
// and [Fake.QueueSummary] queue replies reserved for one purpose. When no
// queued reply fits, the default reply function answers (see
// [Fake.SetDefault]); the initial one fails with [ErrNoReply].
//
// A [Reply] can stream chosen deltas, fail with an error (after its deltas),
// wait for a Delay, or block on a Gate channel until the test releases it.
//
// # Waiting for calls
//
// Tests need no sleeps: [Fake.WaitCalls] blocks until the fake has received a
// number of requests, and [Fake.Next] returns each received request once, in
// order, waiting for the next one when none is pending. Both keep every
// request (the record is unbounded), never block the provider, and start no
// goroutine.
//
// # Timing and synctest
//
// Delays use time.NewTimer and gates and waits are plain channel operations,
// so a Fake works inside a testing/synctest bubble: a Delay of an hour takes no
// real time, and synctest.Wait returns while a call is blocked on its Gate.
// Create the Fake inside the bubble that uses it. Every wait honours its ctx
// and returns an error wrapping ctx.Err() when it is done.
package providertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// ErrNoReply is returned, wrapped, by the initial default reply: the fake
// received a request for which no reply was queued. The error text names
// the request's purpose.
var ErrNoReply = errors.New("providertest: no scripted reply")

// Reply is one scripted response of a [Fake].
//
// Complete uses it in this order: wait for Gate (unless GateAfter), then
// for Delay, then deliver the deltas (waiting for Gate after GateAfter of
// them), then return Err if set, else the response.
type Reply struct {
	// Text is the assistant message text. When it is empty and Deltas is
	// not nil, the text is the concatenation of Deltas.
	Text string
	// ToolCalls are the tool calls of the assistant message.
	ToolCalls []history.ToolCall
	// Usage is the usage the response reports.
	Usage provider.Usage
	// Deltas are delivered to onDelta in order, as given. When Deltas is nil,
	// a non-empty Text is delivered as one delta.
	Deltas []string
	// Err, when set, is returned as is, after Gate, Delay and Deltas.
	Err error
	// Delay makes the call wait this long before any delta.
	Delay time.Duration
	// Gate, when not nil, makes the call wait until the gate is closed (or
	// receives a value) or ctx is done.
	Gate chan struct{}
	// GateAfter, when positive, makes the call wait for Gate after that many
	// deltas instead of before the first: a reply stopped mid-stream.
	GateAfter int
	// Purpose, when set, reserves the reply for requests of that purpose.
	Purpose provider.Purpose
	// Model is the Response's Model: the model the fake says answered.
	Model string
	// Thoughts are the message's reasoning (history.Message.Thoughts):
	// their texts are reported as thought deltas (provider.ReportThought),
	// one each, before the text deltas.
	Thoughts []history.Thought
}

// Fake is a scripted provider. Build it with [New]. It is safe for
// concurrent use.
type Fake struct {
	mu       sync.Mutex
	queue    []Reply
	def      func(*provider.Request) Reply
	requests []provider.Request
	calls    map[provider.Purpose]int
	next     int           // the first request Next has not returned
	changed  chan struct{} // closed and replaced when a request arrives
	info     provider.Info
	images   []string // the image MIME types it takes
}

// SetImageTypes sets the image MIME types the fake says it takes
// (provider.ImageTaker); by default none, like a model that reads text
// only.
func (f *Fake) SetImageTypes(mimeTypes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images = slices.Clone(mimeTypes)
}

// TakesImage implements provider.ImageTaker with the types of
// SetImageTypes.
func (f *Fake) TakesImage(mimeType string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.images, mimeType)
}

// SetInfo sets what Info returns (by default name "providertest", no
// model).
func (f *Fake) SetInfo(info provider.Info) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.info = info
}

// Info implements provider.Describer.
func (f *Fake) Info() provider.Info {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.info == (provider.Info{}) {
		return provider.Info{Name: "providertest"}
	}
	return f.info
}

var _ provider.Provider = (*Fake)(nil)

// New returns a fake with no queued replies and the initial default reply.
func New() *Fake {
	return &Fake{calls: map[provider.Purpose]int{}, changed: make(chan struct{})}
}

// Queue adds replies at the end of the queue, for any purpose unless their
// Purpose is set.
func (f *Fake) Queue(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range replies {
		f.queue = append(f.queue, cloneReply(r))
	}
}

// QueueTurn adds replies that only turn requests take: their Purpose is set
// to [provider.PurposeTurn].
func (f *Fake) QueueTurn(replies ...Reply) {
	f.queueFor(provider.PurposeTurn, replies)
}

// QueueSummary adds replies that only summary requests take: their Purpose is
// set to [provider.PurposeSummary].
func (f *Fake) QueueSummary(replies ...Reply) {
	f.queueFor(provider.PurposeSummary, replies)
}

func (f *Fake) queueFor(p provider.Purpose, replies []Reply) {
	for i := range replies {
		r := replies[i]
		r.Purpose = p
		f.Queue(r)
	}
}

// SetDefault sets the function that answers a request no queued reply fits.
// It receives a copy of the request and is called without the fake's lock
// held, so it may call the fake's methods. Its reply's Purpose is ignored.
// SetDefault(nil) restores the initial default, which fails with
// [ErrNoReply].
func (f *Fake) SetDefault(fn func(*provider.Request) Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = fn
}

func noReply(req *provider.Request) Reply {
	return Reply{Err: fmt.Errorf("%w for a %q request", ErrNoReply, req.Purpose)}
}

// Pending returns how many queued replies no request has taken yet.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

// Requests returns deep copies of every request received, in order,
// including calls still running: exactly what a real provider is given.
func (f *Fake) Requests() []provider.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]provider.Request, len(f.requests))
	for i := range f.requests {
		out[i] = cloneRequest(&f.requests[i])
	}
	return out
}

// Calls returns how many requests of purpose p the fake has received.
func (f *Fake) Calls(p provider.Purpose) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[p]
}

// WaitCalls blocks until the fake has received at least n requests of any
// purpose (counting calls that are still running) or ctx is done; then it
// returns an error wrapping ctx.Err().
func (f *Fake) WaitCalls(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		got, changed := len(f.requests), f.changed
		f.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("providertest: waiting for %d calls, got %d: %w", n, got, ctx.Err())
		}
	}
}

// Next returns a deep copy of the oldest request that Next has not returned
// yet, waiting for the fake to receive one. It returns an error wrapping
// ctx.Err() when ctx is done first. Complete records the request as soon as
// it is called, before any Gate or Delay.
func (f *Fake) Next(ctx context.Context) (*provider.Request, error) {
	for {
		f.mu.Lock()
		if f.next < len(f.requests) {
			r := cloneRequest(&f.requests[f.next])
			f.next++
			f.mu.Unlock()
			return &r, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("providertest: waiting for the next call: %w", ctx.Err())
		}
	}
}

// Complete records req and answers it with the first queued reply that fits
// its purpose, or with the default reply. The reply is taken when the call
// starts, even if the call then ends cancelled.
//
// Complete returns the reply's Err as is, or an error wrapping ctx.Err() when
// ctx is done before the reply is complete (waiting for the Gate or the Delay,
// or between deltas).
func (f *Fake) Complete(ctx context.Context, req *provider.Request, onDelta func(text string)) (*provider.Response, error) {
	if req == nil {
		return nil, errors.New("providertest: nil request")
	}
	r, ok := f.take(req)
	if !ok {
		c := cloneRequest(req)
		r = cloneReply(f.defaultFunc()(&c))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("providertest: %w", err)
	}
	gate := func() error {
		select {
		case <-r.Gate:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("providertest: waiting for the gate: %w", ctx.Err())
		}
	}
	if r.Gate != nil && r.GateAfter <= 0 {
		if err := gate(); err != nil {
			return nil, err
		}
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("providertest: waiting for the delay: %w", ctx.Err())
		}
	}
	text := r.Text
	deltas := r.Deltas
	if deltas == nil && text != "" {
		deltas = []string{text}
	}
	if text == "" && r.Deltas != nil {
		text = strings.Join(r.Deltas, "")
	}
	for _, th := range r.Thoughts {
		provider.ReportThought(ctx, th.Text)
	}
	for i, d := range deltas {
		if r.Gate != nil && r.GateAfter > 0 && i == r.GateAfter {
			if err := gate(); err != nil {
				return nil, err
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("providertest: %w", err)
		}
		if onDelta != nil {
			onDelta(d)
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return &provider.Response{
		Message: history.Message{Role: history.RoleAssistant, Text: text, ToolCalls: r.ToolCalls, Thoughts: r.Thoughts},
		Usage:   r.Usage,
		Model:   r.Model,
	}, nil
}

// take records req and removes the first queued reply that fits it.
func (f *Fake) take(req *provider.Request) (Reply, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, cloneRequest(req))
	f.calls[req.Purpose]++
	close(f.changed)
	f.changed = make(chan struct{})
	for i, r := range f.queue {
		if r.Purpose == "" || r.Purpose == req.Purpose {
			f.queue = slices.Delete(f.queue, i, i+1)
			return r, true
		}
	}
	return Reply{}, false
}

func (f *Fake) defaultFunc() func(*provider.Request) Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.def == nil {
		return noReply
	}
	return f.def
}

// cloneReply copies the tool calls of r, so the caller may reuse its slices.
func cloneReply(r Reply) Reply {
	r.ToolCalls = cloneToolCalls(r.ToolCalls)
	r.Deltas = slices.Clone(r.Deltas)
	r.Thoughts = slices.Clone(r.Thoughts)
	return r
}

func cloneToolCalls(calls []history.ToolCall) []history.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]history.ToolCall, len(calls))
	for i, c := range calls {
		c.Arguments = slices.Clone(c.Arguments)
		out[i] = c
	}
	return out
}

// cloneRequest deep-copies req, changing nothing.
func cloneRequest(req *provider.Request) provider.Request {
	c := *req
	if req.Messages != nil {
		c.Messages = make([]history.Message, len(req.Messages))
		for i, m := range req.Messages {
			m.ToolCalls = cloneToolCalls(m.ToolCalls)
			if m.Attachments != nil {
				m.Attachments = slices.Clone(m.Attachments)
				for j := range m.Attachments {
					m.Attachments[j].Data = slices.Clone(m.Attachments[j].Data)
				}
			}
			c.Messages[i] = m
		}
	}
	if req.Tools != nil {
		c.Tools = make([]provider.ToolSpec, len(req.Tools))
		for i, t := range req.Tools {
			t.Parameters = slices.Clone(t.Parameters)
			c.Tools[i] = t
		}
	}
	return c
}
