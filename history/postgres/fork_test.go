package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
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

// rowCounts counts the rows of every table a session writes.
func rowCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"sessions", "messages", "vectors", "compactions", "configs", "events", "usage_records", "usage_totals", "postings"} {
		var n int
		require.NoError(t, s.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n), table)
		out[table] = n
	}
	return out
}

// TestForkCopiesNoMessage: a fork of a session of 200 messages writes its
// sessions row and its compaction records and no message (its reads walk
// to the source's rows); its own messages are its rows.
func TestForkCopiesNoMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	historytest.ForkSource(t, s, "src", 200)
	before := rowCounts(t, s)
	f, err := s.Fork(ctx, history.ForkSpec{ID: "f", From: "src"})
	require.NoError(t, err)
	after := rowCounts(t, s)
	assert.Equal(t, before["messages"], after["messages"], "no message copied")
	assert.Equal(t, before["sessions"]+1, after["sessions"])
	assert.Equal(t, before["compactions"]*2, after["compactions"], "its compaction records")
	_, err = s.Append(ctx, "f", f.Version, historytest.Msgs("f", 3))
	require.NoError(t, err)
	var own int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE session_id = $1`, bin("f")).Scan(&own))
	assert.Equal(t, 3, own)
	got, err := s.Load(ctx, "f")
	require.NoError(t, err)
	src, err := s.Load(ctx, "src")
	require.NoError(t, err)
	historytest.EqualMessages(t, append(src.Active, historytest.Msgs("f", 3)...), got.Active)
}

// TestForkCopiesEveryColumn: the columns a fork copies of its compaction
// and configuration records are all the tables' columns.
func TestForkCopiesEveryColumn(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for table, cols := range forkCopies {
		got, err := collectColumns(s, table)
		require.NoError(t, err)
		assert.ElementsMatch(t, got, cols, table)
	}
}

// collectColumns lists the columns of table.
func collectColumns(s *Store, table string) ([]string, error) {
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'`, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TestForkDeleteLeavesNothing: historytest.ForkDeleteLeavesNothing, with
// every table's rows counted.
func TestForkDeleteLeavesNothing(t *testing.T) {
	t.Parallel()
	historytest.ForkDeleteLeavesNothing(t, func(t *testing.T) history.Store { return newStore(t) },
		func(t *testing.T, s history.Store) map[string]int { return rowCounts(t, s.(*Store)) })
}

// TestForkDeleteKeepsWhatForksRead: a deleted source that a fork reads
// keeps its messages up to the fork point only.
func TestForkDeleteKeepsWhatForksRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	historytest.ForkSource(t, s, "src", 40)
	_, err := s.Fork(ctx, history.ForkSpec{ID: "f", From: "src", At: "src-9"})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "src"))
	var kept, hidden int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM messages`).Scan(&kept))
	assert.Equal(t, 10, kept, "src-0 to src-9")
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE deleted`).Scan(&hidden))
	assert.Equal(t, 1, hidden)
}

// TestMigrationForkChains: forks that copied their source's messages
// (before migration 16) read the same after it, and hold no copy: a fork
// whose source still holds them lost its copies; a fork whose source was
// deleted (or deleted and created again) reads them from a hidden parent.
func TestMigrationForkChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	old := openStore(t, url, withMigrations(migrations[:15]))
	// This store's Append writes postings (migration 18), which the old
	// schema had not: the table stands there while the old rows are
	// written, and goes before the migrations run, which fill it again.
	_, err := old.pool.Exec(ctx, migrationPostings)
	require.NoError(t, err)
	historytest.ForkSource(t, old, "src", 40)
	historytest.ForkSource(t, old, "gone", 20)
	historytest.ForkSource(t, old, "again", 20)
	for _, f := range []history.ForkSpec{
		{ID: "f1", From: "src", At: "src-9"}, {ID: "f2", From: "f1", At: "src-5"},
		{ID: "g", From: "gone", At: "gone-15"}, {ID: "a", From: "again"},
	} {
		_, err := old.Fork(ctx, f)
		require.NoError(t, err, f.ID)
	}
	cols, err := collectColumns(old, "messages")
	require.NoError(t, err)
	type read struct {
		active, timeline, hits []string
	}
	readOf := func(s *Store, id string) read {
		snap, err := s.Load(ctx, id)
		require.NoError(t, err)
		tl, err := s.Timeline(ctx, id)
		require.NoError(t, err)
		p, err := s.Search(ctx, id, history.SearchQuery{Text: "message", Limit: history.MaxSearchLimit})
		require.NoError(t, err)
		var r read
		for _, m := range snap.Active {
			r.active = append(r.active, m.ID)
		}
		for _, e := range tl {
			r.timeline = append(r.timeline, fmt.Sprint(e.Position, e.Message != nil))
		}
		for _, h := range p.Hits {
			r.hits = append(r.hits, h.MessageID+" "+h.SegmentID)
		}
		return r
	}
	want := map[string]read{}
	for _, id := range []string{"f1", "f2", "g", "a"} {
		want[id] = readOf(old, id)
		// The copies a fork made before: its chain's messages up to its
		// fork point as its own rows.
		var parent []byte
		var at int64
		require.NoError(t, old.pool.QueryRow(ctx, `SELECT fork_of, fork_pos FROM sessions WHERE id = $1`, bin(id)).Scan(&parent, &at))
		_, err := old.pool.Exec(ctx, sqlstore.CopyRows("messages", cols, "$1", "$2", "$3"), bin(id), parent, at)
		require.NoError(t, err, id)
	}
	// Sources deleted as they were before: with every row.
	for _, id := range []string{"gone", "again"} {
		for _, table := range []string{"messages", "postings", "compactions", "configs", "events", "usage_records", "vectors"} {
			_, err := old.pool.Exec(ctx, `DELETE FROM `+table+` WHERE session_id = $1`, bin(id))
			require.NoError(t, err)
		}
		_, err := old.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, bin(id))
		require.NoError(t, err)
	}
	historytest.ForkSource(t, old, "again", 8)
	_, err = old.pool.Exec(ctx, `DROP TABLE postings`)
	require.NoError(t, err)
	require.NoError(t, old.Close())

	s := openStore(t, url)
	for id, w := range want {
		assert.Equal(t, w, readOf(s, id), id)
	}
	assert.Zero(t, stalePostings(t, s), "migration 18 after 16")
	var copies int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM messages m JOIN sessions f ON f.id = m.session_id
		WHERE NOT f.deleted AND f.fork_of IS NOT NULL AND m.pos <= f.fork_pos`).Scan(&copies))
	assert.Zero(t, copies, "no fork holds a copy")
	page, err := s.ListSessions(ctx, history.ListOptions{Limit: history.MaxListLimit})
	require.NoError(t, err)
	assert.Len(t, page.Sessions, 6, "src, again (new), f1, f2, g, a: the hidden parents are not listed")
	for _, id := range []string{"g", "a"} {
		require.NoError(t, s.Delete(ctx, id))
	}
	var hidden int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE deleted`).Scan(&hidden))
	assert.Zero(t, hidden, "deleting the forks freed their hidden parents")
}

// TestForkDeleteConcurrent deletes the two forks of a deleted source at
// once: the first pauses before its commit, having kept the source (the
// other fork still read it); the second waits for the source's row and
// then frees it, so nothing is left behind.
func TestForkDeleteConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		calls           atomic.Int32
		paused, release = make(chan struct{}), make(chan struct{})
		secondAtCommit  = make(chan struct{})
	)
	url := pgtest.Database(t)
	s := openStore(t, url, WithLockTimeout(time.Minute), withBeforeCommit(func(op string) {
		if op != "delete" {
			return
		}
		switch calls.Add(1) {
		case 2: // src below
		case 3:
			close(paused)
			<-release
		case 4:
			close(secondAtCommit)
		}
	}))
	empty := rowCounts(t, s)
	historytest.ForkSource(t, s, "src", 8)
	for _, f := range []string{"f1", "f2"} {
		_, err := s.Fork(ctx, history.ForkSpec{ID: f, From: "src", At: "src-5"})
		require.NoError(t, err)
	}
	calls.Store(1)
	require.NoError(t, s.Delete(ctx, "src"))
	errs := make(chan error, 2)
	go func() { errs <- s.Delete(ctx, "f1") }()
	<-paused
	go func() { errs <- s.Delete(ctx, "f2") }()
	poll.Until(t, 30*time.Second, func() bool {
		select {
		case <-secondAtCommit: // it did not wait: the test goes red below
			return true
		default:
		}
		var waiting int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting > 0
	}, "the second delete waiting for the source's row, or at its commit")
	close(release)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	assert.Equal(t, empty, rowCounts(t, s), "nothing is left behind")
}
