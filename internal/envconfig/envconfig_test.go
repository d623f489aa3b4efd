package envconfig

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clearEnv(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"} {
		t.Setenv(k, "")
	}
}

// TestProvider: the order (Anthropic, OpenAI, offline), and malformed
// variables reported by name.
func TestProvider(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{"nothing", nil, Offline, ""},
		{"openai base URL", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "openai:gpt-4o-mini", ""},
		{"anthropic wins", map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic:claude-sonnet-5-5", ""},
		{"bad openai URL", map[string]string{"OPENAI_BASE_URL": "not a url"}, "", "OPENAI_BASE_URL"},
		{"bad anthropic URL", map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "nope"}, "", "ANTHROPIC_BASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p, name, err := Provider(nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, p)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, p)
			assert.Equal(t, tt.want, name)
		})
	}
}

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
