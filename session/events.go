package session

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Event is one item of a session's timeline (docs/design.md §6).
type Event struct {
	Seq     uint64 // per session, strictly increasing
	Time    time.Time
	Payload Payload
}

// Payload is one of the event types of this package: *MessageEvent,
// *DeltaEvent, *ActionEvent, *CompactionEvent, *UsageEvent, *TurnEvent,
// *AutoCompactEvent, *UncompactEvent. The set is sealed.
type Payload interface {
	// Durable reports whether the event can be replayed with
	// SubscribeOptions.After; deltas are live only.
	Durable() bool
	payload()
}

// MessageEvent reports a message committed to history.
type MessageEvent struct {
	Message history.Message
	TurnID  string // the Prompt handle's ID, "" outside a turn (and in a Replay)
	// Position is the message's timeline position in the store (see
	// history.Entry): positions start at 0 and are shared by messages and
	// compaction records.
	Position int64
}

// DeltaEvent is a text delta of the assistant message being generated.
type DeltaEvent struct {
	TurnID string
	// MessageID is the ID the assistant message will have in history once
	// the step ends: every delta of one message carries the same ID.
	MessageID string
	Text      string
}

// Action statuses (docs/design.md §6.2).
const (
	ActionRunning   = "running"
	ActionCompleted = "completed"
	ActionFailed    = "failed"
)

// ActionEvent is a timeline action message. Compaction publishes them as
// §4 says: running while the commit is under way, then completed or failed;
// a completed action with explanatory text when there was nothing to compact.
type ActionEvent struct {
	ID        string // unique per action
	Kind      string // ActionKindCompact or ActionKindUncompact
	Status    string // ActionRunning, ActionCompleted or ActionFailed
	Text      string
	CompactID string
}

// Compaction lifecycle phases.
const (
	PhaseQueued     = "queued"     // the command entered the queue
	PhaseStarted    = "started"    // the summary call is starting (only when there is something to compact)
	PhaseDelta      = "delta"      // a summary text delta (live only)
	PhaseCommitting = "committing" // the canonical commit started
	PhaseFinished   = "finished"   // Result is set
)

// CompactionEvent is a compaction lifecycle mutation, for UI state.
// Application logic should wait on the Handle instead (docs/design.md §6.4).
type CompactionEvent struct {
	CompactID string
	Trigger   string
	Phase     string
	Delta     string         // PhaseDelta only
	Archive   int            // PhaseStarted: messages the compaction archives
	Result    *CompactResult // PhaseFinished only
	TurnID    string         // the turn it ran in, "" when the session was idle (and in a Replay)
	// Position is the timeline position of the compaction's record in the
	// store, from PhaseStarted on (and on the PhaseFinished of a
	// nothing_to_compact); NoPosition for PhaseQueued and for a compaction
	// that never reached the store (cancelled while queued).
	Position int64
}

// NoPosition is the Position of a CompactionEvent whose compaction has no
// record in the store's timeline.
const NoPosition int64 = -1

// UsageEvent reports provider-reported usage after a provider response.
type UsageEvent struct {
	Purpose provider.Purpose
	Usage   provider.Usage
	// ContextTokens is the context the conversation now holds (input plus
	// output tokens of the latest turn response); 0 when unknown, as after
	// a compaction until the next turn response.
	ContextTokens int
	TurnID        string
}

// Turn phases.
const (
	TurnStarted  = "started"
	TurnFinished = "finished"
)

// TurnEvent reports the start and the end of a turn.
type TurnEvent struct {
	TurnID string
	Phase  string
	Result *TurnResult // TurnFinished only
}

func (*MessageEvent) payload()    {}
func (*DeltaEvent) payload()      {}
func (*ActionEvent) payload()     {}
func (*CompactionEvent) payload() {}
func (*UsageEvent) payload()      {}
func (*TurnEvent) payload()       {}

// Durable implements Payload.
func (*MessageEvent) Durable() bool { return true }

// Durable implements Payload: deltas are live only.
func (*DeltaEvent) Durable() bool { return false }

// Durable implements Payload.
func (*ActionEvent) Durable() bool { return true }

// Durable implements Payload: every phase but PhaseDelta is durable.
func (e *CompactionEvent) Durable() bool { return e.Phase != PhaseDelta }

// Durable implements Payload.
func (*UsageEvent) Durable() bool { return true }

// Durable implements Payload.
func (*TurnEvent) Durable() bool { return true }

// SubscribeOptions says where a subscription starts.
type SubscribeOptions struct {
	After uint64 // replay durable events with Seq > After, then go live; 0 = live only
	// Buffer is how many events may wait unread before the subscription is
	// ended with a SlowSubscriberError; 0 = DefaultBuffer.
	Buffer int
}

// Subscription delivers a session's events in sequence order.
//
// Events are buffered up to SubscribeOptions.Buffer; a subscriber that falls
// further behind is ended with a [SlowSubscriberError] instead of blocking
// the session or losing events silently. It can resubscribe from the last
// sequence number it saw.
type Subscription struct {
	ch      chan Event
	limit   int
	lastSeq uint64 // last event put into ch; owned by the Feed's owner
	once    sync.Once
	err     error
	ended   chan struct{}
	close   func() // asks the owner to end the subscription
	stop    func() bool
}

// Events returns the channel of events. It is closed when the subscription
// ends; events buffered before the end are still delivered.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Err returns why the subscription ended: nil while it is live, after Close
// or when its ctx ended; ErrClosed when the session closed; a
// *SlowSubscriberError when it fell behind.
func (s *Subscription) Err() error {
	select {
	case <-s.ended:
		return s.err
	default:
		return nil
	}
}

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() {
	select {
	case <-s.ended:
	default:
		s.close()
	}
}

// end closes the channel; called by the Feed's owner only.
func (s *Subscription) end(err error) {
	s.once.Do(func() {
		s.err = err
		if s.stop != nil {
			s.stop()
		}
		close(s.ended)
		close(s.ch)
	})
}

// Feed is a timeline: it numbers events, keeps the durable ones for replay
// and delivers them to subscriptions. A Feed is not safe for concurrent use:
// it belongs to one owner (a session's loop, or a remote session that guards
// it), and exists so that [Agent] implementations outside this package offer
// the same Subscribe behaviour.
type Feed struct {
	seq        uint64
	history    []Event // durable events, oldest first: at least the last keep
	keep       int
	trimmedSeq uint64 // the newest durable event no longer retained
	subs       map[*Subscription]struct{}
	now        func() time.Time
}

// NewFeed returns a Feed that retains at least the last keep durable events
// for replay (0 = DefaultEventHistory).
func NewFeed(keep int) *Feed {
	if keep <= 0 {
		keep = DefaultEventHistory
	}
	return &Feed{keep: keep, subs: make(map[*Subscription]struct{}), now: time.Now}
}

// Seq returns the sequence number of the last published event.
func (f *Feed) Seq() uint64 { return f.seq }

// Publish numbers p, retains it if durable, and delivers it to every
// subscription. A subscription whose buffer is full is ended with a
// SlowSubscriberError.
func (f *Feed) Publish(p Payload) Event {
	f.seq++
	ev := Event{Seq: f.seq, Time: f.now(), Payload: p}
	if p.Durable() {
		f.history = append(f.history, ev)
		if len(f.history) > 2*f.keep { // trim in amortized O(1)
			drop := len(f.history) - f.keep
			f.trimmedSeq = f.history[drop-1].Seq
			f.history = append([]Event(nil), f.history[drop:]...)
		}
	}
	for s := range f.subs {
		select {
		case s.ch <- ev:
			s.lastSeq = ev.Seq
		default:
			delete(f.subs, s)
			s.end(&SlowSubscriberError{LastSeq: s.lastSeq})
		}
	}
	return ev
}

// Subscribe adds a subscription. closeFn is called (from any goroutine) when
// the subscriber calls Close or ctx ends; it must arrange for Unsubscribe to
// run on the owner.
func (f *Feed) Subscribe(ctx context.Context, opts SubscribeOptions, closeFn func(*Subscription)) (*Subscription, error) {
	if opts.Buffer < 0 {
		return nil, invalid("negative subscription buffer")
	}
	limit := opts.Buffer
	if limit == 0 {
		limit = DefaultBuffer
	}
	var replay []Event
	if opts.After > 0 {
		if opts.After < f.trimmedSeq {
			return nil, fmt.Errorf("%w: asked for events after %d, oldest retained after %d", ErrEventsTrimmed, opts.After, f.trimmedSeq)
		}
		i := sort.Search(len(f.history), func(i int) bool { return f.history[i].Seq > opts.After })
		replay = f.history[i:]
	}
	s := &Subscription{ch: make(chan Event, len(replay)+limit), limit: limit, ended: make(chan struct{}), lastSeq: opts.After}
	for _, ev := range replay {
		s.ch <- ev
		s.lastSeq = ev.Seq
	}
	s.close = func() { closeFn(s) }
	s.stop = context.AfterFunc(ctx, s.close)
	f.subs[s] = struct{}{}
	return s, nil
}

// Unsubscribe ends s with err (nil for a Close by the subscriber).
func (f *Feed) Unsubscribe(s *Subscription, err error) {
	delete(f.subs, s)
	s.end(err)
}

// CloseAll ends every subscription with err.
func (f *Feed) CloseAll(err error) {
	for s := range f.subs {
		f.Unsubscribe(s, err)
	}
}
