package historytest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// LeaseStore is a store with leases, as the lease cases test it.
type LeaseStore interface {
	history.Store
	history.Leaser
	Close() error
}

// LeaseHarness makes stores with leases for [Harness.Leases].
type LeaseHarness struct {
	// New makes a fresh, empty set of data (a database, a file) and returns
	// a function that opens stores on it, as separate processes would:
	// holder names the store's leases and ttl is their TTL (0 = the
	// store's default). The harness closes the stores it opens.
	New func(t *testing.T) func(holder string, ttl time.Duration) LeaseStore
	// StopRenewals makes the holder of l stop renewing it without
	// releasing it, as a stalled process would.
	StopRenewals func(l history.Lease)
}

// shortTTL is the lease TTL of the cases that wait for an expiry. A holder
// renews every third of it, so a renewal may come up to two thirds late
// before the lease expires: 400 ms, which a 2-core machine running the
// race detector beside other packages' tests has been seen to need
// (300 ms, a 200 ms margin, lost a renewing holder's lease once).
const shortTTL = 600 * time.Millisecond

// RunLeaser runs the lease cases alone.
//
// Deprecated: set [Harness.Leases] and call [Run], which runs them with
// the rest of the suite.
func RunLeaser(t *testing.T, h LeaseHarness) { runLeaser(t, h) }

// runLeaser runs the conformance cases of [history.Leaser]: racing
// acquires, fencing, expiry and takeover, release, the store's own writes
// on a leased session, tokens, malformed calls, Delete of a leased
// session, leases read without being taken ([history.Leaser.ReadLease])
// and sequence numbers reserved in the transaction that takes the lease
// ([history.Leaser.AcquireReserving]).
func runLeaser(t *testing.T, h LeaseHarness) {
	runCases(t, h, []testCase[LeaseHarness]{
		{"AcquireRace", testAcquireRace},
		{"LeasedWritersNeverInterleave", testLeasedWritersNeverInterleave},
		{"TakeoverAfterExpiry", testLeaseTakeoverAfterExpiry},
		{"ReleaseLetsAnotherAcquire", testReleaseLetsAnotherAcquire},
		{"UnfencedStoreRefusedOnLeasedSession", testUnfencedStoreRefusedOnLeasedSession},
		{"TokensIncrease", testTokensIncrease},
		{"Malformed", testLeaseMalformed},
		{"AcquireReserving", testAcquireReserving},
		{"ReadLease", testReadLease},
		{"DeleteLeased", testDeleteLeased},
	})
}

// pair opens two stores of h on the same data, holders "a" and "b", with
// lease TTL ttl (0: the store's default).
func (h LeaseHarness) pair(t *testing.T, ttl time.Duration) (a, b LeaseStore) {
	open := h.New(t)
	return open("a", ttl), open("b", ttl)
}

// created creates session id through lease l and fails the test otherwise.
func created(t *testing.T, l history.Lease, id string) *history.Snapshot {
	t.Helper()
	snap, err := l.Store().Create(context.Background(), history.NewSession{ID: id})
	require.NoError(t, err)
	return snap
}

// acquire takes the lease of id and fails the test otherwise.
func acquire(t testing.TB, s history.Leaser, id string) history.Lease {
	t.Helper()
	l, err := s.Acquire(context.Background(), id)
	require.NoError(t, err)
	return l
}

// LeaseError asserts that err is a *history.LeaseError of session id held
// by holder, and returns it.
func LeaseError(t *testing.T, err error, id, holder string) *history.LeaseError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, history.ErrLeased)
	var le *history.LeaseError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, id, le.Session)
	assert.Equal(t, holder, le.Holder)
	return le
}

// Closed reports whether ch is closed within d.
func Closed(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func testAcquireRace(t *testing.T, h LeaseHarness) {
	t.Parallel()
	open := h.New(t)
	const n = 6
	stores := make([]LeaseStore, n)
	for i := range stores {
		stores[i] = open(fmt.Sprintf("h%d", i), 0)
	}
	for round := range 3 {
		id := fmt.Sprintf("s%d", round)
		var (
			wg     sync.WaitGroup
			leases = make([]history.Lease, n)
			errs   = make([]error, n)
			start  = make(chan struct{})
		)
		for i := range n {
			wg.Go(func() {
				<-start
				leases[i], errs[i] = stores[i].Acquire(context.Background(), id)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range n {
			if errs[i] == nil {
				require.Equal(t, -1, winner, "two holders won")
				winner = i
			}
		}
		require.NotEqual(t, -1, winner, "nobody won: %v", errs)
		for i := range n {
			if i != winner {
				le := LeaseError(t, errs[i], id, fmt.Sprintf("h%d", winner))
				assert.True(t, le.Expires.After(time.Now().Add(-time.Minute)))
			}
		}
		assert.EqualValues(t, 1, leases[winner].Token())
		assert.Equal(t, id, leases[winner].Session())
		require.NoError(t, leases[winner].Release(context.Background()))
	}
}

// testLeasedWritersNeverInterleave runs writers with a Store (a pool) each,
// as separate processes would, that take turns on one session: each takes
// the lease, loads, appends a run of messages one call at a time, and
// releases. The stored history must be whole runs, one after another.
func testLeasedWritersNeverInterleave(t *testing.T, h LeaseHarness) {
	t.Parallel()
	open := h.New(t)
	const writers, rounds, run = 4, 5, 3
	var (
		wg      sync.WaitGroup
		inside  atomic.Int32
		overlap atomic.Bool
		errs    = make(chan error, writers)
	)
	for w := range writers {
		s := open(fmt.Sprintf("w%d", w), 0)
		wg.Go(func() {
			errs <- func() error {
				ctx := context.Background()
				for r := 0; r < rounds; {
					l, err := s.Acquire(ctx, "shared")
					if errors.Is(err, history.ErrLeased) {
						time.Sleep(time.Millisecond)
						continue
					}
					if err != nil {
						return err
					}
					if inside.Add(1) != 1 {
						overlap.Store(true)
					}
					st := l.Store()
					snap, err := st.Load(ctx, "shared")
					if errors.Is(err, history.ErrNotFound) {
						snap, err = st.Create(ctx, history.NewSession{ID: "shared"})
					}
					if err != nil {
						return err
					}
					v := snap.Version
					for j := range run {
						msg := Msg(fmt.Sprintf("w%d-r%d-%d", w, r, j), j)
						if v, err = st.Append(ctx, "shared", v, []history.Message{msg}); err != nil {
							return err
						}
					}
					inside.Add(-1)
					if err := l.Release(ctx); err != nil {
						return err
					}
					r++
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.False(t, overlap.Load(), "two writers held the lease at once")
	s := open("reader", 0)
	snap, err := s.Load(context.Background(), "shared")
	require.NoError(t, err)
	require.Len(t, snap.Active, writers*rounds*run)
	seen := map[string]bool{}
	for i := 0; i < len(snap.Active); i += run {
		prefix := strings.TrimSuffix(snap.Active[i].ID, "-0")
		require.False(t, seen[prefix], "run %s stored twice", prefix)
		seen[prefix] = true
		for j := range run {
			require.Equal(t, fmt.Sprintf("%s-%d", prefix, j), snap.Active[i+j].ID, "runs interleaved at %d", i+j)
		}
	}
}

// testLeaseTakeoverAfterExpiry: a holder that stops renewing loses its
// session to another process after the TTL; its writes are then fenced and
// change nothing, and its Lost channel closes.
func testLeaseTakeoverAfterExpiry(t *testing.T, h LeaseHarness) {
	t.Parallel()
	a, b := h.pair(t, shortTTL)
	ctx := context.Background()
	la := acquire(t, a, "s")
	snap := created(t, la, "s")
	v, err := la.Store().Append(ctx, "s", snap.Version, Msgs("a", 2))
	require.NoError(t, err)

	// While a renews, b cannot take the session, even after several TTLs.
	deadline := time.Now().Add(3 * shortTTL)
	for time.Now().Before(deadline) {
		_, err := b.Acquire(ctx, "s")
		le := LeaseError(t, err, "s", "a")
		assert.True(t, le.Expires.After(time.Now().Add(-time.Second)), "expiry %v", le.Expires)
		time.Sleep(shortTTL / 4)
	}
	assert.False(t, Closed(la.Lost(), 0))

	// a stops renewing (a stalled process); b takes over after the expiry.
	h.StopRenewals(la)
	var lb history.Lease
	require.Eventually(t, func() bool {
		lb, err = b.Acquire(ctx, "s")
		return err == nil
	}, 5*shortTTL, shortTTL/10)
	assert.Greater(t, lb.Token(), la.Token())

	// a's writes are fenced by the database and change nothing.
	assert.False(t, Closed(la.Lost(), 0), "a has not noticed yet")
	{
		el := la.Store()
		// First, so that the database's token check refuses it (not the
		// lease's own record of a loss a write revealed).
		err = el.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{{Seq: 1, Kind: "turn"}}, Through: 1})
		assert.ErrorIs(t, err, history.ErrFenced, "a stale holder's event log write")
	}
	_, err = la.Store().Append(ctx, "s", v, Msgs("stale", 1))
	require.ErrorIs(t, err, history.ErrFenced)
	assert.True(t, Closed(la.Lost(), 0), "a fenced write reveals the loss")
	_, err = la.Store().SetConfig(ctx, "s", v, nil)
	assert.ErrorIs(t, err, history.ErrFenced)
	_, _, err = la.Store().Recover(ctx, "s", v, time.Now())
	assert.ErrorIs(t, err, history.ErrFenced)
	err = la.Store().RecordUsage(ctx, "s", []history.UsageRecord{usageRec("stale", "turn", 1, 1)})
	assert.ErrorIs(t, err, history.ErrFenced, "a stale holder's usage record")
	err = la.Store().PutVectors(ctx, "s", []history.MessageVector{{Position: positions(t, b, "s")["a-0"], MessageID: "a-0", Vector: []float32{1}}})
	assert.ErrorIs(t, err, history.ErrFenced, "a stale holder's vectors")
	if left, err := b.Unembedded(ctx, "s", -1, 10); assert.NoError(t, err) {
		assert.Len(t, left, 2, "the fenced vector write changed nothing")
	}
	if used, err := b.Usage(ctx, "s"); assert.NoError(t, err) {
		assert.Empty(t, used, "the fenced usage write changed nothing")
	}
	loaded, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, loaded.Version)
	assert.Equal(t, []string{"a-0", "a-1"}, ids(loaded.Active))
	assert.Zero(t, loaded.LastSeq, "the fenced log write changed nothing")

	// b writes through its lease; a's release does not disturb it.
	v, err = lb.Store().Append(ctx, "s", v, Msgs("b", 1))
	require.NoError(t, err)
	require.NoError(t, la.Release(ctx))
	_, err = lb.Store().Append(ctx, "s", v, Msgs("b2", 1))
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
}

func testReleaseLetsAnotherAcquire(t *testing.T, h LeaseHarness) {
	t.Parallel()
	a, b := h.pair(t, 0)
	ctx := context.Background()
	la := acquire(t, a, "s")
	snap := created(t, la, "s")
	_, err := b.Acquire(ctx, "s")
	LeaseError(t, err, "s", "a")

	require.NoError(t, la.Release(ctx))
	require.NoError(t, la.Release(ctx), "releasing twice is a no-op")
	assert.False(t, Closed(la.Lost(), 0), "a released lease is not lost")
	lb := acquire(t, b, "s") // at once: the default TTL is 15 s
	assert.Greater(t, lb.Token(), la.Token())

	_, err = la.Store().Append(ctx, "s", snap.Version, Msgs("a", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	_, err = lb.Store().Append(ctx, "s", snap.Version, Msgs("b", 1))
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
}

// testUnfencedStoreRefusedOnLeasedSession: the store's own writes, which
// check no token, fail on a session that anyone holds (this process
// included), and work on the others and once the lease is released.
func testUnfencedStoreRefusedOnLeasedSession(t *testing.T, h LeaseHarness) {
	t.Parallel()
	open := h.New(t)
	a := open("a", 0)
	other := open("other", 0)
	ctx := context.Background()
	l := acquire(t, a, "s")
	snap := created(t, l, "s")
	v, err := l.Store().Append(ctx, "s", snap.Version, Msgs("m", 2))
	require.NoError(t, err)
	v, err = l.Store().BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress})
	require.NoError(t, err)
	acquire(t, a, "new") // leased before it exists

	for _, s := range []LeaseStore{a, other} {
		_, err = s.Create(ctx, history.NewSession{ID: "new"})
		LeaseError(t, err, "new", "a")
		_, err = s.Create(ctx, history.NewSession{ID: "s"})
		LeaseError(t, err, "s", "a")
		_, err = s.Append(ctx, "s", v, Msgs("x", 1))
		LeaseError(t, err, "s", "a")
		_, err = s.SetConfig(ctx, "s", v, nil)
		LeaseError(t, err, "s", "a")
		_, err = s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "d", Trigger: "auto", Status: history.StatusInProgress})
		LeaseError(t, err, "s", "a")
		_, err = s.FinishCompaction(ctx, "s", v, "c", history.StatusFailed, "x", time.Now())
		LeaseError(t, err, "s", "a")
		_, _, err = s.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: 1, Summary: "x"})
		LeaseError(t, err, "s", "a")
		_, _, err = s.Recover(ctx, "s", v, time.Now())
		LeaseError(t, err, "s", "a")
		LeaseError(t, s.LogEvents(ctx, "s", history.EventBatch{Through: 1}), "s", "a")
		LeaseError(t, s.PutVectors(ctx, "s", nil), "s", "a")
		_, err = s.Append(ctx, "s", v+100, Msgs("x", 1))
		LeaseError(t, err, "s", "a") // the lease is reported before the conflict
		// Reads work.
		loaded, err := s.Load(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, v, loaded.Version)
		assert.Equal(t, []string{"c"}, loaded.Interrupted)
	}
	// Sessions nobody holds are writable as usual.
	snap, err = other.Create(ctx, history.NewSession{ID: "free"})
	require.NoError(t, err)
	_, err = other.Append(ctx, "free", snap.Version, Msgs("m", 1))
	require.NoError(t, err)

	require.NoError(t, l.Release(ctx))
	v, ids, err := other.Recover(ctx, "s", v, time.Now())
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, ids)
	_, err = other.Append(ctx, "s", v, Msgs("x", 1))
	require.NoError(t, err)
}

func testTokensIncrease(t *testing.T, h LeaseHarness) {
	t.Parallel()
	a, b := h.pair(t, shortTTL)
	ctx := context.Background()
	var last uint64
	for i := range 4 {
		l := acquire(t, []LeaseStore{a, b}[i%2], "s")
		assert.Greater(t, l.Token(), last)
		last = l.Token()
		require.NoError(t, l.Release(ctx))
	}
	// A takeover after an expiry increments the token too.
	l := acquire(t, a, "s")
	h.StopRenewals(l)
	require.Eventually(t, func() bool {
		l2, err := b.Acquire(ctx, "s")
		if err != nil {
			return false
		}
		assert.Equal(t, l.Token()+1, l2.Token())
		assert.NoError(t, l2.Release(ctx))
		return true
	}, 5*shortTTL, shortTTL/10)
	// Other sessions have tokens of their own.
	assert.EqualValues(t, 1, acquire(t, a, "t").Token())
}

func testLeaseMalformed(t *testing.T, h LeaseHarness) {
	t.Parallel()
	s := h.New(t)("a", 0)
	ctx := context.Background()
	_, err := s.Acquire(ctx, "")
	assert.ErrorIs(t, err, history.ErrInvalid)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Acquire(cancelled, "s")
	assert.ErrorIs(t, err, context.Canceled)

	l := acquire(t, s, "s")
	_, err = s.Create(ctx, history.NewSession{ID: "o"})
	require.NoError(t, err)
	st := l.Store()
	_, err = st.Create(ctx, history.NewSession{ID: "o2"})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.Append(ctx, "o", 1, Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.SetConfig(ctx, "o", 1, nil)
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.BeginCompaction(ctx, "o", 1, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.FinishCompaction(ctx, "o", 1, "c", history.StatusFailed, "", time.Now())
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, _, err = st.CommitCompaction(ctx, "o", 1, history.Commit{CompactID: "c", SegmentID: "g", Archive: 1, Summary: "x"})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, _, err = st.Recover(ctx, "o", 1, time.Now())
	assert.ErrorIs(t, err, history.ErrInvalid)
	// Reads of any session pass through.
	_, err = st.Load(ctx, "o")
	require.NoError(t, err)
	_, err = st.Segments(ctx, "o")
	require.NoError(t, err)
	_, err = st.Timeline(ctx, "o")
	require.NoError(t, err)
	_, err = st.Load(ctx, "s")
	assert.ErrorIs(t, err, history.ErrNotFound)
	// Invalid writes to the leased session are ErrInvalid, not fenced.
	_, err = st.Create(ctx, history.NewSession{ID: "s", Config: []byte("{")})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.Append(ctx, "s", 1, nil)
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = st.Append(ctx, "s", 1, Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrNotFound)

	require.NoError(t, s.Close())
	_, err = st.Append(ctx, "s", 1, Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = st.Load(ctx, "s")
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Acquire(ctx, "t")
	assert.ErrorIs(t, err, history.ErrClosed)
	require.NoError(t, l.Release(ctx), "Close released it")
}
