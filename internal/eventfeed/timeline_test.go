package eventfeed

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type payload struct {
	name    string
	durable bool
}

func (p payload) Durable() bool { return p.durable }

type event struct {
	seq uint64
	p   payload
}

type slowError struct{ last uint64 }

func (e *slowError) Error() string { return "slow" }

var (
	errInvalid = errors.New("invalid")
	errTrimmed = errors.New("trimmed")
)

func newTestFeed(keep, buffer int) *Feed[event, payload] {
	return NewFeed(Config[event, payload]{
		Keep: keep, Buffer: buffer,
		Event:   func(seq uint64, _ time.Time, p payload) event { return event{seq, p} },
		Slow:    func(last uint64) error { return &slowError{last} },
		Invalid: errInvalid, Trimmed: errTrimmed,
	})
}

func drain(s *Subscription[event]) []uint64 {
	var out []uint64
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return out
			}
			out = append(out, ev.seq)
		default:
			return out
		}
	}
}

func TestFeed_ReplaysDurableAfterAndTrims(t *testing.T) {
	f := newTestFeed(2, 8)
	for i := range 6 {
		f.Publish(payload{durable: i != 3}) // seq 4 is live only
	}
	require.Equal(t, uint64(6), f.Seq())
	s, err := f.Subscribe(t.Context(), 4, 0, func(*Subscription[event]) {})
	require.NoError(t, err)
	assert.Equal(t, []uint64{5, 6}, drain(s))

	// The fifth durable event (seq 6) went past 2*Keep: the oldest were
	// dropped down to Keep, so 1..3 are no longer retained.
	_, err = f.Subscribe(t.Context(), 1, 0, func(*Subscription[event]) {})
	assert.ErrorIs(t, err, errTrimmed)
	_, err = f.Subscribe(t.Context(), 0, -1, func(*Subscription[event]) {})
	assert.ErrorIs(t, err, errInvalid)
	f.CloseAll(nil)
}

func TestFeed_SlowSubscriberEnded(t *testing.T) {
	f := newTestFeed(8, 1)
	s, err := f.Subscribe(t.Context(), 0, 0, func(*Subscription[event]) {})
	require.NoError(t, err)
	f.Publish(payload{durable: true})
	assert.NoError(t, s.Err())
	f.Publish(payload{durable: true})
	var slow *slowError
	require.ErrorAs(t, s.Err(), &slow)
	assert.Equal(t, uint64(1), slow.last)
	assert.Equal(t, []uint64{1}, drain(s), "what was buffered is still delivered")
}

func TestFeed_CloseAndContextAskTheOwner(t *testing.T) {
	f := newTestFeed(8, 4)
	asked := make(chan *Subscription[event], 2)
	ctx, cancel := context.WithCancel(t.Context())
	s, err := f.Subscribe(ctx, 0, 0, func(s *Subscription[event]) { asked <- s })
	require.NoError(t, err)
	s.Close()
	require.Same(t, s, <-asked)
	assert.NoError(t, s.Err(), "ended by the owner only")
	f.Unsubscribe(s, nil)
	s.Close() // idempotent once ended
	_, open := <-s.Events()
	assert.False(t, open)

	s2, err := f.Subscribe(ctx, 0, 0, func(s *Subscription[event]) { asked <- s })
	require.NoError(t, err)
	cancel()
	require.Same(t, s2, <-asked)
	closed := errors.New("closed")
	f.CloseAll(closed)
	assert.Equal(t, closed, s2.Err())
}

func TestHandle_FinishesOnce(t *testing.T) {
	cancelled := 0
	h, finish := NewHandle[int]("id", func() { cancelled++ })
	assert.Equal(t, "id", h.ID())
	assert.Nil(t, h.Result())
	h.Cancel()
	finish(1)
	finish(2)
	<-h.Finished()
	assert.Equal(t, 1, *h.Result())
	v, err := h.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	h.Cancel()
	assert.Equal(t, 1, cancelled, "Cancel does nothing once done")
}

// publish publishes n durable events.
func publish(f *Feed[event, payload], n int) {
	for range n {
		f.Publish(payload{durable: true})
	}
}

// readAll reads s until its channel closes.
func readAll(s *Subscription[event]) []uint64 {
	var out []uint64
	for ev := range s.Events() {
		out = append(out, ev.seq)
	}
	return out
}

// seqs returns from..to.
func seqs(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// overflow returns how many events wait in s's overflow, and whether its
// pump runs.
func overflow(s *Subscription[event]) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.over) - s.head, s.pumping
}

// A buffer is a bound, not an allocation: a subscription that lets 16,384
// events wait starts with a small channel and no goroutine, holds what
// waits for it, delivers it in order (also events published while the
// overflow is being delivered), and gives the overflow back once it is
// delivered.
func TestFeed_BufferGrowsOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFeed(8, 1<<14)
		s, err := f.Subscribe(t.Context(), 0, 0, func(*Subscription[event]) {})
		require.NoError(t, err)
		assert.LessOrEqual(t, cap(s.Events()), initialBuffer, "the channel is not the buffer")
		publish(f, 10_000)
		require.NoError(t, s.Err(), "10,000 events wait: within the buffer")
		n, pumping := overflow(s)
		assert.Equal(t, 10_000-cap(s.Events()), n)
		assert.True(t, pumping)
		var got []uint64
		for range 100 {
			got = append(got, (<-s.Events()).seq)
		}
		publish(f, 10) // while the overflow is delivered: after it
		for len(got) < 10_010 {
			got = append(got, (<-s.Events()).seq)
		}
		assert.Equal(t, seqs(1, 10_010), got, "every event, in order")
		synctest.Wait()
		n, pumping = overflow(s)
		assert.Zero(t, n)
		assert.False(t, pumping, "the pump exits once the overflow is delivered")
		s.mu.Lock()
		assert.Nil(t, s.over, "the overflow is given back")
		s.mu.Unlock()
		publish(f, 1)
		assert.Equal(t, uint64(10_011), (<-s.Events()).seq, "and the channel takes events again")
		f.CloseAll(errors.New("closed"))
	})
}

// Beyond the channel, the buffer bound is exact: with 200 events waiting,
// the 201st ends the subscription as slow, naming the 200th as the last
// one delivered, and all 200 are still delivered before the channel closes.
func TestFeed_SlowSubscriberEndedPastTheOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFeed(8, 200)
		s, err := f.Subscribe(t.Context(), 0, 0, func(*Subscription[event]) {})
		require.NoError(t, err)
		publish(f, 200)
		require.NoError(t, s.Err(), "200 wait: the buffer is full, not past it")
		publish(f, 1)
		var slow *slowError
		require.ErrorAs(t, s.Err(), &slow)
		assert.Equal(t, uint64(200), slow.last)
		assert.Equal(t, seqs(1, 200), readAll(s), "what waited is delivered, then the channel closes")
	})
}

// The owner's end (the session closed) delivers the overflow first; a
// replay larger than the channel goes through it too.
func TestFeed_EndDeliversTheOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFeed(1000, 10)
		publish(f, 500)
		s, err := f.Subscribe(t.Context(), 100, 0, func(*Subscription[event]) {})
		require.NoError(t, err)
		publish(f, 10)
		f.CloseAll(errors.New("closed"))
		assert.Equal(t, seqs(101, 510), readAll(s))
		assert.EqualError(t, s.Err(), "closed")
	})
}

// A subscriber's own end (Close, its ctx) discards the overflow it will not
// read: the pump exits although nobody reads (goleak and synctest check it).
func TestFeed_CloseDiscardsTheOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFeed(8, 1000)
		s, err := f.Subscribe(t.Context(), 0, 0, func(s *Subscription[event]) { f.Unsubscribe(s, nil) })
		require.NoError(t, err)
		publish(f, 500)
		s.Close()
		synctest.Wait()
		_, pumping := overflow(s)
		assert.False(t, pumping, "the pump has exited")
		got := readAll(s)
		assert.Equal(t, seqs(1, uint64(len(got))), got, "what was in the channel, in order")
		assert.NoError(t, s.Err())
	})
}

func TestFeed_RetainedAfter(t *testing.T) {
	f := newTestFeed(2, 8)
	f.Start(10)
	for i := range 6 {
		f.Publish(payload{durable: i != 3}) // seq 14 is live only
	}
	evs, err := f.Retained(14)
	require.NoError(t, err)
	var seqs []uint64
	for _, ev := range evs {
		seqs = append(seqs, ev.seq)
	}
	assert.Equal(t, []uint64{15, 16}, seqs)
	evs, err = f.Retained(16)
	require.NoError(t, err)
	assert.Empty(t, evs)
	_, err = f.Retained(11)
	assert.ErrorIs(t, err, errTrimmed, "11..13 are no longer retained")
	_, err = f.Retained(17)
	assert.ErrorIs(t, err, errInvalid, "beyond the last number given")
}
