package timeline

import (
	"context"
	"errors"
	"testing"
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
