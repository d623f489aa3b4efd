package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a store on path and closes it when the test ends.
func open(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	historytest.Run(t, historytest.Harness{
		New: func(t *testing.T) history.Store {
			return open(t, filepath.Join(t.TempDir(), "sessions.db"))
		},
		Reopen: func(t *testing.T, s history.Store) history.Store {
			st := s.(*Store)
			require.NoError(t, st.Close())
			return open(t, st.path)
		},
	})
}

func TestFileModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := open(t, path)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "a", snap.Version, historytest.Msgs("m", 3))
	require.NoError(t, err)
	_, err = s.Load(ctx, "a") // the read pool maps the -shm file too
	require.NoError(t, err)
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		require.NoError(t, err, name)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	_, err := Open(filepath.Join(dir, "sessions.db"))
	require.Error(t, err)
	_, statErr := os.Stat(dir)
	assert.True(t, errors.Is(statErr, os.ErrNotExist), "Open must not create the directory")

	_, err = Open("")
	assert.Error(t, err)
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d.db")
	s := open(t, path)
	_, err := s.Create(context.Background(), history.NewSession{ID: "a"})
	require.NoError(t, err)
	_, err = os.Stat(path)
	assert.NoError(t, err, "the file must be created under its exact name")
}

func TestPragmas(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), WithBusyTimeout(1234*time.Millisecond))
	ctx := context.Background()
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
		var mode string
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode))
		assert.Equal(t, "wal", mode, name)
		var sync, fk, busy int
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync))
		assert.Equal(t, 2, sync, "%s: synchronous=FULL", name)
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk))
		assert.Equal(t, 1, fk, name)
		require.NoError(t, db.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy))
		assert.Equal(t, 1234, busy, name)
	}
	_, err := s.r.ExecContext(ctx, `INSERT INTO sessions (id, version) VALUES ('x', 1)`)
	assert.Error(t, err, "the read pool is query-only")
}

// TestWriterBeginsImmediate checks that _txlock=immediate makes every write
// transaction take the write lock at BEGIN: another connection cannot start
// a write while one is open, even before it has written anything.
func TestWriterBeginsImmediate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := open(t, path)
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()

	other, err := sql.Open("sqlite", dsn(path, "_pragma=busy_timeout(0)"))
	require.NoError(t, err)
	defer func() { _ = other.Close() }()
	conn, err := other.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.Error(t, err, "the writer's transaction holds the write lock from BEGIN")
	assert.Contains(t, err.Error(), "locked")

	require.NoError(t, tx.Rollback())
	_, err = conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `ROLLBACK`)
	require.NoError(t, err)
}

func readSchemaVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path))
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	v, err := schemaVersion(context.Background(), db)
	require.NoError(t, err)
	return v
}

func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	s, err := Open(path)
	require.NoError(t, err)
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "a", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, len(migrations), readSchemaVersion(t, path))

	for range 2 {
		s, err = Open(path)
		require.NoError(t, err)
		loaded, err := s.Load(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, loaded.Active, 2)
		require.NoError(t, s.Close())
		assert.Equal(t, len(migrations), readSchemaVersion(t, path))
	}
}

// TestMigrationForward adds a migration, as a later release would, and checks
// that it runs exactly once and keeps the data.
func TestMigrationForward(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	s, err := Open(path)
	require.NoError(t, err)
	_, err = s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	saved := migrations
	t.Cleanup(func() { migrations = saved })
	migrations = append(cloneStrings(saved), `CREATE TABLE extra (n INTEGER); INSERT INTO extra VALUES (1);`)
	for range 2 {
		s, err = Open(path)
		require.NoError(t, err)
		_, err = s.Load(ctx, "a")
		require.NoError(t, err)
		var n int
		require.NoError(t, s.r.QueryRowContext(ctx, `SELECT count(*) FROM extra`).Scan(&n))
		assert.Equal(t, 1, n, "the migration ran once")
		require.NoError(t, s.Close())
	}
	assert.Equal(t, len(saved)+1, readSchemaVersion(t, path))

	// A failing migration leaves the file at the previous version.
	migrations = append(migrations, `CREATE TABLE extra (n INTEGER)`)
	_, err = Open(path)
	require.Error(t, err)
	assert.Equal(t, len(saved)+1, readSchemaVersion(t, path))
}

func cloneStrings(m []string) []string { return append([]string(nil), m...) }

func TestNewerSchemaFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", dsn(path))
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE schema_version SET version = ?`, len(migrations)+1)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = Open(path)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNewerSchema)
	assert.Contains(t, err.Error(), "newer")
	assert.Equal(t, len(migrations)+1, readSchemaVersion(t, path), "the file is left untouched")
}

// TestTwoStoresOneFile opens the same file twice, as two processes would.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	a, b := open(t, path), open(t, path)
	ctx := context.Background()
	snap, err := a.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	v, err := a.Append(ctx, "s", snap.Version, historytest.Msgs("a", 3))
	require.NoError(t, err)

	seen, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, seen.Version)
	assert.Len(t, seen.Active, 3)

	// b writes; a's next write, computed from the version it knew, conflicts.
	vb, err := b.Append(ctx, "s", seen.Version, historytest.Msgs("b", 1))
	require.NoError(t, err)
	_, err = a.Append(ctx, "s", v, historytest.Msgs("c", 1))
	assert.ErrorIs(t, err, history.ErrConflict)
	_, err = a.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	assert.ErrorIs(t, err, history.ErrConflict)

	// Both see b's write; a compaction committed by a is seen by b.
	loaded, err := a.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, vb, loaded.Version)
	assert.Equal(t, []string{"a-0", "a-1", "a-2", "b-0"}, ids(loaded.Active))
	va, err := a.BeginCompaction(ctx, "s", vb, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	require.NoError(t, err)
	va, _, err = a.CommitCompaction(ctx, "s", va, history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 2, Summary: "two"})
	require.NoError(t, err)
	segs, err := b.Segments(ctx, "s")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, []string{"a-0", "a-1"}, ids(segs[0].Messages))
	fromB, err := b.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, va, fromB.Version)
	assert.Equal(t, "two", fromB.Summary)
	assert.Equal(t, []string{"a-2", "b-0"}, ids(fromB.Active))

	// Racing writers across the two stores: exactly one wins.
	errs := make(chan error, 2)
	for _, st := range []*Store{a, b} {
		go func() {
			_, err := st.Append(ctx, "s", va, historytest.Msgs("r", 1))
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	assert.True(t, (e1 == nil) != (e2 == nil), "exactly one wins: %v, %v", e1, e2)
	for _, err := range []error{e1, e2} {
		if err != nil {
			assert.ErrorIs(t, err, history.ErrConflict)
		}
	}
}

func ids(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

func TestClosed(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "sessions.db"))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is a no-op")
	_, err = s.Load(ctx, "a")
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Append(ctx, "a", 1, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Create(ctx, history.NewSession{ID: "b"})
	assert.ErrorIs(t, err, history.ErrClosed)
	_, _, err = s.CommitCompaction(ctx, "a", 1, history.Commit{CompactID: "c", SegmentID: "g", Archive: 1, Summary: "x"})
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Segments(ctx, "a")
	assert.ErrorIs(t, err, history.ErrClosed)
	_, err = s.Timeline(ctx, "a")
	assert.ErrorIs(t, err, history.ErrClosed)
}

// TestStoredForm checks details beyond the conformance suite: exact bytes of
// tool call arguments (nil, empty, not UTF-8), nil versus empty tool calls,
// UTC times, and times the column cannot hold.
func TestStoredForm(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a", Config: json.RawMessage(` { "a" : 1 } `)})
	require.NoError(t, err)
	local := time.FixedZone("X", -5*3600)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, local)
	msgs := []history.Message{
		{ID: "a1", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "n"},
			{ID: "c2", Name: "n", Arguments: json.RawMessage{}},
			{ID: "c3", Name: "n", Arguments: json.RawMessage("\"\xff\xfe\"")},
			{ID: "c4", Name: "n", Arguments: json.RawMessage(" {\"<&>\" :\t\"\\u00e9\"}\n")},
		}, CreatedAt: at},
		{ID: "a2", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{}},
		{ID: "u1", Role: history.RoleUser, Text: "\xff not utf-8 \x00"},
	}
	v, err := s.Append(ctx, "a", snap.Version, msgs)
	require.NoError(t, err)
	loaded, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, ` { "a" : 1 } `, string(loaded.Config))
	require.Len(t, loaded.Active, 3)
	got := loaded.Active[0]
	assert.Nil(t, got.ToolCalls[0].Arguments)
	assert.NotNil(t, got.ToolCalls[1].Arguments)
	assert.Empty(t, got.ToolCalls[1].Arguments)
	assert.Equal(t, msgs[0].ToolCalls[2].Arguments, got.ToolCalls[2].Arguments)
	assert.Equal(t, msgs[0].ToolCalls[3].Arguments, got.ToolCalls[3].Arguments)
	assert.Equal(t, time.UTC, got.CreatedAt.Location())
	assert.True(t, at.Equal(got.CreatedAt))
	assert.NotNil(t, loaded.Active[1].ToolCalls)
	assert.Empty(t, loaded.Active[1].ToolCalls)
	assert.Nil(t, loaded.Active[2].ToolCalls)
	assert.True(t, loaded.Active[2].CreatedAt.IsZero())
	assert.Equal(t, msgs[2].Text, loaded.Active[2].Text)

	_, err = s.Append(ctx, "a", v, []history.Message{{ID: "old", Role: history.RoleUser, CreatedAt: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, _, err = s.Recover(ctx, "a", v, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.Append(ctx, "a", 1<<63+5, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrConflict, "a version beyond int64 is a conflict, not a driver error")
	_, err = s.Append(ctx, "missing", 1<<63+5, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrNotFound)
}

// TestCommitRangeAcrossRecords checks the watermark arithmetic across
// interleaved compaction records: positions are shared by messages and
// records, and a commit's range skips the records inside it.
func TestCommitRangeAcrossRecords(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	v := snap.Version
	step := func(vv uint64, err error) {
		t.Helper()
		require.NoError(t, err)
		v = vv
	}
	step(s.Append(ctx, "a", v, historytest.Msgs("m", 2)))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "x", Trigger: "auto", Status: history.StatusNothingToCompact}))
	step(s.Append(ctx, "a", v, historytest.Msgs("n", 2)))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "p", Trigger: "auto", Status: history.StatusInProgress}))
	step(s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "q", Trigger: "auto", Status: history.StatusInProgress}))
	step(s.Append(ctx, "a", v, historytest.Msgs("o", 1)))
	// q commits before p: segments are in archive order, not begin order.
	v2, seg, err := s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: "q", SegmentID: "gq", Archive: 3, Summary: "q"})
	require.NoError(t, err)
	assert.Equal(t, "gq", seg.ID)
	v = v2
	v2, seg, err = s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: "p", SegmentID: "gp", Archive: 2, Summary: "p"})
	require.NoError(t, err)
	assert.Equal(t, "gp", seg.ID)
	segs, err := s.Segments(ctx, "a")
	require.NoError(t, err)
	require.Len(t, segs, 2)
	assert.Equal(t, "gq", segs[0].ID)
	assert.Equal(t, []string{"m-0", "m-1", "n-0"}, ids(segs[0].Messages))
	assert.Equal(t, "gp", segs[1].ID)
	assert.Equal(t, []string{"n-1", "o-0"}, ids(segs[1].Messages))
	loaded, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Empty(t, loaded.Active)
	assert.EqualValues(t, 5, loaded.Archived)
	assert.Equal(t, v2, loaded.Version)
	assert.Equal(t, "p", loaded.Summary)
	_, _, err = s.CommitCompaction(ctx, "a", v2, history.Commit{CompactID: "p", SegmentID: "gz", Archive: 1, Summary: "z"})
	assert.ErrorIs(t, err, history.ErrInvalid, "nothing is Active")
}

// TestQueryPlans checks that the statements the cost guarantees depend on
// use the intended keys: Load and the commit never visit archived rows.
func TestQueryPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	ctx := context.Background()
	for _, tt := range []struct {
		query string
		args  []any
		plan  string
	}{
		{`SELECT ` + messageColumns + ` FROM messages ` + whereActive, []any{"a", 5}, "SEARCH messages USING PRIMARY KEY (session_id=? AND pos>?)"},
		{`SELECT ` + messageColumns + ` FROM messages ` + whereRange, []any{"a", 1, 5}, "SEARCH messages USING PRIMARY KEY (session_id=? AND pos>? AND pos<?)"},
		{selectPosOfSeq, []any{"a", 7}, "SEARCH messages USING COVERING INDEX messages_seq (session_id=? AND seq=?)"},
		{selectInProgress, []any{"a"}, "SEARCH compactions USING COVERING INDEX compactions_in_progress (session_id=?)"},
	} {
		rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+tt.query, tt.args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		assert.Equal(t, []string{tt.plan}, plan, tt.query)
	}
}

// TestConsistentReads loads a session while another goroutine keeps
// compacting it: every snapshot must be one committed state, with the
// summary, the archived count and the first Active message agreeing.
func TestConsistentReads(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			v, next := snap.Version, 0
			for r := range 40 {
				msgs := make([]history.Message, 4)
				for i := range msgs {
					msgs[i] = historytest.Msg(fmt.Sprintf("m-%d", next+i), next+i)
				}
				next += 4
				var err error
				if v, err = s.Append(ctx, "a", v, msgs); err != nil {
					return err
				}
				cid := fmt.Sprintf("c%d", r)
				if v, err = s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: cid, Trigger: "auto", Status: history.StatusInProgress}); err != nil {
					return err
				}
				// Archives 2 per round: the summary names the archived count.
				if v, _, err = s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: cid, SegmentID: "g" + cid, Archive: 2, Summary: fmt.Sprint(2 * (r + 1))}); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	for loads := 0; ; loads++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			t.Logf("%d consistent loads", loads)
			return
		default:
		}
		snap, err := s.Load(ctx, "a")
		require.NoError(t, err)
		if snap.Archived > 0 {
			require.Equal(t, fmt.Sprint(snap.Archived), snap.Summary)
		}
		for i, m := range snap.Active {
			require.Equal(t, fmt.Sprintf("m-%d", snap.Archived+int64(i)), m.ID)
		}
		require.LessOrEqual(t, len(snap.Interrupted), 1)
	}
}
