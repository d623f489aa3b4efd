package postgres

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// searchMessages are messages of every kind the index handles.
var searchMessages = []history.Message{
	{ID: "m0", Role: history.RoleUser, Text: "Héllo wörld: rename the ledger in /project/ledger.go"},
	{ID: "m1-é", Role: history.RoleAssistant, Text: "reading", ToolCalls: []history.ToolCall{
		{ID: "c1-ü", Name: "read_file", Arguments: json.RawMessage(`{"path":"/project/ledger.go"}`)},
		{ID: "c3", Name: "noargs"},
	}},
	{ID: "m2", Role: history.RoleTool, ToolCallID: "c1-ü", Text: "package ledger"},
	{ID: "m3", Role: history.RoleTool, ToolCallID: "c3", Text: "done"},
	{ID: "m4", Role: history.RoleTool, ToolCallID: "unknown", Text: "orphan"},
	{ID: "m5", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{}},
}

// searchRows reads the index columns of session "s".
func searchRows(t *testing.T, s *Store) [][3]string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT id, tool_name, search::text FROM messages WHERE session_id = 's' ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out [][3]string
	for rows.Next() {
		var id, tool []byte
		var search string
		require.NoError(t, rows.Scan(&id, &tool, &search))
		out = append(out, [3]string{string(id), string(tool), search})
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSearchMigration: migration 5 indexes the messages of a database of
// schema version 4 as Append indexes them (the words of the text and the
// tool calls, the tool a result answers), and they are searchable.
func TestSearchMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	old, err := Open(ctx, url, withMigrations(migrations[:4]))
	require.NoError(t, err)
	b, err := encodeMessages(searchMessages)
	require.NoError(t, err)
	_, err = old.pool.Exec(ctx, `INSERT INTO sessions (id, version, message_count, next_pos) VALUES ('s', 1, $1, $1)`, len(searchMessages))
	require.NoError(t, err)
	_, err = old.pool.Exec(ctx, `
		INSERT INTO messages (session_id, pos, seq, id, role, text, tool_calls, tool_call_id, steer, created_at)
		SELECT 's', m.ord - 1, m.ord - 1, m.id, m.role, m.text, m.tool_calls, m.tool_call_id, m.steer, m.created_at
		FROM unnest($1::bytea[], $2::text[], $3::bytea[], $4::bytea[], $5::bytea[], $6::boolean[], $7::bigint[])
			WITH ORDINALITY AS m (id, role, text, tool_calls, tool_call_id, steer, created_at, ord)`,
		b.ids, b.roles, b.texts, b.toolCalls, b.toolCallIDs, b.steers, b.createdAts)
	require.NoError(t, err)
	require.NoError(t, old.Close())
	migrated := openStore(t, url)

	fresh := newStore(t)
	snap, err := fresh.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = fresh.Append(ctx, "s", snap.Version, searchMessages)
	require.NoError(t, err)

	want := searchRows(t, fresh)
	assert.Equal(t, want, searchRows(t, migrated))
	assert.Equal(t, "read_file", want[2][1])
	assert.Equal(t, "noargs", want[3][1])
	assert.Contains(t, want[0][2], "'ledger'", "ledger.go is two words")

	p, err := migrated.Search(ctx, "s", history.SearchQuery{Text: "ledger"})
	require.NoError(t, err)
	var ids []string
	for _, h := range p.Hits {
		ids = append(ids, h.MessageID)
	}
	assert.ElementsMatch(t, []string{"m0", "m1-é", "m2"}, ids)
}

// TestLeaseStoreSearches: the store a lease's holder writes through
// searches too (a session serving its session through it finds its
// messages).
func TestLeaseStoreSearches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	l := acquire(t, s, "s")
	defer func() { _ = l.Release(ctx) }()
	st := l.Store()
	snap, err := st.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = st.Append(ctx, "s", snap.Version, searchMessages)
	require.NoError(t, err)
	q, ok := st.(history.Searcher)
	require.True(t, ok, "%T is no history.Searcher", st)
	p, err := q.Search(ctx, "s", history.SearchQuery{Text: "ledger"})
	require.NoError(t, err)
	assert.Len(t, p.Hits, 3)
}

// stalePostings counts the differences between the postings table and
// what the messages' search columns hold: rows missing from it, and rows
// it holds for no message (or a message without that word).
func stalePostings(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.pool.QueryRow(context.Background(), `
		WITH want AS (SELECT m.seq, m.session_id, w AS word FROM messages m, unnest(tsvector_to_array(m.search)) AS w),
			have AS (SELECT seq, session_id, word FROM postings)
		SELECT (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM have) a)
			+ (SELECT count(*) FROM (SELECT * FROM have EXCEPT ALL SELECT * FROM want) b)`).Scan(&n))
	return n
}

// TestPostingsFollowMessages: the postings (migration 18) are the words
// of the messages rows hold, through appends, forks (whose own rows get
// their own postings), a deleted source kept for its forks (its postings
// after the fork point go, the rest move with its rows) and the deletes
// that free it; nothing is left at the end.
func TestPostingsFollowMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	historytest.ForkSource(t, s, "src", 40)
	f1, err := s.Fork(ctx, history.ForkSpec{ID: "f1", From: "src", At: "src-9"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "f1", f1.Version, append(historytest.Msgs("f1", 4), searchMessages...))
	require.NoError(t, err)
	_, err = s.Fork(ctx, history.ForkSpec{ID: "f2", From: "f1", At: "f1-1"})
	require.NoError(t, err)
	var rows int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM postings`).Scan(&rows))
	require.Positive(t, rows)
	assert.Zero(t, stalePostings(t, s), "after appends and forks")
	for _, id := range []string{"src", "f1", "f2"} {
		require.NoError(t, s.Delete(ctx, id))
		assert.Zero(t, stalePostings(t, s), "after deleting %s", id)
	}
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM postings`).Scan(&rows))
	assert.Zero(t, rows)
}

// TestPostingsMigration: migration 18 writes the postings of the messages
// stored before it, as Append writes them, and a search reads them. The
// store runs the schema up to 18 only, so that setting the version back
// to 17 runs migration 18 again and no later one.
func TestPostingsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	upTo18 := withMigrations(migrations[:18])
	s := openStore(t, url, upTo18)
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", snap.Version, append(historytest.Msgs("m", 30), searchMessages...))
	require.NoError(t, err)
	want, err := s.Search(ctx, "s", history.SearchQuery{Text: "ledger message"})
	require.NoError(t, err)
	require.NotEmpty(t, want.Hits)
	_, err = s.pool.Exec(ctx, `DROP TABLE postings; UPDATE schema_version SET version = 17`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	migrated := openStore(t, url, upTo18)
	assert.Zero(t, stalePostings(t, migrated))
	got, err := migrated.Search(ctx, "s", history.SearchQuery{Text: "ledger message"})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestSearchReadsPostings: a word of one lexeme is looked up in the
// postings, not in the tsvector column: with its postings gone, the
// messages that hold it are not found.
func TestSearchReadsPostings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	snap, err := s.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = s.Append(ctx, "s", snap.Version, searchMessages)
	require.NoError(t, err)
	p, err := s.Search(ctx, "s", history.SearchQuery{Text: "ledger"})
	require.NoError(t, err)
	assert.Len(t, p.Hits, 3)
	_, err = s.pool.Exec(ctx, `DELETE FROM postings WHERE word = 'ledger'`)
	require.NoError(t, err)
	p, err = s.Search(ctx, "s", history.SearchQuery{Text: "ledger"})
	require.NoError(t, err)
	assert.Empty(t, p.Hits, "read from the postings")
}
