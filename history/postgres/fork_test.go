package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
)

// TestForkRacesCreate forks to an ID that another transaction creates
// between the fork's check for the ID and its insert: the fork fails with
// history.ErrExists, as a Create of a taken ID does, not a bare
// unique_violation.
func TestForkRacesCreate(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithLockTimeout(time.Minute))
	ctx := context.Background()
	_, err := s.Create(ctx, history.NewSession{ID: "src"})
	require.NoError(t, err)

	// Another transaction inserts the fork's ID and does not commit yet:
	// the fork's check does not see the row, its insert waits for it.
	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO sessions (id, version) VALUES ($1, 1)`, bin("b"))
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := s.Fork(ctx, history.ForkSpec{From: "src", ID: "b"})
		done <- err
	}()
	poll.Until(t, 30*time.Second, func() bool {
		var waiting int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO sessions%'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, "the fork's insert waiting for the other transaction")
	require.NoError(t, tx.Commit(ctx))

	select {
	case err := <-done:
		assert.ErrorIs(t, err, history.ErrExists, "got %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the fork did not return after the other transaction committed")
	}
}

// TestForkLetsSourceWrite holds a fork's transaction open before it
// commits: the source's writer appends meanwhile without waiting for the
// fork (its sessions row is locked FOR KEY SHARE, which an UPDATE of the
// row does not wait for), the fork inherits none of what the source wrote
// after the fork point, and a delete of the source still waits for the
// fork (its lock timeout ends the wait).
func TestForkLetsSourceWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paused, release := make(chan struct{}), make(chan struct{})
	url := pgtest.Database(t)
	forker := openStore(t, url, WithLockTimeout(time.Minute), withBeforeCommit(func(op string) {
		if op == "fork" {
			close(paused)
			<-release
		}
	}))
	s := openStore(t, url, WithLockTimeout(200*time.Millisecond))
	snap, err := s.Create(ctx, history.NewSession{ID: "src"})
	require.NoError(t, err)
	v, err := s.Append(ctx, "src", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := forker.Fork(ctx, history.ForkSpec{From: "src", ID: "f"})
		done <- err
	}()
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the fork returned before its commit: %v", err)
	}
	_, err = s.Append(ctx, "src", v, historytest.Msgs("later", 1))
	assert.NoError(t, err, "the source's writer does not wait for a fork")
	err = s.Delete(ctx, "src")
	assert.ErrorIs(t, err, history.ErrBusy, "a delete of the source waits for the fork")
	close(release)
	require.NoError(t, <-done)

	fork, err := s.Load(ctx, "f")
	require.NoError(t, err)
	historytest.EqualMessages(t, historytest.Msgs("m", 2), fork.Active)
}
