package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// buffered returns the events a subscription holds right now: the replay a
// Subscribe put into it (nothing else is published meanwhile).
func buffered(sub *session.Subscription) []session.Event {
	var evs []session.Event
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		default:
			return evs
		}
	}
}

// durableAfter returns the durable events of evs numbered above n.
func durableAfter(evs []session.Event, n uint64) []session.Event {
	var out []session.Event
	for _, ev := range evs {
		if ev.Seq > n && ev.Payload.Durable() {
			out = append(out, ev)
		}
	}
	return out
}

// equalEvents compares events by number, time and payload (times as
// instants, errors by their text and identity).
func equalEvents(t *testing.T, want, got []session.Event, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		assert.Equal(t, want[i].Seq, got[i].Seq, "%s: event %d", msg, i)
		assert.True(t, want[i].Time.Equal(got[i].Time), "%s: event %d time", msg, want[i].Seq)
		assert.Equal(t, fmt.Sprintf("%T", want[i].Payload), fmt.Sprintf("%T", got[i].Payload), "%s: event %d", msg, want[i].Seq)
		assert.Equal(t, canon(t, want[i].Payload), canon(t, got[i].Payload), "%s: event %d", msg, want[i].Seq)
		if w, ok := want[i].Payload.(*session.TurnEvent); ok && w.Result != nil {
			g := got[i].Payload.(*session.TurnEvent)
			require.NotNil(t, g.Result)
			if w.Result.Err == nil {
				assert.NoError(t, g.Result.Err)
				continue
			}
			require.Error(t, g.Result.Err)
			assert.Equal(t, w.Result.Err.Error(), g.Result.Err.Error())
			for _, sentinel := range []error{session.ErrCancelled, session.ErrClosed, session.ErrTooManySteps} {
				assert.Equal(t, errors.Is(w.Result.Err, sentinel), errors.Is(g.Result.Err, sentinel), "%v", sentinel)
			}
		}
	}
}

// canon is p as JSON, with every time as UTC.
func canon(t *testing.T, p any) string {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if tm, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return tm.UTC().Format(time.RFC3339Nano)
			}
		}
		return v
	}
	b, err = json.Marshal(walk(v))
	require.NoError(t, err)
	return string(b)
}

// converseWithTools runs prompts on s that call a tool, steer, and compact.
func converseWithTools(t *testing.T, s *session.Session, round string) {
	t.Helper()
	for i := range 3 {
		require.NoError(t, wait(t, mustPrompt(t, s, round+" please call echo with text: hello "+string(rune('a'+i)))).Err)
	}
	require.NoError(t, wait(t, mustPrompt(t, s, round+" the build uses tabs.")).Err)
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	require.NoError(t, wait(t, mustPrompt(t, s, round+" what does the build use?")).Err)
}

// TestSeq_AcrossReopen_SQLite (§6.1): sequence numbers increase over the
// session's whole life, across processes (here: a store opened again on the
// same file); Subscribe(After: N) with any N the first process gave,
// deltas' numbers included, replays exactly the durable events after N in
// the later process; an After beyond the last number is an error.
func TestSeq_AcrossReopen_SQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seq.db")
	prov := offline.New(offline.WithDeltaSize(3))
	cfg := session.Config{Provider: prov, Tools: []session.Tool{echoTool()}}

	// The first process: every event it publishes, deltas included.
	st1, err := sqlite.Open(path)
	require.NoError(t, err)
	cfg.Store = st1
	s1, err := session.New(context.Background(), cfg)
	require.NoError(t, err)
	rec := record(t, s1)
	converseWithTools(t, s1, "one")
	require.NoError(t, s1.Close())
	<-rec.done
	first := rec.all()
	require.NotEmpty(t, first)
	var deltas int
	for i, ev := range first {
		if i > 0 {
			require.Greater(t, ev.Seq, first[i-1].Seq, "numbers increase")
		}
		if !ev.Payload.Durable() {
			deltas++
		}
	}
	require.Positive(t, deltas, "the conversation streamed deltas")
	last := first[len(first)-1].Seq
	require.NoError(t, st1.Close())

	// A later process on the same file.
	st2, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st2.Close() })
	cfg.Store, cfg.ID = st2, s1.ID()
	s2, err := session.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })

	for _, ev := range first {
		sub, err := s2.Subscribe(ctxT(t), session.SubscribeOptions{After: ev.Seq})
		require.NoError(t, err, "after %d", ev.Seq)
		equalEvents(t, durableAfter(first, ev.Seq), buffered(sub), fmt.Sprintf("after %d", ev.Seq))
		sub.Close()
	}
	_, err = s2.Subscribe(ctxT(t), session.SubscribeOptions{After: math.MaxInt64})
	require.ErrorIs(t, err, session.ErrInvalid, "an After beyond the last number given")

	// From a number of the first process into the second one's live events.
	sub, err := s2.Subscribe(ctxT(t), session.SubscribeOptions{After: first[0].Seq, Buffer: 100000})
	require.NoError(t, err)
	t.Cleanup(sub.Close)
	replayed := buffered(sub)
	require.NoError(t, wait(t, mustPrompt(t, s2, "two the tests use go test.")).Err)
	live := drainUntilTurnFinished(t, sub)
	require.NotEmpty(t, live)
	assert.Greater(t, live[0].Seq, last, "the later process numbers above every number the first gave")
	all := append(replayed, live...)
	for i := 1; i < len(all); i++ {
		require.Greater(t, all[i].Seq, all[i-1].Seq, "replay and live events in order, without repeats")
	}
	_, err = s2.Subscribe(ctxT(t), session.SubscribeOptions{After: live[len(live)-1].Seq + 1})
	require.ErrorIs(t, err, session.ErrInvalid)
}

// drainUntilTurnFinished reads sub until a TurnFinished event.
func drainUntilTurnFinished(t *testing.T, sub *session.Subscription) []session.Event {
	t.Helper()
	var evs []session.Event
	ctx := ctxT(t)
	for {
		select {
		case ev := <-sub.Events():
			evs = append(evs, ev)
			if te, ok := ev.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
				return evs
			}
		case <-ctx.Done():
			t.Fatal("no TurnFinished event")
		}
	}
}

// TestSeq_TrimmedReplayedFromLog (§6.1): with an event log, events no longer
// retained in memory are read back from the store.
func TestSeq_TrimmedReplayedFromLog(t *testing.T) {
	s := newSession(t, offline.New(), session.Config{EventHistory: 2, Tools: []session.Tool{echoTool()}})
	rec := record(t, s)
	converseWithTools(t, s, "one")
	evs := rec.until(t, func(evs []session.Event) bool {
		if len(evs) == 0 {
			return false // until may look before the first event
		}
		_, ok := evs[len(evs)-1].Payload.(*session.TurnEvent)
		return ok
	})
	for _, n := range []uint64{1, 2, evs[len(evs)/2].Seq} {
		sub, err := s.Subscribe(ctxT(t), session.SubscribeOptions{After: n})
		require.NoError(t, err)
		equalEvents(t, durableAfter(evs, n), buffered(sub), fmt.Sprintf("after %d", n))
		sub.Close()
	}
}

// TestSeq_AfterUncleanStop (§6.1): a session whose last process did not
// close it may have had numbers given out above the last one logged (here:
// a log whose last batch has a Through above its events): the next process
// numbers above all of them.
func TestSeq_AfterUncleanStop(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	snap, err := store.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	require.NoError(t, store.LogEvents(ctx, "s", history.EventBatch{Through: 40})) // not final
	_ = snap
	s := newSession(t, offline.New(), session.Config{ID: "s", Store: store})
	sub, err := s.Subscribe(ctxT(t), session.SubscribeOptions{After: 41})
	require.NoError(t, err, "a number the stopped process may have given is accepted")
	require.NoError(t, wait(t, mustPrompt(t, s, "hello")).Err)
	evs := drainUntilTurnFinished(t, sub)
	assert.Greater(t, evs[0].Seq, uint64(40)+1<<32, "numbering jumps past what the stopped process could have given")
}

// gatedLog is a memstore whose event log writes wait for the gate.
type gatedLog struct {
	*memstore.Store
	gate chan struct{}
}

func (g gatedLog) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	<-g.gate
	return g.Store.LogEvents(ctx, id, b)
}

// TestSeq_UnloggedEventsStayRetained (§6.1): events the log does not hold
// yet are never trimmed from memory, however few Config.EventHistory
// keeps, so a subscriber can resume from any of them while the log lags.
func TestSeq_UnloggedEventsStayRetained(t *testing.T) {
	store := gatedLog{Store: memstore.New(), gate: make(chan struct{})}
	s := newSession(t, offline.New(), session.Config{EventHistory: 2, Store: store})
	t.Cleanup(func() { close(store.gate) }) // before the session's Close
	rec := record(t, s)
	for i := range 3 {
		require.NoError(t, wait(t, mustPrompt(t, s, fmt.Sprintf("note %d", i))).Err)
	}
	evs := rec.until(t, func(evs []session.Event) bool {
		n := 0
		for _, ev := range evs {
			if te, ok := ev.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
				n++
			}
		}
		return n == 3
	})
	require.Greater(t, len(durableAfter(evs, 0)), 4, "more durable events than memory keeps")
	sub, err := s.Subscribe(ctxT(t), session.SubscribeOptions{After: evs[0].Seq})
	require.NoError(t, err)
	equalEvents(t, durableAfter(evs, evs[0].Seq), buffered(sub), "while the log lags")
	sub.Close()
}

// reserveCounter is a SQLite store that records the reservations made
// with its leases and counts the writes of the leases' stores that record
// a start of numbering by themselves (ReserveSeqs, empty LogEvents batches).
type reserveCounter struct {
	*sqlite.Store
	made     []history.SeqReservation
	separate atomic.Int64
}

func (c *reserveCounter) AcquireReserving(ctx context.Context, id string, gap uint64) (history.Lease, history.SeqReservation, error) {
	l, r, err := c.Store.AcquireReserving(ctx, id, gap)
	if err != nil {
		return nil, r, err
	}
	c.made = append(c.made, r)
	return countedLease{l, c}, r, nil
}

type countedLease struct {
	history.Lease
	c *reserveCounter
}

func (l countedLease) Store() history.Store { return countedLog{l.Lease.Store(), l.c} }

type countedLog struct {
	history.Store
	c *reserveCounter
}

func (s countedLog) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	if len(b.Events) == 0 {
		s.c.separate.Add(1)
	}
	return s.Store.(history.EventLog).LogEvents(ctx, id, b)
}

func (s countedLog) Events(ctx context.Context, id string, after uint64, limit int) ([]history.LoggedEvent, error) {
	return s.Store.(history.EventLog).Events(ctx, id, after, limit)
}

func (s countedLog) ReserveSeqs(ctx context.Context, id string, gap uint64) (history.SeqReservation, error) {
	s.c.separate.Add(1)
	return s.Store.(history.SeqReserver).ReserveSeqs(ctx, id, gap)
}

// TestSeq_ReservedWithTheLease: on a store that reserves with its lease
// (SQLite), reopening a session records where its numbers start in the
// lease's transaction, 2^32 above the last recorded number, and writes no
// reservation of its own; its numbers lie above it.
func TestSeq_ReservedWithTheLease(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c := &reserveCounter{Store: st}
	ctx := context.Background()
	cfg := session.Config{Provider: offline.New(), Store: c}
	s, err := session.New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, wait(t, mustPrompt(t, s, "one")).Err)
	require.NoError(t, s.Close())
	require.Equal(t, []history.SeqReservation{{}}, c.made, "a new session: nothing reserved")
	snap, err := st.Load(ctx, s.ID())
	require.NoError(t, err)
	last := snap.LastSeq

	cfg.ID = s.ID()
	c.separate.Store(0)
	s, err = session.Open(ctx, cfg)
	require.NoError(t, err)
	assert.Zero(t, c.separate.Load(), "Open wrote no reservation of its own")
	require.Len(t, c.made, 2)
	assert.Equal(t, history.SeqReservation{Found: true, Last: last, Start: last + 1<<32}, c.made[1])
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	require.NoError(t, err)
	require.NoError(t, wait(t, mustPrompt(t, s, "two")).Err)
	ev := <-sub.Events()
	assert.Greater(t, ev.Seq, last+1<<32, "numbered above the reservation")
	sub.Close()
	require.NoError(t, s.Close())
}
