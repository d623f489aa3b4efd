package timeline

import (
	"context"
	"fmt"
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
	subs       map[*Subscription[E]]struct{}
	now        func() time.Time
}

type retained[E any] struct {
	seq uint64
	ev  E
}

// NewFeed returns an empty Feed.
func NewFeed[E any, P Payload](cfg Config[E, P]) *Feed[E, P] {
	return &Feed[E, P]{cfg: cfg, subs: make(map[*Subscription[E]]struct{}), now: time.Now}
}

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
			f.trimmedSeq = f.history[drop-1].seq
			f.history = append([]retained[E](nil), f.history[drop:]...)
		}
	}
	for s := range f.subs {
		select {
		case s.ch <- ev:
			s.lastSeq = f.seq
		default:
			delete(f.subs, s)
			s.end(f.cfg.Slow(s.lastSeq))
		}
	}
	return ev
}

// Subscribe adds a subscription that first replays the retained durable
// events after sequence number after (none when after is 0) and then
// delivers what is published; buffer is how many events may wait unread (0
// = Config.Buffer). closeFn is called (from any goroutine) when the
// subscriber calls Close or ctx ends; it must arrange for Unsubscribe to
// run on the owner. Errors wrap Config.Invalid or Config.Trimmed.
func (f *Feed[E, P]) Subscribe(ctx context.Context, after uint64, buffer int, closeFn func(*Subscription[E])) (*Subscription[E], error) {
	if buffer < 0 {
		return nil, fmt.Errorf("%w: negative subscription buffer", f.cfg.Invalid)
	}
	if buffer == 0 {
		buffer = f.cfg.Buffer
	}
	var replay []retained[E]
	if after > 0 {
		if after < f.trimmedSeq {
			return nil, fmt.Errorf("%w: asked for events after %d, oldest retained after %d", f.cfg.Trimmed, after, f.trimmedSeq)
		}
		i := sort.Search(len(f.history), func(i int) bool { return f.history[i].seq > after })
		replay = f.history[i:]
	}
	s := &Subscription[E]{ch: make(chan E, len(replay)+buffer), ended: make(chan struct{}), lastSeq: after}
	for _, r := range replay {
		s.ch <- r.ev
		s.lastSeq = r.seq
	}
	s.close = func() { closeFn(s) }
	s.stop = context.AfterFunc(ctx, s.close)
	f.subs[s] = struct{}{}
	return s, nil
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

// Subscription delivers a Feed's events in sequence order. Its methods are
// safe for concurrent use; end belongs to the Feed's owner.
type Subscription[E any] struct {
	ch      chan E
	lastSeq uint64 // last event put into ch; owned by the Feed's owner
	once    sync.Once
	err     error
	ended   chan struct{}
	close   func() // asks the owner to end the subscription
	stop    func() bool
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

// end closes the channel; called by the Feed's owner only.
func (s *Subscription[E]) end(err error) {
	s.once.Do(func() {
		s.err = err
		if s.stop != nil {
			s.stop()
		}
		close(s.ended)
		close(s.ch)
	})
}
