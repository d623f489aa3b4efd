package postgres

import (
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
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

// TestLeaseRowsNeverDeleted: a session's lease row outlives its releases,
// so its tokens only grow; every session has its own row.
func TestLeaseRowsNeverDeleted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, acquire(t, s, "s").Release(ctx))
	assert.EqualValues(t, 2, acquire(t, s, "s").Token())
	acquire(t, s, "t")
	var rows int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM leases`).Scan(&rows))
	assert.Equal(t, 2, rows)
}

// waitForLockWaiters waits until n backends of s's database wait for a lock.
func waitForLockWaiters(t *testing.T, s *Store, n int) {
	t.Helper()
	poll.Until(t, 10*time.Second, func() bool {
		var waiting int
		err := s.pool.QueryRow(context.Background(), `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == n
	}, "the transactions waiting for a lock")
}

// TestLeaseLostWhenRenewalsFail: a holder that cannot reach the database
// declares its lease lost by the TTL, without anyone taking it over.
func TestLeaseLostWhenRenewalsFail(t *testing.T) {
	t.Parallel()
	var blocked atomic.Bool
	s := newStore(t, WithLeaseTTL(shortTTL), withRenewalsBlocked(&blocked))
	ctx := context.Background()
	l := acquire(t, s, "s")
	_, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	blocked.Store(true)
	start := time.Now()
	require.True(t, historytest.Closed(l.Lost(), 5*shortTTL), "Lost was not closed")
	assert.Less(t, time.Since(start), 2*shortTTL, "lost by the TTL")
	_, err = l.Store().Append(ctx, "s", 1, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	require.NoError(t, l.Release(ctx), "releasing a lost lease is a no-op")
	// The row expires by the database's clock and can be taken over.
	poll.Until(t, 5*shortTTL, func() bool {
		l2, err := s.Acquire(ctx, "s")
		if err == nil {
			assert.Greater(t, l2.Token(), l.Token())
			assert.NoError(t, l2.Release(ctx))
		}
		return err == nil
	}, "the expired lease taken over")
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
	require.True(t, historytest.Closed(l.Lost(), 2*shortTTL), "Lost was not closed")
	_, err = l.Store().Create(ctx, history.NewSession{ID: "s"})
	assert.ErrorIs(t, err, history.ErrFenced)
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
	historytest.LeaseError(t, err, "s", "a") // another lease of the same process
	lc := acquire(t, a, "u")
	require.NoError(t, lc.Release(ctx))
	assert.True(t, historytest.Closed(lc.Stopped(), 0), "Release stopped the renewals")
	require.NoError(t, a.Close())
	for _, l := range []*lease{la, lb} {
		assert.True(t, historytest.Closed(l.Stopped(), 0), "Close stopped the renewals")
		assert.False(t, historytest.Closed(l.Lost(), 0))
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
	// The waits below are the point: no lock timeout ends them.
	a := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("a"), WithLockTimeout(time.Minute))
	b := openStore(t, url, WithLeaseTTL(shortTTL), WithHolder("b"), WithLockTimeout(time.Minute))
	ctx := context.Background()
	la := acquire(t, a, "s")
	la.stopRenewals()
	snap, err := la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)

	// Another transaction holds the session row: a's append checks its
	// token, then waits at its compare-and-swap. (Not one of the store's
	// connections, whose idle timeout is two thirds of the short TTL.)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	blocker, err := conn.Begin(ctx)
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
	// a's lease expires meanwhile, by the database's clock.
	poll.For(t, func() bool {
		var expired bool
		err := a.pool.QueryRow(ctx, `SELECT expires_at <= now() FROM leases WHERE session_id = $1`, bin("s")).Scan(&expired)
		require.NoError(t, err)
		return expired
	}, "a's lease expired")

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

// TestStoppedHolderDoesNotBlockTakeover: a holder that stops inside a
// write transaction, as a process stopped by SIGSTOP does (its connection
// stays open; its event log write holds the lease row FOR SHARE and the
// session row FOR UPDATE), keeps no one waiting: while its lease is live
// another store is refused at once, and once the lease has expired it
// takes the session over (the server ended the stopped transaction by
// then), its reservation made in the lease's transaction; the stopped
// write fails and never lands.
func TestStoppedHolderDoesNotBlockTakeover(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	const ttl = time.Second
	stopped, resume := make(chan struct{}), make(chan struct{})
	a := openStore(t, url, WithLeaseTTL(ttl), WithHolder("a"), withBeforeCommit(func(op string) {
		if op == "log events" {
			close(stopped)
			<-resume
		}
	}))
	b := openStore(t, url, WithLeaseTTL(ttl), WithHolder("b"))
	ctx := context.Background()
	la := acquire(t, a, "s")
	_, err := la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	logged := make(chan error, 1)
	go func() {
		logged <- la.Store().(history.EventLog).LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{{Seq: 1, Kind: "turn"}}, Through: 3})
	}()
	<-stopped
	la.stopRenewals() // a stopped process renews nothing
	stoppedAt := time.Now()
	defer close(resume)

	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, _, err = b.AcquireReserving(bounded, "s", 1<<32)
	historytest.LeaseError(t, err, "s", "a")
	// Refused while the stopped write still holds its locks (the server
	// has not ended it yet): an Acquire that waited for them would come
	// back only once that transaction was gone.
	var held int
	require.NoError(t, b.pool.QueryRow(ctx, `
		SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'idle in transaction'`).Scan(&held))
	assert.Equal(t, 1, held, "refused at once, not after the stopped write")

	var (
		lb  history.Lease
		res history.SeqReservation
	)
	poll.Until(t, 10*time.Second, func() bool {
		lb, res, err = b.AcquireReserving(bounded, "s", 1<<32)
		return err == nil
	}, "b takes the session over")
	took := time.Since(stoppedAt)
	t.Logf("b took the session over %v after a stopped (TTL %v)", took.Round(time.Millisecond), ttl)
	assert.Less(t, took, ttl+ttl/2, "taken over about when the lease expired")
	assert.Equal(t, history.SeqReservation{Found: true, Start: 1 << 32}, res, "the stopped write had not landed")
	evs, err := b.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
	require.NoError(t, lb.Release(ctx))

	resume <- struct{}{}
	require.Error(t, <-logged, "the stopped write failed")
	evs, err = b.Events(ctx, "s", 0, 0)
	require.NoError(t, err)
	assert.Empty(t, evs, "and never landed")
}

// TestAcquireWaitsForUnfencedWrite: an unfenced write in flight (past its
// compare-and-swap, before it could see a lease) holds the sessions row;
// Acquire waits for it, so the new holder's Load sees the write.
func TestAcquireWaitsForUnfencedWrite(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithLockTimeout(time.Minute)) // the wait is the point
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
// as a network partition would, and heal; or stall: it then forwards
// nothing and keeps the connections open, as a server that stopped
// answering (SIGSTOP, a paused machine) does.
type proxy struct {
	ln        net.Listener
	upstream  string
	wg        sync.WaitGroup
	mu        sync.Mutex
	cut       bool
	conns     map[net.Conn]struct{}
	stalled   chan struct{} // closed by stall
	stallOnce sync.Once
	done      chan struct{} // closed when the test ends
}

// newProxy starts a proxy to the server of url and returns it with the URL
// that goes through it. It stops when the test ends.
func newProxy(t *testing.T, dbURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, upstream: u.Host, conns: map[net.Conn]struct{}{}, stalled: make(chan struct{}), done: make(chan struct{})}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		close(p.done)
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
				p.forward(pair[0], pair[1])
				_ = pair[0].Close()
				_ = pair[1].Close()
			})
		}
	}
}

// forward copies src to dst until either ends; once the proxy is stalled
// it drops what it reads and waits for the test's end.
func (p *proxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.stalled:
			<-p.done
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall stops the forwarding for good.
func (p *proxy) stall() { p.stallOnce.Do(func() { close(p.stalled) }) }

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
	require.True(t, historytest.Closed(l.Lost(), 3*shortTTL), "renewals failed, yet Lost was not closed")
	assert.Less(t, time.Since(start), 2*shortTTL, "lost by the TTL")
	_, err = l.Store().Append(ctx, "s", v, historytest.Msgs("x", 1))
	assert.ErrorIs(t, err, history.ErrFenced)
	require.NoError(t, l.Release(ctx), "releasing a lost lease is a no-op")

	p.heal()
	poll.Until(t, 10*shortTTL, func() bool {
		l2, err := s.Acquire(ctx, "s")
		if err != nil {
			return false
		}
		assert.Greater(t, l2.Token(), l.Token())
		return true
	}, "the lost lease taken over once the database is reachable")
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
