package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openStore opens a store on url and closes it when the test ends.
func openStore(t testing.TB, url string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newStore opens a store on a fresh database.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openStore(t, pgtest.Database(t), opts...)
}

func TestConformance(t *testing.T) {
	historytest.Run(t, historytest.Harness{
		New: func(t *testing.T) history.Store { return newStore(t) },
		Reopen: func(t *testing.T, s history.Store) history.Store {
			st := s.(*Store)
			require.NoError(t, st.Close())
			return openStore(t, st.url)
		},
		// The same database opened twice, as two processes would.
		Share: func(t *testing.T, s history.Store) history.Store {
			return openStore(t, s.(*Store).url)
		},
		Leases: &historytest.LeaseHarness{
			New: func(t *testing.T) func(string, time.Duration) historytest.LeaseStore {
				url := pgtest.Database(t)
				return func(holder string, ttl time.Duration) historytest.LeaseStore {
					opts := []Option{WithHolder(holder)}
					if ttl > 0 {
						opts = append(opts, WithLeaseTTL(ttl))
					}
					return openStore(t, url, opts...)
				}
			},
			StopRenewals: func(l history.Lease) { l.(*lease).stopRenewals() },
		},
	})
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := Open(ctx, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "empty URL")

	_, err = Open(ctx, "postgres://user:s3cret@localhost:notaport/db")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid URL")
	assert.NotContains(t, err.Error(), "s3cret", "the password is not in the message")

	_, err = Open(ctx, "postgres://user:s3cret@127.0.0.1:1/db?connect_timeout=5")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot connect")
	assert.NotContains(t, err.Error(), "s3cret")

	url := pgtest.Database(t)
	_, err = Open(ctx, url, WithLeaseTTL(0))
	assert.ErrorContains(t, err, "lease TTL")
	_, err = Open(ctx, url, WithHolder("a\x00b"))
	assert.ErrorContains(t, err, "holder")
	_, err = Open(ctx, url, WithMaxConns(-1))
	assert.ErrorContains(t, err, "connections")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Open(cancelled, url)
	assert.ErrorIs(t, err, context.Canceled)

	missing, err := neturl.Parse(url)
	require.NoError(t, err)
	missing.Path = "/no_such_database"
	_, err = Open(ctx, missing.String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot connect")
}

func TestOptions(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithMaxConns(3), WithHolder("me"), WithLeaseTTL(time.Minute))
	assert.EqualValues(t, 3, s.pool.Config().MaxConns)
	assert.Equal(t, "me", s.holder)
	assert.Equal(t, time.Minute, s.ttl)
	var app string
	require.NoError(t, s.pool.QueryRow(context.Background(), `SHOW application_name`).Scan(&app))
	assert.Equal(t, "sessionkit", app)

	d := newStore(t)
	assert.Equal(t, DefaultLeaseTTL, d.ttl)
	assert.Regexp(t, `^.+:\d+$`, d.holder)
}

func TestClosed(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	_, err := s.Create(ctx, history.NewSession{ID: "a"})
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
	_, err = s.Acquire(ctx, "a")
	assert.ErrorIs(t, err, history.ErrClosed)
}

// schemaVersionOf reads the schema version of the database at url.
func schemaVersionOf(t *testing.T, url string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	v, err := schemaVersion(ctx, conn)
	require.NoError(t, err)
	return v
}

func TestMigrationsIdempotent(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := context.Background()
	assert.Equal(t, 0, func() int {
		conn, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		defer func() { _ = conn.Close(ctx) }()
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'schema_version'`).Scan(&n))
		return n
	}())
	s, err := Open(ctx, url)
	require.NoError(t, err)
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "a", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, len(migrations), schemaVersionOf(t, url))

	for range 2 {
		s, err = Open(ctx, url)
		require.NoError(t, err)
		loaded, err := s.Load(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, loaded.Active, 2)
		require.NoError(t, s.Close())
		assert.Equal(t, len(migrations), schemaVersionOf(t, url))
	}
}

// TestConcurrentOpen opens a new database from many stores at once, as
// processes starting together would: the advisory lock makes exactly one
// of them run each migration, and the database ends at the last version
// with one schema_version row. Meanwhile stores open another database at
// an older schema, as tests of migrations do: that stays apart. (A test
// that opened a store at an older schema by assigning the package's
// migrations made a store opened beside it stop at that version: the
// flake this test showed; withMigrations replaced the assignment.)
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	url, older := pgtest.Database(t), pgtest.Database(t)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*Store, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(context.Background(), url, WithMaxConns(2))
		})
	}
	olderErrs := make([]error, 4)
	for i := range olderErrs {
		wg.Go(func() {
			<-start
			var s *Store
			if s, olderErrs[i] = Open(context.Background(), older, WithMaxConns(1), withMigrations(migrations[:4])); olderErrs[i] == nil {
				olderErrs[i] = s.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range olderErrs {
		require.NoError(t, err, "store %d at schema version 4", i)
	}
	assert.Equal(t, 4, schemaVersionOf(t, older))
	for i := range n {
		require.NoError(t, errs[i], "store %d", i)
	}
	for i := range n {
		// Every store works on the schema it found.
		_, err := stores[i].Create(context.Background(), history.NewSession{ID: fmt.Sprint("s", i)})
		require.NoError(t, err, "store %d", i)
		require.NoError(t, stores[i].Close())
	}
	assert.Equal(t, len(migrations), schemaVersionOf(t, url))
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	var rows int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM schema_version`).Scan(&rows))
	assert.Equal(t, 1, rows, "one schema_version row")
}

// TestMigrationForward adds a migration, as a later release would, and checks
// that it runs exactly once and keeps the data.
func TestMigrationForward(t *testing.T) {
	url := pgtest.Database(t)
	ctx := context.Background()
	s, err := Open(ctx, url)
	require.NoError(t, err)
	_, err = s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	saved := migrations
	later := append(slices.Clone(saved), `CREATE TABLE extra (n integer); INSERT INTO extra VALUES (1);`)
	for range 2 {
		s, err = Open(ctx, url, withMigrations(later))
		require.NoError(t, err)
		_, err = s.Load(ctx, "a")
		require.NoError(t, err)
		var n int
		require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM extra`).Scan(&n))
		assert.Equal(t, 1, n, "the migration ran once")
		require.NoError(t, s.Close())
	}
	assert.Equal(t, len(saved)+1, schemaVersionOf(t, url))

	// A failing migration leaves the database at the previous version.
	_, err = Open(ctx, url, withMigrations(append(later, `CREATE TABLE extra (n integer)`)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "migration to version")
	assert.Equal(t, len(saved)+1, schemaVersionOf(t, url))
}

func TestNewerSchemaFails(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	ctx := context.Background()
	s := openStore(t, url)
	_, err := s.pool.Exec(ctx, `UPDATE schema_version SET version = $1`, len(migrations)+1)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = Open(ctx, url)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNewerSchema)
	assert.Contains(t, err.Error(), "newer")
	assert.Equal(t, len(migrations)+1, schemaVersionOf(t, url), "the database is left untouched")
}

func ids(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// TestStoredForm checks details beyond the conformance suite: exact bytes of
// everything a caller stores (NUL bytes and invalid UTF-8 included, which
// PostgreSQL text would reject), nil versus empty tool calls and arguments,
// UTC times with nanoseconds, and values the columns cannot hold.
func TestStoredForm(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	const sid = "sess\x00\xff"
	snap, err := s.Create(ctx, history.NewSession{ID: sid, Config: json.RawMessage(" { \"a\" : \"\xff\" } ")})
	require.NoError(t, err)
	local := time.FixedZone("X", -5*3600)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, local)
	msgs := []history.Message{
		{ID: "a1\x00", Role: history.RoleAssistant, Text: "calls \x00", ToolCalls: []history.ToolCall{
			{ID: "c1", Name: "n"},
			{ID: "c2", Name: "n", Arguments: json.RawMessage{}},
			{ID: "c3\xff", Name: "n\x00\xfe", Arguments: json.RawMessage("\"\xff\xfe\"")},
			{ID: "c4", Name: "n", Arguments: json.RawMessage(" {\"<&>\" :\t\"\\u00e9\\u0000\"}\n")},
		}, CreatedAt: at},
		{ID: "a2", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{}},
		{ID: "u1\xff", Role: history.RoleUser, Text: "\xff not utf-8 \x00 \\x00 '", Steer: true},
		{ID: "t1", Role: history.RoleTool, ToolCallID: "c3\xff", Text: ""},
	}
	v, err := s.Append(ctx, sid, snap.Version, msgs)
	require.NoError(t, err)
	loaded, err := s.Load(ctx, sid)
	require.NoError(t, err)
	assert.Equal(t, " { \"a\" : \"\xff\" } ", string(loaded.Config))
	require.Len(t, loaded.Active, 4)
	got := loaded.Active[0]
	assert.Equal(t, msgs[0].ID, got.ID)
	assert.Equal(t, msgs[0].Text, got.Text)
	require.Len(t, got.ToolCalls, 4)
	assert.Nil(t, got.ToolCalls[0].Arguments)
	assert.NotNil(t, got.ToolCalls[1].Arguments)
	assert.Empty(t, got.ToolCalls[1].Arguments)
	assert.Equal(t, msgs[0].ToolCalls[2], got.ToolCalls[2])
	assert.Equal(t, msgs[0].ToolCalls[3], got.ToolCalls[3])
	assert.Equal(t, time.UTC, got.CreatedAt.Location())
	assert.True(t, at.Equal(got.CreatedAt))
	assert.Equal(t, at.UnixNano(), got.CreatedAt.UnixNano())
	assert.NotNil(t, loaded.Active[1].ToolCalls)
	assert.Empty(t, loaded.Active[1].ToolCalls)
	assert.Nil(t, loaded.Active[2].ToolCalls)
	assert.True(t, loaded.Active[2].CreatedAt.IsZero())
	assert.Equal(t, msgs[2], loaded.Active[2])
	assert.Equal(t, msgs[3], loaded.Active[3])

	// Compaction IDs, segment IDs, instructions, summaries and error texts
	// are exact too.
	const cid, gid, instr, summary = "c\x00\xff", "g\x00\xfe", "keep \x00 \xff", "sum \x00 \xfd"
	v, err = s.BeginCompaction(ctx, sid, v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Instructions: instr, Status: history.StatusInProgress, StartedAt: at})
	require.NoError(t, err)
	v, seg, err := s.CommitCompaction(ctx, sid, v, history.Commit{CompactID: cid, SegmentID: gid, Archive: 2, Summary: summary, At: at.Add(1)})
	require.NoError(t, err)
	assert.Equal(t, gid, seg.ID)
	v, err = s.BeginCompaction(ctx, sid, v, history.CompactionRecord{CompactID: "f\xff", Trigger: "auto", Status: history.StatusInProgress})
	require.NoError(t, err)
	v, err = s.FinishCompaction(ctx, sid, v, "f\xff", history.StatusFailed, "boom \x00\xff", at)
	require.NoError(t, err)
	v, err = s.BeginCompaction(ctx, sid, v, history.CompactionRecord{CompactID: "p\x00", Trigger: "auto", Status: history.StatusInProgress})
	require.NoError(t, err)
	loaded, err = s.Load(ctx, sid)
	require.NoError(t, err)
	assert.Equal(t, summary, loaded.Summary)
	assert.Equal(t, []string{"p\x00"}, loaded.Interrupted)
	segs, err := s.Segments(ctx, sid)
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, gid, segs[0].ID)
	assert.Equal(t, cid, segs[0].CompactID)
	assert.Equal(t, instr, segs[0].Instructions)
	assert.Equal(t, summary, segs[0].Summary)
	assert.Equal(t, at.Add(1).UnixNano(), segs[0].CreatedAt.UnixNano())
	historytest.EqualMessages(t, msgs[:2], segs[0].Messages)
	tl, err := s.Timeline(ctx, sid)
	require.NoError(t, err)
	var errText string
	for _, e := range tl {
		if e.Compaction != nil && e.Compaction.CompactID == "f\xff" {
			errText = e.Compaction.Error
		}
	}
	assert.Equal(t, "boom \x00\xff", errText)
	v, recovered, err := s.Recover(ctx, sid, v, at)
	require.NoError(t, err)
	assert.Equal(t, []string{"p\x00"}, recovered)

	// Out-of-range values.
	_, err = s.Append(ctx, sid, v, []history.Message{{ID: "old", Role: history.RoleUser, CreatedAt: time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)}})
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, _, err = s.Recover(ctx, sid, v, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.ErrorIs(t, err, history.ErrInvalid)
	_, err = s.Append(ctx, sid, 1<<63+5, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrConflict, "a version beyond int64 is a conflict, not a driver error")
	_, err = s.Append(ctx, "missing", 1<<63+5, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, history.ErrNotFound)
	after, err := s.Load(ctx, sid)
	require.NoError(t, err)
	assert.Equal(t, v, after.Version)
}

// TestQueryPlans checks that the statements the cost guarantees depend on
// use the intended indexes in a database of many sessions with many
// archived messages: Load and the commit never scan archived rows, and
// LastUsage reads one entry of its index, not the session's ledger.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	// 200 sessions of 500 messages (490 archived), 50 compaction records
	// and 50 usage records of two purposes.
	for _, q := range []string{
		`INSERT INTO sessions (id, version, active_from, archived, message_count, next_pos)
			SELECT convert_to('s' || i, 'UTF8'), 1, 490, 490, 500, 550 FROM generate_series(1, 200) i`,
		`INSERT INTO messages (session_id, pos, seq, id, role, text)
			SELECT convert_to('s' || i, 'UTF8'), j, j, convert_to('m' || j, 'UTF8'), 'user', '\x00'
			FROM generate_series(1, 200) i, generate_series(0, 499) j`,
		`INSERT INTO compactions (session_id, compact_id, pos, status, trigger_kind)
			SELECT convert_to('s' || i, 'UTF8'), convert_to('c' || j, 'UTF8'), 500 + j,
				CASE WHEN j = 49 THEN 'in_progress' ELSE 'failed' END, 'auto'
			FROM generate_series(1, 200) i, generate_series(0, 49) j`,
		`INSERT INTO usage_records (session_id, id, purpose, provider, model, turn_id, compact_id,
				input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, currency)
			SELECT convert_to('s' || i, 'UTF8'), convert_to('u' || j, 'UTF8'),
				convert_to(CASE WHEN j % 2 = 0 THEN 'turn' ELSE 'summary' END, 'UTF8'), '', '', '', '', 1, 1, 0, 0, 0, ''
			FROM generate_series(1, 200) i, generate_series(0, 49) j`,
		`ANALYZE`,
	} {
		_, err := s.pool.Exec(ctx, q)
		require.NoError(t, err)
	}
	for _, tt := range []struct {
		query string
		args  []any
		index string
	}{
		{`SELECT ` + messageColumns + ` FROM messages ` + whereActive, []any{bin("s7"), int64(490)}, "messages_pkey"},
		{selectPosOfSeq, []any{bin("s7"), int64(7)}, "messages_seq"},
		{selectInProgress, []any{bin("s7")}, "compactions_in_progress"},
		{selectUsage + lastUsageTail, []any{bin("s7"), bin("turn")}, "Index Scan Backward using usage_records_purpose"},
	} {
		rows, err := s.pool.Query(ctx, `EXPLAIN `+tt.query, tt.args...)
		require.NoError(t, err)
		var plan []string
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			plan = append(plan, line)
		}
		require.NoError(t, rows.Err())
		joined := strings.Join(plan, "\n")
		assert.Contains(t, joined, tt.index, tt.query)
		assert.NotContains(t, joined, "Seq Scan", tt.query)
	}
	// The store reads what was inserted behind its back.
	snap, err := s.Load(ctx, "s7")
	require.NoError(t, err)
	assert.Len(t, snap.Active, 10)
	assert.Equal(t, []string{"c49"}, snap.Interrupted)
}

// TestCancelInFlight cancels writes and reads while they wait for a lock
// another transaction holds: the call fails with the context's error and
// writes nothing, and the store stays usable.
func TestCancelInFlight(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)

	// Another transaction holds the session row.
	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, bin("a"))
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = s.Append(short, "a", snap.Version, historytest.Msgs("m", 1))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "got %v", err)

	cancelled, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel2)
	_, err = s.Append(cancelled, "a", snap.Version, historytest.Msgs("m", 1))
	assert.ErrorIs(t, err, context.Canceled, "got %v", err)
	require.NoError(t, tx.Rollback(ctx))

	loaded, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, snap.Version, loaded.Version)
	assert.Empty(t, loaded.Active)
	_, err = s.Append(ctx, "a", snap.Version, historytest.Msgs("m", 1))
	require.NoError(t, err)
}

// TestErrorsAreSentinels checks the sentinel of each failure the store
// reports itself.
func TestErrorsAreSentinels(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	_, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	_, err = s.Create(ctx, history.NewSession{ID: "a"})
	assert.ErrorIs(t, err, history.ErrExists)
	_, err = s.SetConfig(ctx, "missing", 1, nil)
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.SetConfig(ctx, "a", 7, nil)
	assert.ErrorIs(t, err, history.ErrConflict)
	assert.False(t, errors.Is(err, history.ErrLeased))
}
