package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// searchMessages are messages of every kind the index handles.
var searchMessages = []history.Message{
	{ID: "m0", Role: history.RoleUser, Text: "héllo \x00 wörld: rename the ledger\x00s"},
	{ID: "m1-é", Role: history.RoleAssistant, Text: "reading", ToolCalls: []history.ToolCall{
		{ID: "c1-ü", Name: "read_file", Arguments: json.RawMessage(`{"path":"/project/ledger.go"}`)},
		{ID: "c2", Name: "bin", Arguments: json.RawMessage("\"\xff\"")},
		{ID: "c3", Name: "noargs"},
	}},
	{ID: "m2", Role: history.RoleTool, ToolCallID: "c1-ü", Text: "package ledger"},
	{ID: "m3", Role: history.RoleTool, ToolCallID: "c3", Text: "done"},
	{ID: "m4", Role: history.RoleTool, ToolCallID: "unknown", Text: "orphan"},
	{ID: "m5", Role: history.RoleAssistant, ToolCalls: []history.ToolCall{}},
}

// indexRows reads the search index of the file's session "s".
func indexRows(t *testing.T, s *Store) [][6]any {
	t.Helper()
	rows, err := s.r.Query(`SELECT f.rowid & 4294967295, f.text, f.tool, f.id, f.role, f.pos FROM message_fts f ORDER BY f.rowid`)
	require.NoError(t, err)
	defer rows.Close()
	var out [][6]any
	for rows.Next() {
		var seq, pos int64
		var text, tool, id, role string
		require.NoError(t, rows.Scan(&seq, &text, &tool, &id, &role, &pos))
		out = append(out, [6]any{seq, text, tool, id, role, pos})
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSearchMigration: migration 6 indexes the messages of a file of
// schema version 5 exactly as Append indexes them (text, tool calls, the
// tool a result answers), and its sessions are searchable.
func TestSearchMigration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old := openAtVersion(t, filepath.Join(dir, "old.db"), 5)
	_, err := old.w.ExecContext(ctx, `INSERT INTO sessions (id, version, message_count, next_pos) VALUES ('other', 1, 1, 1), ('s', 1, ?, ?)`, len(searchMessages), len(searchMessages))
	require.NoError(t, err)
	other, err := encodeMessage(&history.Message{ID: "o0", Role: history.RoleUser, Text: "ledger elsewhere"})
	require.NoError(t, err)
	_, err = old.w.ExecContext(ctx, `INSERT INTO messages (session_id, pos, seq, body) VALUES ('other', 0, 0, ?)`, other.body)
	require.NoError(t, err)
	for i := range searchMessages {
		row, err := encodeMessage(&searchMessages[i])
		require.NoError(t, err)
		_, err = old.w.ExecContext(ctx, `INSERT INTO messages (session_id, pos, seq, body) VALUES ('s', ?, ?, ?)`, i, i, row.body)
		require.NoError(t, err)
	}
	require.NoError(t, old.Close())
	migrated := open(t, filepath.Join(dir, "old.db"))

	fresh := open(t, filepath.Join(dir, "fresh.db"), withIndexBound(0))
	snap, err := fresh.Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	_, err = fresh.Append(ctx, "s", snap.Version, searchMessages)
	require.NoError(t, err)

	want := indexRows(t, fresh)
	got := indexRows(t, migrated)
	require.Len(t, got, len(want)+1, "the other session's message is indexed too")
	// The sessions are numbered by ID: "other" is 1, "s" is 2.
	var num int64
	require.NoError(t, migrated.r.QueryRow(`SELECT num FROM sessions WHERE id = 's'`).Scan(&num))
	assert.Equal(t, int64(2), num)
	// The argument that is not UTF-8 is stored as bytes; the migration
	// leaves it out of the text, Append keeps its bytes.
	for i := range want {
		if want[i][0] == int64(1) {
			want[i][1] = "reading\nread_file {\"path\":\"/project/ledger.go\"}\nbin \nnoargs "
		}
	}
	assert.Equal(t, want, got[1:])
	assert.Equal(t, "read_file", want[2][2])
	assert.Equal(t, "noargs", want[3][2])
	assert.Equal(t, "", want[4][2])
	assert.Equal(t, [3]any{"m2", "tool", int64(2)}, [3]any{want[2][3], want[2][4], want[2][5]})

	p, err := migrated.Search(ctx, "s", history.SearchQuery{Text: "ledger"})
	require.NoError(t, err)
	var ids []string
	for _, h := range p.Hits {
		ids = append(ids, h.MessageID)
	}
	assert.ElementsMatch(t, []string{"m0", "m1-é", "m2"}, ids)
	p, err = migrated.Search(ctx, "s", history.SearchQuery{Text: "ledgers wörld"})
	require.NoError(t, err)
	require.NotEmpty(t, p.Hits)
	assert.Equal(t, "m0", p.Hits[0].MessageID, "words next to NUL bytes are words")
	assert.Equal(t, 1.0, float64(int(p.Hits[0].Score)), "m0 holds both words: the whole Cover (1)")
	// A session created after the migration takes the next number.
	_, err = migrated.Create(ctx, history.NewSession{ID: "new"})
	require.NoError(t, err)
	require.NoError(t, migrated.r.QueryRow(`SELECT num FROM sessions WHERE id = 'new'`).Scan(&num))
	assert.Equal(t, int64(3), num)
}
