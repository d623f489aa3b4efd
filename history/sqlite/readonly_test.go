package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// readFile returns the bytes of path.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestOpenReadOnly_WritesNothing: a store opened read-only reads what was
// written, refuses every write with ErrReadOnly, and leaves the file's
// bytes as they were.
func TestOpenReadOnly_WritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	w := open(t, path)
	snap, err := w.Create(ctx, history.NewSession{ID: "s", Title: "kept"})
	require.NoError(t, err)
	_, err = w.Append(ctx, "s", snap.Version, historytest.Msgs("m", 3))
	require.NoError(t, err)
	require.NoError(t, w.LogEvents(ctx, "s", history.EventBatch{Through: 9, Events: []history.LoggedEvent{{Seq: 9, Kind: "k", Data: []byte("{}")}}}))
	require.NoError(t, w.Close())
	before := readFile(t, path)

	for _, opts := range [][]Option{nil, {WithImmutable()}} {
		r, err := OpenReadOnly(path, opts...)
		require.NoError(t, err)
		got, err := r.Load(ctx, "s")
		require.NoError(t, err)
		assert.Len(t, got.Active, 3)
		assert.EqualValues(t, 9, got.LastSeq)
		page, err := r.ListSessions(ctx, history.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Sessions, 1)
		assert.Equal(t, "kept", page.Sessions[0].Title)
		evs, err := r.Events(ctx, "s", 0, 0)
		require.NoError(t, err)
		assert.Len(t, evs, 1)
		lease, err := r.ReadLease(ctx, "s")
		require.NoError(t, err)
		assert.Nil(t, lease)

		_, err = r.Create(ctx, history.NewSession{ID: "t"})
		assert.ErrorIs(t, err, ErrReadOnly)
		_, err = r.Append(ctx, "s", got.Version, historytest.Msgs("x", 1))
		assert.ErrorIs(t, err, ErrReadOnly)
		_, err = r.Acquire(ctx, "s")
		assert.ErrorIs(t, err, ErrReadOnly)
		assert.ErrorIs(t, r.LogEvents(ctx, "s", history.EventBatch{Through: 20}), ErrReadOnly)
		assert.ErrorIs(t, r.Delete(ctx, "s"), ErrReadOnly)
		_, err = r.Load(ctx, "s")
		require.NoError(t, err, "a refused Delete deletes nothing")
		require.NoError(t, r.Close())
		assert.Equal(t, before, readFile(t, path), "the file's bytes are unchanged")
	}
}

// TestOpenReadOnly_OlderSchema: a file at an older schema version is read
// through a migrated copy in memory; the file keeps its version and bytes.
func TestOpenReadOnly_OlderSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	ctx := context.Background()
	old := openAtVersion(t, path, 3) // one column per message field
	_, err := old.w.ExecContext(ctx, `INSERT INTO sessions (id, version, next_pos, message_count) VALUES ('s', 1, 2, 2)`)
	require.NoError(t, err)
	for i := range 2 {
		_, err = old.w.ExecContext(ctx, `INSERT INTO messages (session_id, pos, seq, id, role, text, created_at) VALUES ('s', ?, ?, ?, 'user', 'Old work', 1000)`, i, i, "m"+strconv.Itoa(i))
		require.NoError(t, err)
	}
	require.NoError(t, old.Close())
	before := readFile(t, path)

	r, err := OpenReadOnly(path)
	require.NoError(t, err)
	got, err := r.Load(ctx, "s")
	require.NoError(t, err)
	assert.Len(t, got.Active, 2)
	assert.Equal(t, "m0", got.Active[0].ID)
	_, err = r.Create(ctx, history.NewSession{ID: "t"})
	assert.ErrorIs(t, err, ErrReadOnly)
	require.NoError(t, r.Close())
	assert.Equal(t, before, readFile(t, path))
	assert.Equal(t, 3, readSchemaVersion(t, path), "not migrated")
}

// TestOpenReadOnly_Refused: a file at a newer schema version, and one that
// holds no store (an empty file), are refused with one line that says why,
// and stay as they were.
func TestOpenReadOnly_Refused(t *testing.T) {
	dir := t.TempDir()
	newer := filepath.Join(dir, "newer.db")
	s := open(t, newer)
	_, err := s.w.Exec(`UPDATE schema_version SET version = ?`, len(migrations)+1)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	before := readFile(t, newer)
	_, err = OpenReadOnly(newer)
	require.ErrorIs(t, err, ErrNewerSchema)
	assert.Contains(t, err.Error(), "schema version "+strconv.Itoa(len(migrations)+1))
	assert.Contains(t, err.Error(), "versions up to "+strconv.Itoa(len(migrations)))
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, before, readFile(t, newer))

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err = OpenReadOnly(empty)
	require.ErrorIs(t, err, ErrNotAStore)
	assert.Empty(t, readFile(t, empty), "no schema written")

	_, err = OpenReadOnly(filepath.Join(dir, "missing.db"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.NoFileExists(t, filepath.Join(dir, "missing.db"))
}
