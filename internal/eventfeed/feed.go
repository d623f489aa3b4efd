package eventfeed

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"
)

// Payload is what a Feed publishes: a durable payload is retained for
// replay, the others are live only.
type Payload interface{ Durable() bool }

// Config describes the events of a Feed and the errors it reports.
type Config[E any, P Payload] struct {
	Keep   int // durable events retained for replay, at least; > 0
	Buffer int // the buffer of a subscription that asks for 0; > 0
	// Event makes the event numbered seq, published at t, of p.
	Event func(seq uint64, t time.Time, p P) E
	// Slow is the error of a subscription ended because its buffer was
	// full; lastSeq is the last event put into its channel.
	Slow func(lastSeq uint64) error
	// Invalid and Trimmed are wrapped by the errors of Subscribe: a
	// negative buffer, and events asked for that are no longer retained.
	Invalid, Trimmed error
}

// Feed is a timeline: it numbers events, keeps the durable ones for replay
// and delivers them to subscriptions. A Feed is not safe for concurrent use:
// it belongs to one owner (a session's loop, or a remote session's owner
// goroutine).
type Feed[E any, P Payload] struct {
	cfg        Config[E, P]
	seq        uint64
	history    []retained[E] // durable events, oldest first: at least the last cfg.Keep
	trimmedSeq uint64        // the newest durable event no longer retained
	start      uint64        // numbers up to start were given before this Feed
	hold       uint64        // durable events above hold are never trimmed
	subs       map[*Subscription[E]]struct{}
	now        func() time.Time
}

type retained[E any] struct {
	seq uint64
	ev  E
}

// NewFeed returns an empty Feed.
func NewFeed[E any, P Payload](cfg Config[E, P]) *Feed[E, P] {
	return &Feed[E, P]{cfg: cfg, hold: math.MaxUint64, subs: make(map[*Subscription[E]]struct{}), now: time.Now}
}

// Start makes the Feed number its first event start+1: numbers up to start
// were given out before it (by an earlier process), and it cannot replay
// them. Call it before the first Publish.
func (f *Feed[E, P]) Start(start uint64) {
	f.seq, f.start = start, start
}

// Hold keeps every durable event numbered above seq retained, however many
// there are, until a later Hold moves the mark; math.MaxUint64 (the
// default) holds nothing back.
func (f *Feed[E, P]) Hold(seq uint64) { f.hold = seq }

// Covered returns the number after which the Feed retains every durable
// event: Subscribe replays from any after at or above it.
func (f *Feed[E, P]) Covered() uint64 { return max(f.trimmedSeq, f.start) }

// Seq returns the sequence number of the last published event.
func (f *Feed[E, P]) Seq() uint64 { return f.seq }

// Publish numbers p, retains it if durable, and delivers it to every
// subscription. A subscription whose buffer is full is ended with
// Config.Slow's error.
func (f *Feed[E, P]) Publish(p P) E {
	f.seq++
	ev := f.cfg.Event(f.seq, f.now(), p)
	if p.Durable() {
		f.history = append(f.history, retained[E]{f.seq, ev})
		if len(f.history) > 2*f.cfg.Keep { // trim in amortized O(1)
			drop := len(f.history) - f.cfg.Keep
			if f.history[drop-1].seq > f.hold {
				drop = sort.Search(len(f.history), func(i int) bool { return f.history[i].seq > f.hold })
			}
			if drop > 0 {
				f.trimmedSeq = f.history[drop-1].seq
				f.history = append([]retained[E](nil), f.history[drop:]...)
			}
		}
	}
	for s := range f.subs {
		if s.offer(ev) {
			s.lastSeq = f.seq
			continue
		}
		delete(f.subs, s)
		s.end(f.cfg.Slow(s.lastSeq))
	}
	return ev
}

// Subscribe adds a subscription that first replays the retained durable
// events after sequence number after (none when after is 0) and then
// delivers what is published; buffer is how many events may wait unread (0
// = Config.Buffer), beyond those replayed. The buffer is a bound, not an
// allocation: a subscription holds memory for the events that wait, and
// little more (see Subscription). closeFn is called (from any goroutine)
// when the subscriber calls Close or ctx ends; it must arrange for
// Unsubscribe to run on the owner. Errors wrap Config.Invalid (also for an after above
// the last number given) or Config.Trimmed (an after below Covered).
func (f *Feed[E, P]) Subscribe(ctx context.Context, after uint64, buffer int, closeFn func(*Subscription[E])) (*Subscription[E], error) {
	if after > 0 && after < f.Covered() {
		return nil, fmt.Errorf("%w: asked for events after %d, oldest retained after %d", f.cfg.Trimmed, after, f.Covered())
	}
	return f.SubscribeWith(ctx, nil, after, buffer, closeFn)
}

// SubscribeWith is Subscribe for a subscriber that has the durable events
// up to after from elsewhere (an event log): it delivers prefix first, then
// the retained events after after, then what is published. after must be
// at or above Covered (Config.Trimmed otherwise).
func (f *Feed[E, P]) SubscribeWith(ctx context.Context, prefix []E, after uint64, buffer int, closeFn func(*Subscription[E])) (*Subscription[E], error) {
	if buffer < 0 {
		return nil, fmt.Errorf("%w: negative subscription buffer", f.cfg.Invalid)
	}
	if buffer == 0 {
		buffer = f.cfg.Buffer
	}
	var replay []retained[E]
	if after > 0 || len(prefix) > 0 {
		var err error
		if replay, err = f.after(after); err != nil {
			return nil, err
		}
	}
	n := len(prefix) + len(replay)
	s := newSubscription[E](n+buffer, n, after)
	for _, ev := range prefix {
		s.offer(ev) // within the limit: it takes them all
	}
	for _, r := range replay {
		s.offer(r.ev)
		s.lastSeq = r.seq
	}
	s.close = func() { closeFn(s) }
	s.stop = context.AfterFunc(ctx, s.close)
	f.subs[s] = struct{}{}
	return s, nil
}

// Retained returns the retained durable events numbered above after, oldest
// first, in a slice of their own: Config.Trimmed when events above after
// are no longer retained, Config.Invalid when after is above the last
// number given.
func (f *Feed[E, P]) Retained(after uint64) ([]E, error) {
	rs, err := f.after(after)
	if err != nil {
		return nil, err
	}
	out := make([]E, len(rs))
	for i, r := range rs {
		out[i] = r.ev
	}
	return out, nil
}

// after returns the retained durable events numbered above after, a view
// of f.history; errors as for Retained.
func (f *Feed[E, P]) after(after uint64) ([]retained[E], error) {
	if after > f.seq {
		return nil, fmt.Errorf("%w: asked for events after %d, the last one given is %d", f.cfg.Invalid, after, f.seq)
	}
	if after < f.trimmedSeq {
		return nil, fmt.Errorf("%w: asked for events after %d, oldest retained after %d", f.cfg.Trimmed, after, f.trimmedSeq)
	}
	i := sort.Search(len(f.history), func(i int) bool { return f.history[i].seq > after })
	return f.history[i:], nil
}

// Unsubscribe ends s with err (nil for a Close by the subscriber).
func (f *Feed[E, P]) Unsubscribe(s *Subscription[E], err error) {
	delete(f.subs, s)
	s.end(err)
}

// CloseAll ends every subscription with err.
func (f *Feed[E, P]) CloseAll(err error) {
	for s := range f.subs {
		f.Unsubscribe(s, err)
	}
}

// initialBuffer is the capacity of a subscription's channel: the events
// that wait beyond it are kept in the subscription's overflow, which grows
// as they come and is given back once they are delivered.
const initialBuffer = 64

// Subscription delivers a Feed's events in sequence order. Its methods are
// safe for concurrent use; offer and end belong to the Feed's owner.
//
// Up to limit events may wait unread. The first initialBuffer of them wait
// in the channel; when it is full, the owner appends the later ones to the
// overflow and starts the pump, a goroutine that moves them into the
// channel as the subscriber reads, in order, and exits when the overflow is
// empty. So an idle subscription holds a small channel and no goroutine,
// and a lagging one holds what waits for it. The overflow is the channel's
// continuation, shared by the owner and the pump: mu guards it, as a
// channel's lock guards its buffer, and no session state.
type Subscription[E any] struct {
	ch      chan E
	limit   int    // events that may wait unread, in ch and the overflow
	lastSeq uint64 // last event accepted for delivery; owned by the Feed's owner
	once    sync.Once
	err     error
	ended   chan struct{}
	close   func() // asks the owner to end the subscription
	stop    func() bool

	mu      sync.Mutex
	over    []E           // the overflow: over[head:] wait, oldest first
	head    int           // the oldest event that waits in over
	pumping bool          // the pump runs: every event goes through over
	closing bool          // ended while pumping: the pump closes ch when it is done
	discard chan struct{} // closed when the subscriber ended it: the pump drops the rest
}

// newSubscription returns a subscription that lets limit events wait,
// expecting n of them at once, that delivers events after after.
func newSubscription[E any](limit, n int, after uint64) *Subscription[E] {
	s := &Subscription[E]{ch: make(chan E, min(limit, initialBuffer)), limit: limit, ended: make(chan struct{}), lastSeq: after}
	if n > cap(s.ch) {
		s.over = make([]E, 0, n-cap(s.ch))
	}
	return s
}

// offer accepts ev for delivery, unless limit events wait already; called
// by the Feed's owner, it never blocks.
func (s *Subscription[E]) offer(ev E) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pumping {
		select {
		case s.ch <- ev:
			return true
		default:
		}
	}
	// The event the pump is handing over counts here until the pump takes
	// the lock again (for that moment it counts twice: never more than
	// limit wait, and a reading subscriber may be ended one event early).
	if len(s.ch)+len(s.over)-s.head >= s.limit {
		return false
	}
	s.over = append(s.over, ev)
	if !s.pumping {
		s.pumping, s.discard = true, make(chan struct{})
		go s.pump(s.discard)
	}
	return true
}

// pump moves the overflow into the channel, oldest first, until it is
// empty or discard is closed; then the subscription holds no overflow, and
// ch is closed if the subscription ended meanwhile. It fills what room the
// channel has under one lock and blocks (without it) only when the channel
// is full.
func (s *Subscription[E]) pump(discard <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.fill() {
		ev := s.over[s.head]
		s.mu.Unlock()
		dropped := false
		select {
		case s.ch <- ev:
		case <-discard:
			dropped = true
		}
		s.mu.Lock()
		if dropped {
			break
		}
		s.next()
	}
	s.over, s.head, s.pumping = nil, 0, false
	if s.closing {
		close(s.ch)
	}
}

// fill moves the overflow into the channel while it has room, and reports
// whether some of the overflow is left; s.mu is held.
func (s *Subscription[E]) fill() bool {
	for s.head < len(s.over) {
		select {
		case s.ch <- s.over[s.head]:
			s.next()
		default:
			return true
		}
	}
	return false
}

// next forgets the oldest event of the overflow, which is in the channel
// now, and gives back the delivered part of a long overflow; s.mu is held.
func (s *Subscription[E]) next() {
	var zero E
	s.over[s.head] = zero
	s.head++
	if s.head >= initialBuffer && 2*s.head >= len(s.over) {
		n := copy(s.over, s.over[s.head:])
		clear(s.over[n:])
		s.over, s.head = s.over[:n], 0
	}
}

// Events returns the channel of events, closed when the subscription ends.
func (s *Subscription[E]) Events() <-chan E { return s.ch }

// Err returns why the subscription ended, nil while it is live.
func (s *Subscription[E]) Err() error {
	select {
	case <-s.ended:
		return s.err
	default:
		return nil
	}
}

// Close asks the owner to end the subscription. It is idempotent.
func (s *Subscription[E]) Close() {
	select {
	case <-s.ended:
	default:
		s.close()
	}
}

// end ends the subscription with err (nil: the subscriber asked for it);
// called by the Feed's owner only. The channel is closed once the events
// that wait are in it, except that a subscriber's own end discards those
// still in the overflow: the subscriber is not reading them.
func (s *Subscription[E]) end(err error) {
	s.once.Do(func() {
		s.err = err
		if s.stop != nil {
			s.stop()
		}
		close(s.ended)
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.pumping {
			close(s.ch)
			return
		}
		s.closing = true
		if err == nil {
			close(s.discard)
		}
	})
}
