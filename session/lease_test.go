package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// sharedStore is a memstore with the lease contract of history.Leaser, as a
// store shared by several processes has it (history/postgres is the real
// one; its own tests cover the database side). takeOver plays another
// process taking a session over.
type sharedStore struct {
	history.Store
	mu      sync.Mutex
	current map[string]*testLease // the live lease of each session
	tokens  map[string]uint64
	refused int // Acquire calls refused because the session was held
}

func newSharedStore() *sharedStore {
	return &sharedStore{Store: memstore.New(), current: map[string]*testLease{}, tokens: map[string]uint64{}}
}

var _ history.Leaser = (*sharedStore)(nil)

type testLease struct {
	st    *sharedStore
	id    string
	token uint64
	lost  chan struct{}
}

func (s *sharedStore) Acquire(_ context.Context, id string) (history.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.current[id]; cur != nil {
		s.refused++
		return nil, &history.LeaseError{Session: id, Holder: fmt.Sprintf("holder-%d", cur.token), Expires: time.Now().Add(time.Minute)}
	}
	s.tokens[id]++
	l := &testLease{st: s, id: id, token: s.tokens[id], lost: make(chan struct{})}
	s.current[id] = l
	return l, nil
}

// AcquireReserving is Acquire, then the reservation of the session's
// sequence numbers when it exists (the real stores make both in one
// transaction).
func (s *sharedStore) AcquireReserving(ctx context.Context, id string, gap uint64) (history.Lease, history.SeqReservation, error) {
	l, err := s.Acquire(ctx, id)
	if err != nil {
		return nil, history.SeqReservation{}, err
	}
	r, err := s.Store.ReserveSeqs(ctx, id, gap)
	switch {
	case errors.Is(err, history.ErrNotFound):
		return l, history.SeqReservation{}, nil
	case err != nil:
		_ = l.Release(ctx)
		return nil, history.SeqReservation{}, err
	}
	return l, r, nil
}

// ReadLease reads the live lease of session id, nil when none.
func (s *sharedStore) ReadLease(_ context.Context, id string) (*history.LeaseInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.current[id]; cur != nil {
		return &history.LeaseInfo{Session: id, Holder: fmt.Sprintf("holder-%d", cur.token), Expires: time.Now().Add(time.Minute)}, nil
	}
	return nil, nil
}

// refusals is how many Acquire calls were refused so far.
func (s *sharedStore) refusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// takeOver gives session id to a new holder, as another process does after
// the current holder's lease expired: the old lease is lost.
func (s *sharedStore) takeOver(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.current[id]; cur != nil {
		close(cur.lost)
	}
	s.tokens[id]++
	s.current[id] = &testLease{st: s, id: id, token: s.tokens[id], lost: make(chan struct{})}
}

// fenced reports ErrFenced unless l is the session's current lease.
func (l *testLease) fenced(id string) error {
	if id != l.id {
		return fmt.Errorf("%w: lease of %q used for %q", history.ErrInvalid, l.id, id)
	}
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	if cur := l.st.current[l.id]; cur != l {
		return history.ErrFenced
	}
	return nil
}

func (l *testLease) Session() string       { return l.id }
func (l *testLease) Token() uint64         { return l.token }
func (l *testLease) Lost() <-chan struct{} { return l.lost }
func (l *testLease) Store() history.Store  { return fencedStore{l.st.Store, l} }
func (l *testLease) Release(context.Context) error {
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	if l.st.current[l.id] == l {
		delete(l.st.current, l.id)
	}
	return nil
}

// fencedStore checks the lease before every write. (The real store checks
// in the write's own transaction; here the test controls every step.)
type fencedStore struct {
	history.Store
	l *testLease
}

func (f fencedStore) Create(ctx context.Context, n history.NewSession) (*history.Snapshot, error) {
	if err := f.l.fenced(n.ID); err != nil {
		return nil, err
	}
	return f.Store.Create(ctx, n)
}

func (f fencedStore) Append(ctx context.Context, id string, v uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, err
	}
	return f.Store.Append(ctx, id, v, msgs, usage...)
}

func (f fencedStore) SetConfig(ctx context.Context, id string, v uint64, c json.RawMessage) (uint64, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, err
	}
	return f.Store.SetConfig(ctx, id, v, c)
}

func (f fencedStore) BeginCompaction(ctx context.Context, id string, v uint64, rec history.CompactionRecord) (uint64, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, err
	}
	return f.Store.BeginCompaction(ctx, id, v, rec)
}

func (f fencedStore) FinishCompaction(ctx context.Context, id string, v uint64, cid string, st history.CompactionStatus, e string, at time.Time) (uint64, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, err
	}
	return f.Store.FinishCompaction(ctx, id, v, cid, st, e, at)
}

func (f fencedStore) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, nil, err
	}
	return f.Store.CommitCompaction(ctx, id, v, c)
}

func (f fencedStore) Recover(ctx context.Context, id string, v uint64, at time.Time) (uint64, []string, error) {
	if err := f.l.fenced(id); err != nil {
		return 0, nil, err
	}
	return f.Store.Recover(ctx, id, v, at)
}

func leasedConfig(t *testing.T, st history.Store, fake *providertest.Fake, id string) session.Config {
	return session.Config{ID: id, Store: st, Provider: fake, Logger: zaptest.NewLogger(t)}
}

func TestLease_SecondNewFailsFast(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	first := newSession(t, fake, leasedConfig(t, st, fake, "s1"))

	start := time.Now()
	_, err := session.New(ctxT(t), leasedConfig(t, st, fake, "s1"))
	require.ErrorIs(t, err, history.ErrLeased)
	var le *history.LeaseError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "s1", le.Session)
	assert.Less(t, time.Since(start), waitLimit/2, "it fails at once, not after a timeout")

	// The first session is unaffected and another session ID is free.
	wait(t, mustPrompt(t, first, "still mine"))
	newSession(t, fake, leasedConfig(t, st, fake, "s2"))
}

func TestLease_WaitForLease(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	first, err := session.New(ctxT(t), leasedConfig(t, st, fake, "s1"))
	require.NoError(t, err)
	wait(t, mustPrompt(t, first, "hello"))

	// Waiting ends with ctx while the first holds the session.
	short, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	cfg := leasedConfig(t, st, fake, "s1")
	cfg.WaitForLease = true
	_, err = session.New(short, cfg)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, history.ErrLeased)

	// It succeeds once the first closes (Close releases the lease).
	// The first is closed only once the second New was refused the lease
	// and is still waiting for it: the wait is proven to happen.
	refusedBefore := st.refusals()
	opened := make(chan *session.Session, 1)
	go func() {
		s, err := session.New(ctxT(t), cfg)
		assert.NoError(t, err)
		opened <- s
	}()
	poll.For(t, func() bool { return st.refusals() > refusedBefore }, "the second New asking for the lease the first holds")
	select {
	case <-opened:
		t.Fatal("the second New returned while the first held the lease")
	default:
	}
	require.NoError(t, first.Close())
	second := <-opened
	require.NotNil(t, second)
	defer second.Close()
	active, err := second.Active(ctxT(t))
	require.NoError(t, err)
	require.NotEmpty(t, active, "the second holder sees what the first wrote")
	assert.Equal(t, "hello", active[0].Text)
}

// TestLease_RecoveryOnlyUnderLease: a compaction in progress in another
// process is not recorded as interrupted by a process that cannot get the
// lease; it is once the lease is free.
func TestLease_RecoveryOnlyUnderLease(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	ctx := ctxT(t)
	other, err := st.Acquire(ctx, "s1")
	require.NoError(t, err)
	ost := other.Store()
	snap, err := ost.Create(ctx, history.NewSession{ID: "s1"})
	require.NoError(t, err)
	_, err = ost.BeginCompaction(ctx, "s1", snap.Version, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(t, err)

	_, err = session.New(ctx, leasedConfig(t, st, fake, "s1"))
	require.ErrorIs(t, err, history.ErrLeased)
	loaded, err := st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, []string{"c1"}, loaded.Interrupted, "the live holder's compaction is left alone")

	require.NoError(t, other.Release(ctx))
	s := newSession(t, fake, leasedConfig(t, st, fake, "s1"))
	require.NotNil(t, s)
	loaded, err = st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Empty(t, loaded.Interrupted, "recovered by the new holder")
}

// TestLease_LostClosesSession: when another process takes the session over,
// the session closes itself; its commands end with ErrLeaseLost and it
// writes nothing more.
func TestLease_LostClosesSession(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "late reply", Gate: gate})
	s := newSession(t, fake, leasedConfig(t, st, fake, "s1"))
	turn := mustPrompt(t, s, "first")
	queued := mustPrompt(t, s, "second")
	require.NoError(t, fake.WaitCalls(ctxT(t), 1))
	before, err := st.Load(ctxT(t), "s1")
	require.NoError(t, err)

	st.takeOver("s1")
	select {
	case <-s.Done():
	case <-time.After(waitLimit):
		t.Fatal("the session did not close after losing its lease")
	}
	close(gate)
	for _, h := range []*session.Handle[session.TurnResult]{turn, queued} {
		res := wait(t, h)
		require.ErrorIs(t, res.Err, session.ErrLeaseLost)
		require.ErrorIs(t, res.Err, session.ErrClosed)
		require.ErrorIs(t, res.Err, history.ErrFenced)
	}
	_, err = s.Prompt(ctxT(t), session.PromptRequest{Text: "after"})
	require.ErrorIs(t, err, session.ErrClosed)
	require.ErrorIs(t, err, session.ErrLeaseLost, "admission says why")

	after, err := st.Load(ctxT(t), "s1")
	require.NoError(t, err)
	assert.Equal(t, before.Version, after.Version, "the stale holder wrote nothing after the takeover")
	assert.Equal(t, before.Active, after.Active)
}

func TestLease_CloseReleases(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	s, err := session.New(ctxT(t), leasedConfig(t, st, fake, "s1"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	l, err := st.Acquire(ctxT(t), "s1")
	require.NoError(t, err, "Close released the lease")
	require.NoError(t, l.Release(ctxT(t)))
}

// TestLease_FailedOpenReleases: a New that fails after taking the lease
// gives it back.
func TestLease_FailedOpenReleases(t *testing.T) {
	st, fake := newSharedStore(), providertest.New()
	ctx := ctxT(t)
	_, err := st.Store.Create(ctx, history.NewSession{ID: "s1", Config: json.RawMessage(`{"max_steps": "not a number"}`)})
	require.NoError(t, err)
	_, err = session.New(ctx, leasedConfig(t, st, fake, "s1"))
	require.Error(t, err)
	require.False(t, errors.Is(err, history.ErrLeased))
	l, err := st.Acquire(ctx, "s1")
	require.NoError(t, err, "the failed New released the lease")
	require.NoError(t, l.Release(ctx))
}
