package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProjectInstructions: a session in a repository's subdirectory reads
// the AGENTS.md files from there up to the repository root; they are
// logged and named in the session/new response's _meta;
// --no-project-instructions reads none.
func TestProjectInstructions(t *testing.T) {
	clearProviderEnv(t)
	repo := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte("use tabs"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "sub", "CLAUDE.md"), []byte("sub rules"), 0o644))
	cwd := filepath.Join(repo, "sub")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"read", nil, fmt.Sprintf(`"_meta":{"sessionkit":{"projectInstructions":[%q,%q]}}`, filepath.Join(repo, "AGENTS.md"), filepath.Join(cwd, "CLAUDE.md"))},
		{"off", []string{"--no-project-instructions"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results, stderr := pipeNewSession(t, cwd, tc.args...)
			created := string(results["2"])
			if tc.want == "" {
				assert.NotContains(t, created, "projectInstructions")
				assert.NotContains(t, stderr, `"project instructions"`)
				return
			}
			assert.Contains(t, created, tc.want)
			assert.Contains(t, stderr, `"project instructions"`)
			assert.Contains(t, stderr, filepath.Join(repo, "AGENTS.md"))
		})
	}
}
