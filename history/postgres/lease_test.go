package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// shortTTL is the lease TTL of the tests that wait for an expiry.
const shortTTL = 300 * time.Millisecond

// acquire takes the lease of id and fails the test otherwise.
func acquire(t testing.TB, s *Store, id string) *lease {
	t.Helper()
	l, err := s.Acquire(context.Background(), id)
	require.NoError(t, err)
	return l.(*lease)
}

// leaseError asserts that err is a *history.LeaseError of session id held
// by holder, and returns it.
func leaseError(t *testing.T, err error, id, holder string) *history.LeaseError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, history.ErrLeased)
	var le *history.LeaseError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, id, le.Session)
	assert.Equal(t, holder, le.Holder)
	return le
}

// closed reports whether ch is closed within d.
func closed(ch <-chan struct{}, d time.Duration) bool {
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

// waitForLockWaiters waits until n backends of s's database wait for a lock.
func waitForLockWaiters(t *testing.T, s *Store, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting int
		err := s.pool.QueryRow(context.Background(), `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == n
	}, 10*time.Second, 5*time.Millisecond)
}

func TestAcquireRace(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = openStore(t, url, WithHolder(fmt.Sprintf("h%d", i)))
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
				le := leaseError(t, errs[i], id, fmt.Sprintf("h%d", winner))
				assert.True(t, le.Expires.After(time.Now().Add(-time.Minute)))
			}
		}
		assert.EqualValues(t, 1, leases[winner].Token())
		assert.Equal(t, id, leases[winner].Session())
		require.NoError(t, leases[winner].Release(context.Background()))
	}
}

// TestLeasedWritersNeverInterleave runs writers with a Store (a pool) each,
// as separate processes would, that take turns on one session: each takes
// the lease, loads, appends a run of messages one call at a time, and
// releases. The stored history must be whole runs, one after another.
func TestLeasedWritersNeverInterleave(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	const writers, rounds, run = 4, 5, 3
	var (
		wg      sync.WaitGroup
		inside  atomic.Int32
		overlap atomic.Bool
		errs    = make(chan error, writers)
	)
	for w := range writers {
		s := openStore(t, url, WithHolder(fmt.Sprintf("w%d", w)))
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
						msg := historytest.Msg(fmt.Sprintf("w%d-r%d-%d", w, r, j), j)
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
	s := openStore(t, url)
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

// TestLeaseTakeoverAfterExpiry: a holder that stops renewing loses its
// session to another process after the TTL; its writes are then fenced and
// change nothing, and its Lost channel closes.
func TestLeaseTakeoverAfterExpiry(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("a"))
	b := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("b"))
	ctx := context.Background()
	la := acquire(t, a, "s")
	snap, err := la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := la.Store().Append(ctx, "s", snap.Version, historytest.Msgs("a", 2))
	require.NoError(t, err)

	// While a renews, b cannot take the session, even after several TTLs.
	deadline := time.Now().Add(3 * shortTTL)
	for time.Now().Before(deadline) {
		_, err := b.Acquire(ctx, "s")
		le := leaseError(t, err, "s", "a")
		assert.True(t, le.Expires.After(time.Now().Add(-time.Second)), "expiry %v", le.Expires)
		time.Sleep(shortTTL / 4)
	}
	assert.False(t, closed(la.Lost(), 0))

	// a stops renewing (a stalled process); b takes over after the expiry.
	la.stopRenewals()
	var lb history.Lease
	require.Eventually(t, func() bool {
		lb, err = b.Acquire(ctx, "s")
		return err == nil
	}, 5*shortTTL, shortTTL/10)
	assert.Greater(t, lb.Token(), la.Token())

	// a's writes are fenced by the database and change nothing.
	assert.False(t, closed(la.Lost(), 0), "a has not noticed yet")
	_, err = la.Store().Append(ctx, "s", v, historytest.Msgs("stale", 1))
	require.ErrorIs(t, err, history.ErrFenced)
	assert.True(t, closed(la.Lost(), 0), "a fenced write reveals the loss")
	_, err = la.Store().SetConfig(ctx, "s", v, nil)
	assert.ErrorIs(t, err, history.ErrFenced)
	_, _, err = la.Store().Recover(ctx, "s", v, time.Now())
	assert.ErrorIs(t, err, history.ErrFenced)
	loaded, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, loaded.Version)
	assert.Equal(t, []string{"a-0", "a-1"}, ids(loaded.Active))

	// b writes through its lease; a's release does not disturb it.
	v, err = lb.Store().Append(ctx, "s", v, historytest.Msgs("b", 1))
	require.NoError(t, err)
	require.NoError(t, la.Release(ctx))
	_, err = lb.Store().Append(ctx, "s", v, historytest.Msgs("b2", 1))
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
}

// TestLeaseLostWhenRenewalsFail: a holder that cannot reach the database
// declares its lease lost by the TTL, without anyone taking it over.
func TestLeaseLostWhenRenewalsFail(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithLeaseTTL(shortTTL))
	ctx := context.Background()
	l := acquire(t, s, "s")
	_, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	l.blockRenewals.Store(true)
	start := time.Now()
	require.True(t, closed(l.Lost(), 5*shortTTL), "Lost was not closed")
	assert.Less(t, time.Since(start), 2*shortTTL, "lost by the TTL")
	_, err = l.Store().Append(ctx, "s", 1, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	require.NoError(t, l.Release(ctx), "releasing a lost lease is a no-op")
	// The row expires by the database's clock and can be taken over.
	require.Eventually(t, func() bool {
		l2, err := s.Acquire(ctx, "s")
		if err == nil {
			assert.Greater(t, l2.Token(), l.Token())
			assert.NoError(t, l2.Release(ctx))
		}
		return err == nil
	}, 5*shortTTL, shortTTL/10)
}

// TestLeaseLostOnTakeoverSeenByRenewal: a renewal that finds another token
// declares the lease lost.
func TestLeaseLostOnTakeoverSeenByRenewal(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithLeaseTTL(shortTTL))
	ctx := context.Background()
	l := acquire(t, s, "s")
	_, err := s.pool.Exec(ctx, `UPDATE leases SET token = token + 1, holder = 'intruder' WHERE session_id = $1`, bin("s"))
	require.NoError(t, err)
	require.True(t, closed(l.Lost(), 2*shortTTL), "Lost was not closed")
	_, err = l.Store().Create(ctx, history.NewSession{ID: "s"})
	assert.ErrorIs(t, err, history.ErrFenced)
}

func TestReleaseLetsAnotherAcquire(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a := openStore(t, url, WithHolder("a"))
	b := openStore(t, url, WithHolder("b"))
	ctx := context.Background()
	la := acquire(t, a, "s")
	snap, err := la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = b.Acquire(ctx, "s")
	leaseError(t, err, "s", "a")

	require.NoError(t, la.Release(ctx))
	require.NoError(t, la.Release(ctx), "releasing twice is a no-op")
	assert.False(t, closed(la.Lost(), 0), "a released lease is not lost")
	lb := acquire(t, b, "s") // at once: the default TTL is 15 s
	assert.Greater(t, lb.Token(), la.Token())

	_, err = la.Store().Append(ctx, "s", snap.Version, historytest.Msgs("a", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	_, err = lb.Store().Append(ctx, "s", snap.Version, historytest.Msgs("b", 1))
	require.NoError(t, err)
	require.NoError(t, lb.Release(ctx))
}

// TestUnfencedStoreRefusedOnLeasedSession: the store's own writes, which
// check no token, fail on a session that anyone holds (this process
// included), and work on the others and once the lease is released.
func TestUnfencedStoreRefusedOnLeasedSession(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a := openStore(t, url, WithHolder("a"))
	other := openStore(t, url, WithHolder("other"))
	ctx := context.Background()
	l := acquire(t, a, "s")
	snap, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := l.Store().Append(ctx, "s", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)
	v, err = l.Store().BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: "auto", Status: history.StatusInProgress})
	require.NoError(t, err)
	acquire(t, a, "new") // leased before it exists

	for _, s := range []*Store{a, other} {
		_, err = s.Create(ctx, history.NewSession{ID: "new"})
		leaseError(t, err, "new", "a")
		_, err = s.Create(ctx, history.NewSession{ID: "s"})
		leaseError(t, err, "s", "a")
		_, err = s.Append(ctx, "s", v, historytest.Msgs("x", 1))
		leaseError(t, err, "s", "a")
		_, err = s.SetConfig(ctx, "s", v, nil)
		leaseError(t, err, "s", "a")
		_, err = s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "d", Trigger: "auto", Status: history.StatusInProgress})
		leaseError(t, err, "s", "a")
		_, err = s.FinishCompaction(ctx, "s", v, "c", history.StatusFailed, "x", time.Now())
		leaseError(t, err, "s", "a")
		_, _, err = s.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: 1, Summary: "x"})
		leaseError(t, err, "s", "a")
		_, _, err = s.Recover(ctx, "s", v, time.Now())
		leaseError(t, err, "s", "a")
		_, err = s.Append(ctx, "s", v+100, historytest.Msgs("x", 1))
		leaseError(t, err, "s", "a") // the lease is reported before the conflict
		// Reads work.
		loaded, err := s.Load(ctx, "s")
		require.NoError(t, err)
		assert.Equal(t, v, loaded.Version)
		assert.Equal(t, []string{"c"}, loaded.Interrupted)
	}
	// Sessions nobody holds are writable as usual.
	snap, err = other.Create(ctx, history.NewSession{ID: "free"})
	require.NoError(t, err)
	_, err = other.Append(ctx, "free", snap.Version, historytest.Msgs("m", 1))
	require.NoError(t, err)

	require.NoError(t, l.Release(ctx))
	v, ids, err := other.Recover(ctx, "s", v, time.Now())
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, ids)
	_, err = other.Append(ctx, "s", v, historytest.Msgs("x", 1))
	require.NoError(t, err)
}

func TestTokensIncrease(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a := openStore(t, url, WithLeaseTTL(shortTTL))
	b := openStore(t, url, WithLeaseTTL(shortTTL))
	ctx := context.Background()
	var last uint64
	for i := range 4 {
		l := acquire(t, []*Store{a, b}[i%2], "s")
		assert.Greater(t, l.Token(), last)
		last = l.Token()
		require.NoError(t, l.Release(ctx))
	}
	// A takeover after an expiry increments the token too.
	l := acquire(t, a, "s")
	l.stopRenewals()
	require.Eventually(t, func() bool {
		l2, err := b.Acquire(ctx, "s")
		if err != nil {
			return false
		}
		assert.Equal(t, l.Token()+1, l2.Token())
		assert.NoError(t, l2.Release(ctx))
		return true
	}, 5*shortTTL, shortTTL/10)
	// Other sessions have tokens of their own; no lease row is ever deleted.
	assert.EqualValues(t, 1, acquire(t, a, "t").Token())
	var rows int
	require.NoError(t, a.pool.QueryRow(ctx, `SELECT count(*) FROM leases`).Scan(&rows))
	assert.Equal(t, 2, rows)
}

func TestLeaseMalformed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
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
	_, err = st.Append(ctx, "o", 1, historytest.Msgs("m", 1))
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
	_, err = st.Append(ctx, "s", 1, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrNotFound)

	require.NoError(t, s.Close())
	_, err = st.Append(ctx, "s", 1, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = st.Load(ctx, "s")
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Acquire(ctx, "t")
	assert.ErrorIs(t, err, history.ErrClosed)
	require.NoError(t, l.Release(ctx), "Close released it")
}

// TestCloseReleasesLeases: closing a store stops the renewals of its leases
// (their goroutines return; pgtest.Main checks for leaks of the whole run)
// and releases them, so another process takes the sessions at once.
func TestCloseReleasesLeases(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := context.Background()
	a, err := Open(ctx, url, WithHolder("a"))
	require.NoError(t, err)
	la, lb := acquire(t, a, "s"), acquire(t, a, "t")
	_, err = a.Acquire(ctx, "s")
	leaseError(t, err, "s", "a") // another lease of the same process
	lc := acquire(t, a, "u")
	require.NoError(t, lc.Release(ctx))
	assert.True(t, closed(lc.Stopped(), 0), "Release stopped the renewals")
	require.NoError(t, a.Close())
	for _, l := range []*lease{la, lb} {
		assert.True(t, closed(l.Stopped(), 0), "Close stopped the renewals")
		assert.False(t, closed(l.Lost(), 0))
	}
	require.NoError(t, la.Release(ctx))

	b := openStore(t, url, WithHolder("b"))
	acquire(t, b, "s")
	acquire(t, b, "t")
}

// TestFencedWriteSerializesWithAcquire: a fenced write that has checked its
// token holds the lease row FOR SHARE until it ends, so an Acquire that
// takes the expired lease over waits for it, and the new holder sees the
// write.
func TestFencedWriteSerializesWithAcquire(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	a := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("a"))
	b := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("b"))
	ctx := context.Background()
	la := acquire(t, a, "s")
	la.stopRenewals()
	snap, err := la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)

	// Another transaction holds the session row: a's append checks its
	// token, then waits at its compare-and-swap.
	blocker, err := a.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(ctx) }()
	_, err = blocker.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, bin("s"))
	require.NoError(t, err)
	appended := make(chan error, 1)
	go func() {
		_, err := la.Store().Append(ctx, "s", snap.Version, historytest.Msgs("a", 1))
		appended <- err
	}()
	waitForLockWaiters(t, a, 1)
	time.Sleep(shortTTL + shortTTL/2) // a's lease expires meanwhile

	acquired := make(chan history.Lease, 1)
	go func() {
		l, err := b.Acquire(ctx, "s")
		assert.NoError(t, err)
		acquired <- l
	}()
	waitForLockWaiters(t, a, 2) // b's Acquire waits for a's write
	require.NoError(t, blocker.Rollback(ctx))
	require.NoError(t, <-appended, "the write was checked while the lease was live")
	lb := <-acquired
	require.NotNil(t, lb)
	assert.Equal(t, la.Token()+1, lb.Token())
	loaded, err := lb.Store().Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"a-0"}, ids(loaded.Active))
	_, err = la.Store().Append(ctx, "s", loaded.Version, historytest.Msgs("a", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	require.NoError(t, lb.Release(ctx))
}

// TestAcquireWaitsForUnfencedWrite: an unfenced write in flight (past its
// compare-and-swap, before it could see a lease) holds the sessions row;
// Acquire waits for it, so the new holder's Load sees the write.
func TestAcquireWaitsForUnfencedWrite(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	tx, err := s.pool.Begin(ctx) // an unfenced write, stopped after its swap
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, swapSQL, bin("s"), int64(snap.Version), int64(0), int64(0))
	require.NoError(t, err)
	acquired := make(chan history.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx, "s")
		assert.NoError(t, err)
		acquired <- l
	}()
	waitForLockWaiters(t, s, 1)
	require.NoError(t, tx.Commit(ctx))
	l := <-acquired
	require.NotNil(t, l)
	loaded, err := l.Store().Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, snap.Version+1, loaded.Version)
	require.NoError(t, l.Release(ctx))
}

// proxy is a TCP proxy between a store and its server that a test can cut,
// as a network partition would, and heal.
type proxy struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup
	mu       sync.Mutex
	cut      bool
	conns    map[net.Conn]struct{}
}

// newProxy starts a proxy to the server of url and returns it with the URL
// that goes through it. It stops when the test ends.
func newProxy(t *testing.T, dbURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, upstream: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.partition()
		p.wg.Wait()
	})
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			p.wg.Go(func() {
				_, _ = io.Copy(pair[0], pair[1])
				_ = pair[0].Close()
				_ = pair[1].Close()
			})
		}
	}
}

// partition closes every proxied connection and refuses new ones.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// heal lets connections through again.
func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// TestLeasePartition cuts a lease holder off its database: the lease is
// lost by its TTL (its renewals fail), writes fail without changing
// anything, and once the network is back the store works again, the lost
// lease's row expires and the session can be taken again.
func TestLeasePartition(t *testing.T) {
	t.Parallel()
	p, viaProxy := newProxy(t, pgtest.Database(t))
	ctx := context.Background()
	s := openStore(t, viaProxy, WithLeaseTTL(shortTTL), WithHolder("cut-off"))
	l := acquire(t, s, "s")
	snap, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := l.Store().Append(ctx, "s", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)

	p.partition()
	start := time.Now()
	_, err = l.Store().Append(ctx, "s", v, historytest.Msgs("x", 1))
	require.Error(t, err)
	assert.False(t, errors.Is(err, history.ErrConflict) || errors.Is(err, history.ErrFenced), "got %v", err)
	require.True(t, closed(l.Lost(), 3*shortTTL), "renewals failed, yet Lost was not closed")
	assert.Less(t, time.Since(start), 2*shortTTL, "lost by the TTL")
	_, err = l.Store().Append(ctx, "s", v, historytest.Msgs("x", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	require.NoError(t, l.Release(ctx), "releasing a lost lease is a no-op")

	p.heal()
	require.Eventually(t, func() bool {
		l2, err := s.Acquire(ctx, "s")
		if err != nil {
			return false
		}
		assert.Greater(t, l2.Token(), l.Token())
		return true
	}, 10*shortTTL, shortTTL/10)
	loaded, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, loaded.Version)
	assert.Equal(t, []string{"m-0", "m-1"}, ids(loaded.Active))
}

// TestFencedStoreWrites runs every write through a lease's store.
func TestFencedStoreWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	l := acquire(t, s, "s")
	st := l.Store()
	snap, err := st.Create(ctx, history.NewSession{ID: "s", Config: []byte(`{"a":1}`)})
	require.NoError(t, err)
	_, err = st.Create(ctx, history.NewSession{ID: "s"})
	assert.ErrorIs(t, err, history.ErrExists)
	v := snap.Version
	step := func(vv uint64, err error) {
		t.Helper()
		require.NoError(t, err)
		v = vv
	}
	step(st.Append(ctx, "s", v, historytest.Msgs("m", 4)))
	step(st.SetConfig(ctx, "s", v, []byte(`{"a":2}`)))
	step(st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "f", Trigger: "auto", Status: history.StatusInProgress}))
	step(st.FinishCompaction(ctx, "s", v, "f", history.StatusCancelled, "stop", time.Now()))
	step(st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: "manual", Status: history.StatusInProgress}))
	vv, seg, err := st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: 2, Summary: "sum"})
	step(vv, err)
	assert.Equal(t, "g", seg.ID)
	step(st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "p", Trigger: "auto", Status: history.StatusInProgress}))
	vv, recovered, err := st.Recover(ctx, "s", v, time.Now())
	step(vv, err)
	assert.Equal(t, []string{"p"}, recovered)
	_, err = st.Append(ctx, "s", v-1, historytest.Msgs("x", 1))
	assert.ErrorIs(t, err, history.ErrConflict)

	loaded, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, loaded.Version)
	assert.JSONEq(t, `{"a":2}`, string(loaded.Config))
	assert.Equal(t, "sum", loaded.Summary)
	assert.Equal(t, []string{"m-2", "m-3"}, ids(loaded.Active))
	tl, err := s.Timeline(ctx, "s")
	require.NoError(t, err)
	assert.Len(t, tl, 7)
	require.NoError(t, l.Release(ctx))
}
