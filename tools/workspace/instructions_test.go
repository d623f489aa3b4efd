package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/workspace"
)

// writeFiles writes each file of files (path relative to root: content).
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// TestReadInstructions_Walk: from cwd up to the repository root, outermost
// first, AGENTS.md before CLAUDE.md in each directory; nothing above the
// repository's root is read.
func TestReadInstructions_Walk(t *testing.T) {
	top := t.TempDir()
	writeFiles(t, top, map[string]string{
		"AGENTS.md":              "above the repository",
		"repo/.git/HEAD":         "ref: refs/heads/main\n",
		"repo/AGENTS.md":         "root rules\n",
		"repo/CLAUDE.md":         "not read: AGENTS.md wins",
		"repo/pkg/CLAUDE.md":     "pkg rules",
		"repo/pkg/sub/.keep":     "",
		"repo/pkg/sub/deep/x.go": "package x",
	})
	cwd := filepath.Join(top, "repo/pkg/sub")
	got, err := workspace.ReadInstructions(cwd, workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, "repo/AGENTS.md"), filepath.Join(top, "repo/pkg/CLAUDE.md")}, got.Files)
	assert.Equal(t, "Project instructions from "+filepath.Join(top, "repo/AGENTS.md")+":\n\nroot rules\n\n"+
		"Project instructions from "+filepath.Join(top, "repo/pkg/CLAUDE.md")+":\n\npkg rules", got.Text)
	assert.False(t, got.Cut)

	// A worktree's .git is a file; a stop (an additional directory) ends
	// the walk too.
	writeFiles(t, top, map[string]string{"wt/.git": "gitdir: elsewhere", "wt/AGENTS.md": "wt", "wt/a/AGENTS.md": "a"})
	got, err = workspace.ReadInstructions(filepath.Join(top, "wt/a"), workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, "wt/AGENTS.md"), filepath.Join(top, "wt/a/AGENTS.md")}, got.Files)
	got, err = workspace.ReadInstructions(filepath.Join(top, "repo/pkg/sub"), workspace.InstructionOptions{Stops: []string{filepath.Join(top, "repo/pkg")}})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, "repo/pkg/CLAUDE.md")}, got.Files)
}

// TestReadInstructions_NoRepository: outside a repository and any stop,
// only cwd's own file is read (never the parents', nor the user's).
func TestReadInstructions_NoRepository(t *testing.T) {
	top := t.TempDir()
	writeFiles(t, top, map[string]string{"AGENTS.md": "parent", "p/AGENTS.md": "mine"})
	got, err := workspace.ReadInstructions(filepath.Join(top, "p"), workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, "p/AGENTS.md")}, got.Files)
	got, err = workspace.ReadInstructions(filepath.Join(top, "none"), workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.Files)
	assert.Empty(t, got.Text)
}

// TestReadInstructions_Bound: text past MaxBytes is cut, at a line end
// near the bound, later files are left out, and a note names both.
func TestReadInstructions_Bound(t *testing.T) {
	top := t.TempDir()
	outer := strings.Repeat("outer line\n", 20) // 220 bytes
	writeFiles(t, top, map[string]string{".git/HEAD": "x", "AGENTS.md": outer, "in/AGENTS.md": "inner"})
	got, err := workspace.ReadInstructions(filepath.Join(top, "in"), workspace.InstructionOptions{MaxBytes: 100})
	require.NoError(t, err)
	assert.True(t, got.Cut)
	assert.Equal(t, []string{filepath.Join(top, "AGENTS.md")}, got.Files, "the inner file is past the bound")
	assert.Contains(t, got.Text, strings.Repeat("outer line\n", 8)+"outer line\n\n[Project instructions cut at 100 bytes: the rest of "+
		filepath.Join(top, "AGENTS.md")+", "+filepath.Join(top, "in/AGENTS.md")+" not included.]")
	assert.NotContains(t, got.Text, "inner")

	// Exactly at the bound: nothing is cut.
	got, err = workspace.ReadInstructions(filepath.Join(top, "in"), workspace.InstructionOptions{MaxBytes: len(outer) + len("inner")})
	require.NoError(t, err)
	assert.False(t, got.Cut)
	assert.Len(t, got.Files, 2)
}

// TestReadInstructions_Hostile: a relative cwd is refused; a FIFO named
// AGENTS.md is skipped without blocking (CLAUDE.md is then read).
func TestReadInstructions_Hostile(t *testing.T) {
	_, err := workspace.ReadInstructions("relative/dir", workspace.InstructionOptions{})
	require.ErrorIs(t, err, workspace.ErrBadRoot)

	top := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(top, "AGENTS.md"), 0o644))
	writeFiles(t, top, map[string]string{"CLAUDE.md": "claude"})
	got, err := workspace.ReadInstructions(top, workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(top, "CLAUDE.md")}, got.Files, "a FIFO is not instructions: the next name is read")
}

// TestReadInstructions_LinkOut: an instruction file that is a link out of
// its directory (a repository's AGENTS.md -> a credentials file) is never
// read into the system prompt; a link to another file of the directory
// (CLAUDE.md -> AGENTS.md is common) is.
func TestReadInstructions_LinkOut(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	require.NoError(t, os.WriteFile(secret, []byte("aws_secret_access_key = SECRET"), 0o600))
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{".git/HEAD": "ref: refs/heads/main\n"})
	require.NoError(t, os.Symlink(secret, filepath.Join(repo, "AGENTS.md")))
	got, err := workspace.ReadInstructions(repo, workspace.InstructionOptions{})
	require.Error(t, err, "the link out is refused, and said")
	assert.NotContains(t, got.Text, "SECRET")
	assert.Empty(t, got.Files)

	inside := t.TempDir()
	writeFiles(t, inside, map[string]string{".git/HEAD": "x", "rules.md": "inside rules"})
	require.NoError(t, os.Symlink("rules.md", filepath.Join(inside, "AGENTS.md")))
	got, err = workspace.ReadInstructions(inside, workspace.InstructionOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Text, "inside rules")
}

// TestReadInstructions_NotText: an instruction file with a NUL byte or
// bytes that are not UTF-8 is never put in the prompt: it is skipped and
// named in the error (ErrNotText), and the directory's next name is read;
// a valid file cut at the bound inside a rune is text.
func TestReadInstructions_NotText(t *testing.T) {
	for name, content := range map[string]string{
		"NUL":       "rules\x00\x01\x02",
		"not UTF-8": "r\xe8gles en Latin-1\n",
	} {
		t.Run(name, func(t *testing.T) {
			top := t.TempDir()
			writeFiles(t, top, map[string]string{".git/HEAD": "x", "AGENTS.md": content, "CLAUDE.md": "claude rules", "in/AGENTS.md": content})
			got, err := workspace.ReadInstructions(filepath.Join(top, "in"), workspace.InstructionOptions{})
			require.ErrorIs(t, err, workspace.ErrNotText)
			assert.Contains(t, err.Error(), "project instructions "+filepath.Join(top, "AGENTS.md")+": not UTF-8 text: it ")
			assert.Contains(t, err.Error(), filepath.Join(top, "in/AGENTS.md"))
			assert.Equal(t, []string{filepath.Join(top, "CLAUDE.md")}, got.Files, "the next name is read")
			assert.NotContains(t, got.Text, content)
		})
	}
	top := t.TempDir()
	writeFiles(t, top, map[string]string{".git/HEAD": "x", "AGENTS.md": "règles"})
	got, err := workspace.ReadInstructions(top, workspace.InstructionOptions{MaxBytes: 1}) // read: "r" and half of "è"
	require.NoError(t, err)
	assert.True(t, got.Cut)
	assert.Equal(t, []string{filepath.Join(top, "AGENTS.md")}, got.Files)
}
