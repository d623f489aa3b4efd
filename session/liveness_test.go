package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// openPostgres opens a store on url, closed when the test ends.
func openPostgres(t *testing.T, url string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// lockWaits returns the start times of the statements of url's database
// that wait for a lock.
func lockWaits(t *testing.T, url string) []time.Time {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	rows, err := conn.Query(ctx, `SELECT query_start FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	require.NoError(t, err)
	return out
}

// stuckSession is a session on PostgreSQL with one acknowledged turn
// whose store is then stuck: a psql-style transaction holds its sessions
// row and the store waits for locks without end (lock timeout one hour).
func stuckSession(t *testing.T, cfg session.Config) (s *session.Session, url string, end func()) {
	t.Helper()
	url = pgtest.Database(t)
	fake := providertest.New()
	cfg.ID, cfg.Store = "s", openPostgres(t, url, postgres.WithLockTimeout(time.Hour))
	s = newSession(t, fake, cfg)
	fake.QueueTurn(providertest.Reply{Text: "one"})
	require.NoError(t, wait(t, mustPrompt(t, s, "first")).Err)
	end = pgtest.Hold(t, url, `SELECT 1 FROM sessions FOR UPDATE`)
	fake.QueueTurn(providertest.Reply{Text: "two"})
	return s, url, end
}

// acknowledgedTurn checks that session "s" of url holds the first turn.
func acknowledgedTurn(t *testing.T, url string) {
	t.Helper()
	snap, err := openPostgres(t, url).Load(context.Background(), "s")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(snap.Active), 2)
	assert.Equal(t, []string{"user:first", "assistant:one"}, texts(snap.Active[:2]), "nothing acknowledged is lost")
}

// TestClose_StuckStore: Close returns within CloseTimeout while a write of
// the session waits on a store that does not answer; the turn of that
// write fails saying the session closed before the store finished, and
// what was acknowledged before stays stored.
func TestClose_StuckStore(t *testing.T) {
	t.Parallel()
	s, url, end := stuckSession(t, session.Config{})
	h := mustPrompt(t, s, "second")
	poll.Until(t, waitLimit, func() bool { return len(lockWaits(t, url)) > 0 }, "the turn's write waiting")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(session.CloseTimeout + time.Second): // the goal: 5 s
		t.Fatalf("Close did not return within %v with the store stuck", session.CloseTimeout+time.Second)
	}
	res := wait(t, h)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "the session closed before the store finished")
	end()
	acknowledgedTurn(t, url)
}

// TestStoreTimeout_FailsTheWrite: a write that the store cannot finish
// within Config.StoreTimeout fails its turn saying so; the session stays
// open, and once the store answers again the next turn works.
func TestStoreTimeout_FailsTheWrite(t *testing.T) {
	t.Parallel()
	s, url, end := stuckSession(t, session.Config{StoreTimeout: time.Second})
	res := wait(t, mustPrompt(t, s, "second"))
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "did not finish within 1s (Config.StoreTimeout)")
	end()
	acknowledgedTurn(t, url)
	require.NoError(t, wait(t, mustPrompt(t, s, "third")).Err, "the session goes on")
}

// TestWaitForLease_RetriesBusy: a lease row that a psql-style transaction
// holds makes New refuse the session busy, naming the holder, within the
// store's lock timeout; with WaitForLease it tries again with back-off and
// opens the session once the lock is gone.
func TestWaitForLease_RetriesBusy(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	st := openPostgres(t, url, postgres.WithLockTimeout(200*time.Millisecond), postgres.WithHolder("agent-a"))
	fake := providertest.New()
	first := newSession(t, fake, session.Config{ID: "s", Store: st})
	fake.QueueTurn(providertest.Reply{Text: "one"})
	require.NoError(t, wait(t, mustPrompt(t, first, "first")).Err)
	require.NoError(t, first.Close()) // the lease row stays, released
	end := pgtest.Hold(t, url, `SELECT 1 FROM leases FOR UPDATE`)

	_, err := session.Open(ctxT(t), session.Config{ID: "s", Store: st, Provider: fake})
	require.ErrorIs(t, err, history.ErrBusy)
	var be *history.BusyError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "s", be.Session)

	opened := make(chan error, 1)
	go func() {
		s, err := session.Open(ctxT(t), session.Config{ID: "s", Store: st, Provider: fake, WaitForLease: true})
		if err == nil {
			err = s.Close()
		}
		opened <- err
	}()
	// Two waits of distinct attempts: it tried again after a refusal.
	seen := map[time.Time]bool{}
	poll.Until(t, waitLimit, func() bool {
		for _, at := range lockWaits(t, url) {
			seen[at] = true
		}
		return len(seen) >= 2
	}, "a second attempt")
	end()
	require.NoError(t, <-opened)
	acknowledgedTurn(t, url)
}
