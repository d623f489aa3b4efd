package envconfig

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefaultStore(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data")
	assert.Equal(t, filepath.Join("/data", "sessionkit", "sessions.db"), DefaultStore())
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	assert.Equal(t, filepath.Join("/home/u", ".local", "share", "sessionkit", "sessions.db"), DefaultStore())
}

func TestIsPostgresURL(t *testing.T) {
	for spec, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://h/db": true, "PostgreSQL://h/db": true,
		"sessions.db": false, "/var/lib/postgres/s.db": false, "postgres.db": false,
	} {
		assert.Equal(t, want, IsPostgresURL(spec), spec)
	}
}
