package postgres

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
)

// liveLockTimeout is the lock timeout of the stores of the liveness tests.
const liveLockTimeout = 200 * time.Millisecond

// busyWithin calls op with a context far longer than the lock timeout and
// checks that it gave up with a *history.BusyError of session id naming
// holder: the lock timeout ended the wait, not the context.
func busyWithin(t *testing.T, id, holder string, op func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := op(ctx)
	require.ErrorIs(t, err, history.ErrBusy)
	var be *history.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, id, be.Session)
	assert.Equal(t, holder, be.Holder, "names the lease holder")
	assert.NoError(t, ctx.Err(), "the lock timeout, not the context, ended the wait")
	assert.Contains(t, err.Error(), "busy")
}

// liveFleet is two stores of one database, as two agent processes: a holds
// session "s" (two acknowledged messages), b holds session "other".
type liveFleet struct {
	url        string
	a, b       *Store
	la, lo     *lease
	vs, vOther uint64
	written    int // messages otherWorks wrote
}

func newLiveFleet(t *testing.T, ttl time.Duration) *liveFleet {
	t.Helper()
	f := &liveFleet{url: pgtest.Database(t)}
	f.a = openStore(t, f.url, WithHolder("agent-a"), WithLockTimeout(liveLockTimeout), WithLeaseTTL(ttl))
	f.b = openStore(t, f.url, WithHolder("agent-b"), WithLockTimeout(liveLockTimeout), WithLeaseTTL(ttl))
	ctx := context.Background()
	f.la, f.lo = acquire(t, f.a, "s"), acquire(t, f.b, "other")
	for _, w := range []struct {
		l *lease
		v *uint64
	}{{f.la, &f.vs}, {f.lo, &f.vOther}} {
		snap, err := w.l.Store().Create(ctx, history.NewSession{ID: w.l.Session()})
		require.NoError(t, err)
		*w.v, err = w.l.Store().Append(ctx, w.l.Session(), snap.Version, historytest.Msgs(w.l.Session(), 2))
		require.NoError(t, err)
	}
	return f
}

// otherWorks checks that b's session "other" is written and read while a
// lock of session "s" is held.
func (f *liveFleet) otherWorks(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	f.written++
	v, err := f.lo.Store().Append(ctx, "other", f.vOther, historytest.Msgs(fmt.Sprint("more", f.written), 1))
	require.NoError(t, err, "an unrelated session is written")
	f.vOther = v
	_, err = f.b.Load(ctx, "other")
	require.NoError(t, err, "and read")
}

// acknowledged checks that session id holds its version v and the IDs want.
func (f *liveFleet) acknowledged(t *testing.T, id string, v uint64, want ...string) {
	t.Helper()
	snap, err := f.b.Load(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version)
	assert.Equal(t, want, ids(snap.Active), "nothing acknowledged is lost")
}

// appendBusy checks that agent a's append to its session "s" is busy,
// naming a as the lease holder.
func (f *liveFleet) appendBusy(t *testing.T) {
	t.Helper()
	busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
		_, err := f.la.Store().Append(ctx, "s", f.vs, historytest.Msgs("x", 1))
		return err
	})
}

// appendsOnceGone checks that b's session works while the lock is held,
// ends the lock with end, and that a's append then lands after what was
// acknowledged.
func (f *liveFleet) appendsOnceGone(t *testing.T, end func()) {
	t.Helper()
	f.otherWorks(t)
	end()
	v, err := f.la.Store().Append(context.Background(), "s", f.vs, historytest.Msgs("x", 1))
	require.NoError(t, err)
	f.acknowledged(t, "s", v, "s-0", "s-1", "x-0")
}

// TestBusyRowLocks: a psql-style transaction holds, and keeps, a lock that
// a store's call needs (the lease row, the session row, the sequence
// reservation's row). The call gives up after the lock timeout with a
// history.BusyError naming the session's lease holder, writes nothing;
// the other agent's unrelated session keeps working, and once the lock is
// gone the call succeeds and nothing acknowledged was lost.
func TestBusyRowLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	leaseRow := `SELECT 1 FROM leases WHERE session_id = '\x73' FOR UPDATE`
	sessionRow := `SELECT 1 FROM sessions WHERE id = '\x73' FOR UPDATE`
	reservation := `UPDATE sessions SET last_seq = last_seq + 0 WHERE id = '\x73'`

	t.Run("lease row/fenced write", func(t *testing.T) {
		t.Parallel()
		f := newLiveFleet(t, DefaultLeaseTTL)
		end := pgtest.Hold(t, f.url, leaseRow)
		f.appendBusy(t)
		f.appendsOnceGone(t, end)
	})

	t.Run("lease row/takeover after expiry", func(t *testing.T) {
		t.Parallel()
		const ttl = time.Second
		f := newLiveFleet(t, ttl)
		f.la.stopRenewals() // agent a stops
		poll.Until(t, 10*ttl, func() bool {
			info, err := f.b.ReadLease(ctx, "s")
			return err == nil && info == nil
		}, "a's lease expired")
		end := pgtest.Hold(t, f.url, leaseRow)
		busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
			_, err := f.b.Acquire(ctx, "s")
			return err
		})
		f.otherWorks(t)
		end()
		lb := acquire(t, f.b, "s")
		assert.Greater(t, lb.Token(), f.la.Token(), "b takes the session over once the lock is gone")
		f.acknowledged(t, "s", f.vs, "s-0", "s-1")
	})

	t.Run("session row", func(t *testing.T) {
		t.Parallel()
		f := newLiveFleet(t, DefaultLeaseTTL)
		end := pgtest.Hold(t, f.url, sessionRow)
		f.appendBusy(t)
		busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
			return f.la.Store().(history.EventLog).LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{{Seq: 1, Kind: "turn"}}, Through: 1})
		})
		busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
			return f.la.Store().(history.Deleter).Delete(ctx, "s")
		})
		// A fork of s waits for s's row (FOR SHARE), not for its own ID's.
		busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
			_, err := f.b.Fork(ctx, history.ForkSpec{From: "s", ID: "s-fork"})
			return err
		})
		f.appendsOnceGone(t, end)
	})

	t.Run("sequence reservation", func(t *testing.T) {
		t.Parallel()
		f := newLiveFleet(t, DefaultLeaseTTL)
		end := pgtest.Hold(t, f.url, reservation)
		busyWithin(t, "s", "agent-a", func(ctx context.Context) error {
			_, err := f.la.Store().(history.SeqReserver).ReserveSeqs(ctx, "s", 1<<20)
			return err
		})
		// A taker's reservation rides in its lease's transaction: refused
		// busy, it takes no lease.
		require.NoError(t, f.la.Release(ctx))
		busyWithin(t, "s", "", func(ctx context.Context) error {
			_, _, err := f.b.AcquireReserving(ctx, "s", 1<<20)
			return err
		})
		info, err := f.b.ReadLease(ctx, "s")
		require.NoError(t, err)
		assert.Nil(t, info, "the refused taker holds no lease")
		f.otherWorks(t)
		end()
		_, res, err := f.b.AcquireReserving(ctx, "s", 1<<20)
		require.NoError(t, err)
		assert.Equal(t, uint64(1<<20), res.Start)
		f.acknowledged(t, "s", f.vs, "s-0", "s-1")
	})
}

// TestOpenBesideMigrationLock: a transaction that holds the migration's
// advisory lock (a process stopped inside a migration, a tool) keeps no
// Open of a current schema waiting, since that Open takes no lock; an Open
// that has a migration to run tries again with back-off and gives up
// busy when its context ends, leaving the schema as it was; the sessions
// keep working meanwhile.
func TestOpenBesideMigrationLock(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t, DefaultLeaseTTL)
	end := pgtest.Hold(t, f.url, fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLock))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, f.url)
	require.NoError(t, err, "a current schema opens without the lock")
	require.NoError(t, s.Close())
	require.NoError(t, ctx.Err())

	later := append(slices.Clone(migrations), `ALTER TABLE messages ADD COLUMN liveness bigint`)
	short, cancelShort := context.WithTimeout(context.Background(), 3*migrationLockTimeout+4*migrationRetry[0])
	defer cancelShort()
	_, err = Open(short, f.url, withMigrations(later))
	require.ErrorIs(t, err, history.ErrBusy)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, len(migrations), schemaVersionOf(t, f.url), "nothing migrated")
	f.otherWorks(t)
	end()
	s, err = Open(ctx, f.url, withMigrations(later))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, len(later), schemaVersionOf(t, f.url))
}

// frozenReaderEnv names the database of TestFrozenReaderChild.
const frozenReaderEnv = "SESSIONKIT_TEST_FROZEN_READER_URL"

// TestFrozenReaderChild is the frozen reader of TestMigrationBesideFrozenReader:
// it opens a store (lease TTL 3 s), begins one of its read transactions,
// reads the messages table, says "ready" and waits to be stopped.
func TestFrozenReaderChild(t *testing.T) {
	dbURL := os.Getenv(frozenReaderEnv)
	if dbURL == "" {
		t.Skip("runs only as the child process of TestMigrationBesideFrozenReader")
	}
	ctx := context.Background()
	s, err := Open(ctx, dbURL, WithLeaseTTL(3*time.Second))
	require.NoError(t, err)
	tx, err := s.pool.BeginTx(ctx, s.begin(true))
	require.NoError(t, err)
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&n))
	_, err = os.Stdout.WriteString("ready\n")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent kills it
	os.Exit(0)
}

// TestMigrationBesideFrozenReader is a rolling upgrade: an agent of the
// current release serves its sessions while an agent of a later release,
// whose migration alters the messages table, opens the database, and
// another process of the fleet is frozen (SIGSTOP) inside a read
// transaction on that table. The migration's ALTER TABLE cannot have its
// lock while the frozen reader holds its own; it waits a short time,
// rolls back and tries again, so the old agent's writes and reads keep
// going meanwhile (they would queue behind a waiting ALTER, and give up
// busy after their lock timeout). The database ends the frozen reader's
// transaction after its idle timeout (two thirds of its lease TTL), the
// migration then runs, and the old agent goes on serving the new schema.
func TestMigrationBesideFrozenReader(t *testing.T) {
	t.Parallel()
	f := newLiveFleet(t, DefaultLeaseTTL)
	ctx := context.Background()

	child := exec.Command(os.Args[0], "-test.run=^TestFrozenReaderChild$", "-test.count=1")
	child.Env = append(os.Environ(), frozenReaderEnv+"="+f.url)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Signal(syscall.SIGCONT)
		_ = child.Process.Kill()
		_ = stdin.Close()
		_ = child.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, child.Process.Signal(syscall.SIGSTOP))

	later := append(slices.Clone(migrations), `ALTER TABLE messages ADD COLUMN liveness bigint`)
	opened := make(chan error, 1)
	go func() {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s, err := Open(octx, f.url, withMigrations(later))
		if err == nil {
			err = s.Close()
		}
		opened <- err
	}()
	// The new agent's migration is trying its ALTER TABLE.
	poll.Until(t, 10*time.Second, func() bool {
		var n int
		err := f.b.pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE '%ADD COLUMN liveness%' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	}, "the migration trying its ALTER TABLE")
	// The old agents serve their sessions while it tries.
	for i := range 10 {
		f.otherWorks(t)
		v, err := f.la.Store().Append(ctx, "s", f.vs, historytest.Msgs(fmt.Sprint("s", i), 1))
		require.NoError(t, err, "the agent of session s keeps writing")
		f.vs = v
	}
	select {
	case err := <-opened:
		t.Fatalf("the migration finished while the reader was frozen (%v): the writes may have waited behind it", err)
	default:
	}
	require.NoError(t, <-opened, "the migration runs once the frozen reader's transaction is ended")
	assert.Equal(t, len(later), schemaVersionOf(t, f.url))
	f.otherWorks(t)
	snap, err := f.a.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, f.vs, snap.Version)
	assert.Len(t, snap.Active, 12, "nothing acknowledged is lost")
}

// TestCloseBoundedWithStuckDatabase: a database that stops answering in
// the middle of calls (a write without a deadline, a lease renewing) does
// not keep Close waiting: it returns within CloseTimeout, and the call in
// flight fails with history.ErrClosed.
func TestCloseBoundedWithStuckDatabase(t *testing.T) {
	t.Parallel()
	p, viaProxy := newProxy(t, pgtest.Database(t))
	ctx := context.Background()
	s, err := Open(ctx, viaProxy, WithHolder("stuck"))
	require.NoError(t, err)
	l := acquire(t, s, "s")
	snap, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	p.stall()
	written := make(chan error, 1)
	go func() {
		_, err := l.Store().Append(ctx, "s", snap.Version, historytest.Msgs("m", 1))
		written <- err
	}()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(2 * CloseTimeout):
		t.Fatalf("Close did not return within %v with the database stuck", 2*CloseTimeout)
	}
	err = <-written
	require.ErrorIs(t, err, history.ErrClosed)
}
