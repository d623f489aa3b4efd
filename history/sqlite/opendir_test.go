package sqlite

import (
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
