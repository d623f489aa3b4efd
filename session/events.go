package session

import (
	"context"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/eventfeed"
	"github.com/sessionkit/sessionkit/provider"
)

// Event is one item of a session's timeline (docs/design.md §6).
type Event struct {
	Seq     uint64 // per session, strictly increasing
	Time    time.Time
	Payload Payload
}

// Payload is one of the event types of this package: *MessageEvent,
// *DeltaEvent, *ThoughtDeltaEvent, *ActionEvent, *CompactionEvent, *UsageEvent, *TurnEvent,
// *AutoCompactEvent, *UncompactEvent, *SettingsEvent, *RetryEvent, *EmbedEvent. The
// set is sealed.
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

// ThoughtDeltaEvent is a delta of the reasoning of the assistant message
// being generated (provider.ReportThought), live only: the committed
// message holds the whole reasoning in its Thoughts (history.Message).
type ThoughtDeltaEvent struct {
	TurnID string
	// MessageID is the ID the assistant message will have, as for
	// DeltaEvent.
	MessageID string
	Text      string
}

func (*ThoughtDeltaEvent) payload() {}

// Durable implements Payload: thought deltas are live only.
func (*ThoughtDeltaEvent) Durable() bool { return false }

// ActionStatus is the state of a timeline action (ActionEvent.Status).
type ActionStatus string

// Action statuses (docs/design.md §6.2).
const (
	ActionRunning   ActionStatus = "running"
	ActionCompleted ActionStatus = "completed"
	ActionFailed    ActionStatus = "failed"
)

// ActionKind is what a timeline action does (ActionEvent.Kind).
type ActionKind string

// Action kinds.
const (
	ActionKindCompact   ActionKind = "compact"   // a compaction's commit
	ActionKindUncompact ActionKind = "uncompact" // an Uncompact
)

// ActionEvent is a timeline action message. Compaction publishes them as
// §4 says: running while the commit is under way, then completed or failed;
// a completed action with explanatory text when there was nothing to compact.
type ActionEvent struct {
	ID        string       // unique per action
	Kind      ActionKind   // ActionKindCompact or ActionKindUncompact
	Status    ActionStatus // ActionRunning, ActionCompleted or ActionFailed
	Text      string
	CompactID string
}

// Phase is a compaction lifecycle phase (CompactionEvent.Phase).
type Phase string

// Compaction lifecycle phases.
const (
	PhaseQueued     Phase = "queued"     // the command entered the queue
	PhaseStarted    Phase = "started"    // the summary call is starting (only when there is something to compact)
	PhaseDelta      Phase = "delta"      // a summary text delta (live only)
	PhaseCommitting Phase = "committing" // the canonical commit started
	PhaseFinished   Phase = "finished"   // Result is set
)

// CompactionEvent is a compaction lifecycle mutation, for UI state.
// Application logic should wait on the Handle instead (docs/design.md §6.4).
type CompactionEvent struct {
	CompactID string
	Trigger   history.Trigger
	Phase     Phase
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

// UsageEvent reports provider-reported usage after a provider response,
// once its record is in the session's usage ledger ([Session.Usage]): a
// turn step's (Purpose "turn") or a summary call's (Purpose "summary",
// with its CompactID, published before the compaction's finished event).
type UsageEvent struct {
	Purpose provider.Purpose
	Usage   provider.Usage
	// ContextTokens is the context the conversation now holds (input plus
	// output tokens of the latest turn response); 0 when unknown, as after
	// a compaction until the next turn response, and for a summary call.
	ContextTokens int
	TurnID        string
	CompactID     string // the compaction of a summary call
	Model         string // the model that answered, "" when unknown
	// Cost is what the response cost (Config.Pricing), the zero Cost when
	// it was not priced; SessionCost is the session's cost so far, this
	// response included (UsageReport.Total.Cost), which never decreases.
	Cost, SessionCost provider.Cost
}

// TurnPhase is the phase a TurnEvent reports.
type TurnPhase string

// Turn phases.
const (
	TurnStarted  TurnPhase = "started"
	TurnFinished TurnPhase = "finished"
)

// TurnEvent reports the start and the end of a turn.
type TurnEvent struct {
	TurnID string
	Phase  TurnPhase
	Result *TurnResult // TurnFinished only
}

// SettingsEvent reports a change of the session's settings: a Configure
// that changed the value of a setting (one that only repeats the values
// there are publishes none), or the title an untitled session takes from
// its first message. It is durable: the event log keeps it, and
// [Session.Replay] shows each change at its place with the settings as they
// were then.
type SettingsEvent struct {
	// Settings are the effective settings after the change, as
	// [Session.Settings] returned them from then on.
	Settings Settings
	// Changed names the settings whose values changed, by their field
	// names in Settings ("Model", "Mode", "SystemPrompt", ..., "Title"), in
	// the order of Settings' fields.
	Changed []string
	// TurnID is the turn a Configure was applied in, "" when the session
	// was idle (and in a Replay). A title change carries the turn of the
	// message that titled the session.
	TurnID string
	// Position is the timeline position of the change's record (a
	// Configure's, with a store that records them: history.ConfigRecorder,
	// as the stores of sessionkit do); NoPosition otherwise. A title change
	// has no record of its own: it comes right after the MessageEvent of
	// the message that titled the session, live and in a Replay.
	Position int64
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

func (*SettingsEvent) payload() {}

// Durable implements Payload.
func (*SettingsEvent) Durable() bool { return true }

// SubscribeOptions says where a subscription starts.
type SubscribeOptions struct {
	After uint64 // replay durable events with Seq > After, then go live; 0 = live only
	// Buffer is how many events may wait unread before the subscription is
	// ended with a SlowSubscriberError; 0 = DefaultBuffer. It is a bound,
	// not an allocation: a subscription takes memory for the events that
	// wait (and a goroutine that hands them over while more wait than its
	// channel's 64), not for Buffer of them.
	Buffer int
}

// Subscription delivers a session's events in sequence order.
//
// Events are buffered up to SubscribeOptions.Buffer; a subscriber that falls
// further behind is ended with a [SlowSubscriberError] instead of blocking
// the session or losing events silently. It can resubscribe from the last
// sequence number it saw.
type Subscription eventfeed.Subscription[Event]

// Events returns the channel of events. It is closed when the subscription
// ends; events buffered before the end are still delivered, except after
// the subscriber's own end (Close, or the end of its ctx): then only those
// already in the channel (up to 64) are, and the rest is dropped, since
// nobody reads it.
func (s *Subscription) Events() <-chan Event { return s.inner().Events() }

// Err returns why the subscription ended: nil while it is live, after Close
// or when its ctx ended; ErrClosed when the session closed; a
// *SlowSubscriberError when it fell behind.
func (s *Subscription) Err() error { return s.inner().Err() }

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() { s.inner().Close() }

func (s *Subscription) inner() *eventfeed.Subscription[Event] {
	return (*eventfeed.Subscription[Event])(s)
}

// feed is a session's timeline (docs/design.md §6.1, §6.3).
type feed = eventfeed.Feed[Event, Payload]

// newFeed returns a feed that retains at least the last keep durable events
// for replay (0 = DefaultEventHistory).
func newFeed(keep int, start uint64, elog eventLog) *feed {
	if keep <= 0 {
		keep = DefaultEventHistory
	}
	f := eventfeed.NewFeed(eventfeed.Config[Event, Payload]{
		Keep:    keep,
		Buffer:  DefaultBuffer,
		Event:   func(seq uint64, t time.Time, p Payload) Event { return Event{Seq: seq, Time: t, Payload: p} },
		Slow:    func(lastSeq uint64) error { return &SlowSubscriberError{LastSeq: lastSeq} },
		Invalid: ErrInvalid,
		Trimmed: ErrEventsTrimmed,
	})
	f.Start(start)
	f.Hold(elog.logged) // until they are logged, events stay retained
	return f
}

// subscribe subscribes to f with opts; closeFn is as for eventfeed.Feed.Subscribe.
func subscribe(ctx context.Context, f *feed, opts SubscribeOptions, closeFn func(*eventfeed.Subscription[Event])) (*Subscription, error) {
	s, err := f.Subscribe(ctx, opts.After, opts.Buffer, closeFn)
	return (*Subscription)(s), err
}
