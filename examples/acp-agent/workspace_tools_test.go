package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// The agent gives each session the workspace tools of its cwd: the offline
// provider calls read_file for "Read file notes.txt", and gets the file; a
// path outside the session's directory is refused; write_file asks the
// client first, and this client (acp.Client) grants nothing, so nothing is
// written.
func TestSessionsGetWorkspaceTools(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"} {
		t.Setenv(k, "")
	}
	base := t.TempDir()
	project := filepath.Join(base, "project")
	require.NoError(t, os.Mkdir(project, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("the release is in March\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("SECRET\n"), 0o644))

	ctx := context.Background()
	c, err := acp.Start(ctx, agentBinary(t), []string{"--store", filepath.Join(t.TempDir(), "s.db")}, acp.ClientOptions{})
	require.NoError(t, err)
	defer c.Close()
	rs, err := c.NewSession(ctx, project)
	require.NoError(t, err)

	tool := func(text string) *history.Message {
		h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
		for i := range res.Messages {
			if res.Messages[i].Role == history.RoleTool {
				return &res.Messages[i]
			}
		}
		return nil
	}
	read := tool("Read file notes.txt")
	require.NotNil(t, read, "read_file was called")
	assert.Equal(t, "the release is in March\n", read.Text)

	out := tool("Read file ../secret.txt")
	require.NotNil(t, out)
	assert.Contains(t, out.Text, "outside the workspace")
	assert.NotContains(t, out.Text, "SECRET")

	write := tool("Please call write_file with path: x.txt")
	require.NotNil(t, write, "write_file is offered")
	assert.Contains(t, write.Text, "the permission request was cancelled")
	assert.NotContains(t, write.Text, "the turn was cancelled", "the turn was not cancelled: it goes on")
	assert.Contains(t, write.Text, "the turn goes on")
	_, err = os.Stat(filepath.Join(project, "x.txt"))
	assert.True(t, os.IsNotExist(err))
	assert.False(t, strings.Contains(read.Text, "SECRET"))
}

// A session in / or in the user's home directory itself is refused, and
// the error names the directory.
func TestSessionInRootOrHomeIsRefused(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"} {
		t.Setenv(k, "")
	}
	home := t.TempDir()
	t.Setenv("HOME", home) // the agent inherits it
	ctx := context.Background()
	c, err := acp.Start(ctx, agentBinary(t), []string{"--store", filepath.Join(t.TempDir(), "s.db")}, acp.ClientOptions{})
	require.NoError(t, err)
	defer c.Close()
	for dir, why := range map[string]string{"/": "root of the file system", home: "home directory"} {
		_, err := c.NewSession(ctx, dir)
		require.Error(t, err, dir)
		assert.Contains(t, err.Error(), why)
		assert.Contains(t, err.Error(), dir)
	}
	project := filepath.Join(home, "project")
	require.NoError(t, os.Mkdir(project, 0o755))
	_, err = c.NewSession(ctx, project)
	require.NoError(t, err, "a directory below home is fine")
}
