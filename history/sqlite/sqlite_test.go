package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func TestConformance(t *testing.T) { conformance(t) }

// TestConformanceUnindexed runs the suite with the search index written
// by no Append and no idle time: every search and window reads the
// messages from the unindexed tail (indexer.go), matched in Go.
func TestConformanceUnindexed(t *testing.T) {
	conformance(t, withIndexBound(1<<30), withoutIdleIndex())
}

// TestConformanceHalfIndexed runs the suite with tails of at most three
// messages and no idle-time indexing: searches, windows and forks read
// the index and the tail together.
func TestConformanceHalfIndexed(t *testing.T) {
	conformance(t, withIndexBound(3), withoutIdleIndex())
}

// conformance runs historytest on stores opened with opts.
func conformance(t *testing.T, opts ...Option) {
	historytest.Run(t, historytest.Harness{
		New: func(t *testing.T) history.Store {
			return open(t, filepath.Join(t.TempDir(), "sessions.db"), opts...)
		},
		Reopen: func(t *testing.T, s history.Store) history.Store {
			st := s.(*Store)
			require.NoError(t, st.Close())
			return open(t, st.path, opts...)
		},
		// The same file opened twice, as two processes would.
		Share: func(t *testing.T, s history.Store) history.Store {
			return open(t, s.(*Store).path, opts...)
		},
		Leases: &historytest.LeaseHarness{
			New: func(t *testing.T) func(string, time.Duration) historytest.LeaseStore {
				path := filepath.Join(t.TempDir(), "sessions.db")
				return func(holder string, ttl time.Duration) historytest.LeaseStore {
					opts := append([]Option{WithHolder(holder)}, opts...)
					if ttl > 0 {
						opts = append(opts, WithLeaseTTL(ttl))
					}
					return open(t, path, opts...)
				}
			},
			StopRenewals: func(l history.Lease) { l.(*lease).stopRenewals() },
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
	later := append(cloneStrings(saved), `CREATE TABLE extra (n INTEGER); INSERT INTO extra VALUES (1);`)
	for range 2 {
		s, err = Open(path, withMigrations(later))
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
	_, err = Open(path, withMigrations(append(later, `CREATE TABLE extra (n INTEGER)`)))
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

// TestQueryPlans checks that the statements the cost guarantees depend on
// use the intended keys, on the store's readers of database/sql and on its
// raw readers alike: Load and the commit never visit archived rows, and
// LastUsage reads one entry of its index, not the session's ledger.
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
		{selectTailID, []any{"a", 3, 9, []byte("m1")}, "SEARCH messages USING INDEX messages_seq (session_id=? AND seq>? AND seq<?)"},
		{selectIndexedID, []any{"a", []byte("m1"), -1, 9}, "SEARCH i USING PRIMARY KEY (session_id=? AND id=? AND pos>? AND pos<?)\n" +
			"SEARCH m USING PRIMARY KEY (session_id=? AND pos=?)"},
		{insertMessageIDs, []any{"a", 3, 9}, "SEARCH messages USING INDEX messages_seq (session_id=? AND seq>? AND seq<?)"},
		{selectUsage + lastUsageTail, []any{"a", "turn"}, "SEARCH usage_records USING INDEX usage_records_purpose (session_id=? AND purpose=?)"},
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
		assert.Equal(t, strings.Split(tt.plan, "\n"), plan, tt.query)
		// The same plan on the raw readers (Load, Search, Window), whose
		// plans never look at the bound values (openRawReader).
		var raw []string
		require.NoError(t, s.view(ctx, "plan", func(q querier) error {
			return q.query(`EXPLAIN QUERY PLAN `+tt.query, tt.args, func(row rowScanner) error {
				var id, parent, notused int64
				var detail string
				if err := row.Scan(&id, &parent, &notused, &detail); err != nil {
					return err
				}
				raw = append(raw, detail)
				return nil
			})
		}))
		assert.Equal(t, strings.Split(tt.plan, "\n"), raw, "raw reader: %s", tt.query)
	}
}

// openAtVersion creates the file at path with the schema of the given
// version, as an older release left it, and opens it; the caller closes it.
func openAtVersion(t *testing.T, path string, version int) *Store {
	t.Helper()
	s, err := Open(path, withMigrations(migrations[:version]))
	require.NoError(t, err)
	return s
}

// TestBodyMatchesMigration: a file of schema version 2 (one column per
// field) moves forward to the body column on Open, and migration 4 builds
// exactly the bytes encodeBody writes, for every kind of field: tool calls
// or none, steer, a zero, negative or positive time, non-ASCII text.
func TestBodyMatchesMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAtVersion(t, path, 2)
	ctx := context.Background()
	msgs := []history.Message{
		{ID: "m0", Role: history.RoleUser, Text: "héllo \x00 wörld", CreatedAt: time.Unix(0, 1_700_000_000_123456789).UTC()},
		{ID: "m1-é", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
			{ID: "c1-ü", Name: "n", Arguments: json.RawMessage(`{"é":"ü"}`)},
			{ID: "c2", Name: "n", Arguments: json.RawMessage("\"\xff\"")},
			{ID: "c3", Name: "n"},
		}, CreatedAt: time.Unix(0, -1_234_567_890).UTC()},
		{ID: "m2", Role: history.RoleTool, ToolCallID: "c1-ü", Text: "result"},
		{ID: "m3", Role: history.RoleUser, Text: "steer", Steer: true, CreatedAt: time.Unix(1, 0).UTC()},
		{ID: "m4", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{}},
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO sessions (id, version, message_count, next_pos) VALUES ('old', 1, ?, ?)`, len(msgs), len(msgs))
	require.NoError(t, err)
	want := make([][]byte, len(msgs))
	for i := range msgs {
		row, err := encodeMessage(&msgs[i])
		require.NoError(t, err)
		want[i] = row.body
		var toolCalls sql.NullString
		if msgs[i].ToolCalls != nil { // the stored form of version 2
			from := bodyHeader + len(msgs[i].ID) + len(msgs[i].Role) + len(msgs[i].ToolCallID)
			toolCalls.Valid = true
			toolCalls.String = string(row.body[from : len(row.body)-len(msgs[i].Text)])
		}
		created, err := encodeTime(msgs[i].CreatedAt)
		require.NoError(t, err)
		_, err = s.w.ExecContext(ctx, `INSERT INTO messages (session_id, pos, seq, id, role, text, tool_calls, tool_call_id, steer, created_at)
			VALUES ('old', ?, ?, ?, ?, ?, ?, ?, ?, ?)`, i, i, msgs[i].ID, string(msgs[i].Role), msgs[i].Text, toolCalls, msgs[i].ToolCallID, msgs[i].Steer, created)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	require.Equal(t, 2, readSchemaVersion(t, path))

	s = open(t, path)
	assert.Equal(t, len(migrations), readSchemaVersion(t, path))
	for i := range msgs {
		var body []byte
		require.NoError(t, s.r.QueryRowContext(ctx, `SELECT body FROM messages WHERE session_id = 'old' AND seq = ?`, i).Scan(&body))
		assert.Equal(t, string(want[i]), string(body), "message %d", i)
	}
	loaded, err := s.Load(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, msgs, loaded.Active)
	page, err := s.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 1)
	assert.Equal(t, history.DefaultTitle(msgs[0].Text), page.Sessions[0].Title)
}

// TestMalformedBodyFails: a body column that is not in the form of
// encodeBody fails the read instead of decoding garbage.
func TestMalformedBodyFails(t *testing.T) {
	header := "0nn" + strings.Repeat("0", 16) + "0000000002" + strings.Repeat("0", 30)
	for _, body := range []string{"", "0nn", header + "x", strings.Replace(header, "2", "g", 1) + "ab", strings.Replace(header, "0", "f", 1) + "ab", "0ng" + header[3:] + "ab", header[:5] + "x" + header[6:] + "ab"} {
		var m history.Message
		_, err := decodeBody([]byte(body), &m)
		assert.ErrorIs(t, err, errBody, "%q", body)
	}
	var m history.Message
	_, err := decodeBody([]byte(header+"abtext"), &m)
	require.NoError(t, err)
	assert.Equal(t, history.Message{ID: "ab", Text: "text"}, m)
}

// TestBodyBytesRoundTrip: the body is read as TEXT (activeColumns), which
// must hand back every byte as stored: NUL, invalid UTF-8, a lone
// continuation byte, four-byte runes and empty fields, in every text field,
// through Load (Active), Segments (the archive, read with positions) and
// the listing's title, also after reopening the file.
func TestBodyBytesRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bytes.db")
	s := open(t, path)
	odd := []string{"\x00", "a\x00b", "\xff\xfe", "\x80", "😀\x00é", "", "\xed\xa0\x80", strings.Repeat("\x00\xff", 300)}
	var msgs []history.Message
	at := time.Unix(0, 1_700_000_000_123_456_789).UTC()
	for i, text := range odd {
		msgs = append(msgs,
			history.Message{ID: "u" + text + string(rune('a'+i)), Role: history.RoleUser, Text: text, CreatedAt: at, Steer: i%2 == 0},
			history.Message{ID: "a" + text + string(rune('a'+i)), Role: history.RoleAssistant, Text: text + "!",
				// (a tool call's fields are JSON in the body: text of valid UTF-8 only)
				ToolCalls: []history.ToolCall{{ID: "c" + string(rune('a'+i)), Name: "run", Arguments: json.RawMessage(`{"x":"\u0000"}`)}}},
			history.Message{ID: "t" + text + string(rune('a'+i)), Role: history.RoleTool, ToolCallID: "c" + text + string(rune('a'+i)), Text: text})
	}
	snap, err := s.Create(ctx, history.NewSession{ID: "b"})
	require.NoError(t, err)
	v, err := s.Append(ctx, "b", snap.Version, msgs)
	require.NoError(t, err)
	loaded, err := s.Load(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, msgs, loaded.Active)
	assert.Equal(t, history.DefaultTitle(msgs[0].Text), loaded.Title)

	v, err = s.BeginCompaction(ctx, "b", v, history.CompactionRecord{CompactID: "c", Trigger: history.TriggerManual, Status: history.StatusInProgress})
	require.NoError(t, err)
	_, _, err = s.CommitCompaction(ctx, "b", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: 12, Summary: "S"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open(t, path)
	loaded, err = s.Load(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, msgs[12:], loaded.Active)
	segs, err := s.Segments(ctx, "b")
	require.NoError(t, err)
	require.Len(t, segs, 1)
	require.Equal(t, msgs[:12], segs[0].Messages)
}
