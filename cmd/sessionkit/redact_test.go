package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoreMessagesNeverShowAPassword: every message that names a store it
// cannot open names it without its password: a malformed URL, a
// key=value connection string mistaken for a SQLite path (missing, or a
// directory), a path it cannot stat.
func TestStoreMessagesNeverShowAPassword(t *testing.T) {
	dir := t.TempDir()
	asDir := filepath.Join(dir, "host=db password=secret")
	require.NoError(t, os.Mkdir(asDir, 0o700))
	loop := filepath.Join(dir, "loop password=secret")
	require.NoError(t, os.Symlink(loop, loop)) // stat fails: too many links
	for _, tt := range []struct {
		spec string
		want string
	}{
		{"postgres://u:secret/x@[::1/db?password=secret", "postgres://u:xxxxx@[::1/db?password=xxxxx: not a valid postgres:// URL"},
		{"host=db password=secret dbname=sessions", "-store host=db password=xxxxx dbname=sessions: no such file"},
		{asDir, "password=xxxxx is a directory"},
		{loop, "password=xxxxx: too many levels of symbolic links"},
	} {
		res := sk(t, "--store", tt.spec, "sessions")
		assert.NotEqual(t, 0, res.status, tt.spec)
		line := strings.TrimSuffix(res.stderr, "\n")
		assert.NotContains(t, line, "\n", tt.spec)
		assert.Contains(t, line, tt.want, tt.spec)
		assert.NotContains(t, line, "secret", tt.spec)
	}
}
