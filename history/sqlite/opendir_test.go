package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenDirectory: a directory is refused with an error that says so.
func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.Error(t, err)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), "is a directory")
}

// TestOpenNotADatabase: a file that is not a SQLite database is refused by
// Open and OpenReadOnly with ErrNotAStore and words, not SQLite's "file is
// not a database (26)"; the file is left as it was.
func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	content := []byte(strings.Repeat("these are my notes, not a database\n", 200))
	require.NoError(t, os.WriteFile(path, content, 0o600))
	_, err := Open(path)
	require.ErrorIs(t, err, ErrNotAStore)
	assert.Contains(t, err.Error(), "the file is not a SQLite database")
	assert.NotContains(t, err.Error(), "(26)")
	_, err = OpenReadOnly(path)
	require.ErrorIs(t, err, ErrNotAStore)
	assert.NotContains(t, err.Error(), "(26)")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, got)
}
