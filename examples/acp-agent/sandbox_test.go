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
	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// A bad --sandbox or --command-env is a startup error naming the flag; a
// provider or credential name is refused there, not silently dropped.
func TestSandboxFlagErrors(t *testing.T) {
	bin := agentBinary(t)
	store := filepath.Join(t.TempDir(), "s.db")
	for name, tt := range map[string]struct {
		args  []string
		wants []string
	}{
		"unknown mode":        {[]string{"--sandbox", "on"}, []string{"-sandbox", `"on"`, "off, auto or required"}},
		"provider key":        {[]string{"--command-env", "OPENAI_API_KEY"}, []string{"-command-env", "OPENAI_API_KEY", "never passed"}},
		"credential in list":  {[]string{"--command-env", "GOFLAGS,GITHUB_TOKEN"}, []string{"-command-env", "GITHUB_TOKEN", "TOKEN"}},
		"not a name":          {[]string{"--command-env", "A=B"}, []string{"-command-env", "not an environment variable name"}},
		"agent variable":      {[]string{"--command-env", "SESSIONKIT_MODEL"}, []string{"-command-env", "SESSIONKIT_MODEL"}},
		"network not boolean": {[]string{"--command-network=maybe"}, []string{"-command-network"}},
	} {
		t.Run(name, func(t *testing.T) {
			status, stdout, stderr := runAgent(t, bin, append([]string{"--store", store}, tt.args...), nil)
			assert.Equal(t, exitUsage, status, "stderr: %s", stderr)
			assert.Empty(t, stdout, "nothing is served")
			line := strings.TrimSuffix(stderr, "\n")
			assert.NotContains(t, line, "\n", "one line")
			for _, w := range tt.wants {
				assert.Contains(t, line, w)
			}
		})
	}
}

// The agent runs run_command in its sandbox helper (its main calls the
// hook): a write outside the session's directory is refused, and the
// command's environment has the names added with --command-env but no
// credential.
func TestAgentSandboxesCommands(t *testing.T) {
	// This test binary calls no hook (the agent binary does), so only the
	// kernel's part of the status counts: ABI 0 is no Landlock.
	if s := sandbox.Available(); s.ABI == 0 {
		if os.Getenv("SESSIONKIT_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("SESSIONKIT_REQUIRE_LANDLOCK=1 but %s", s)
		}
		t.Skipf("skipped: %s", s)
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"} {
		t.Setenv(k, "")
	}
	t.Setenv("GITHUB_TOKEN", "ghp-agent-leak")
	t.Setenv("ADDED_NAME", "added-value")
	base := t.TempDir()
	project := filepath.Join(base, "project")
	require.NoError(t, os.Mkdir(project, 0o755))

	ctx := context.Background()
	c, err := acp.Start(ctx, agentBinary(t), []string{"--store", filepath.Join(t.TempDir(), "s.db"), "--allow-all", "--command-env", "ADDED_NAME"}, acp.ClientOptions{})
	require.NoError(t, err)
	defer c.Close()
	rs, err := c.NewSession(ctx, project)
	require.NoError(t, err)
	h, err := rs.Prompt(ctx, session.PromptRequest{Text: "run `env; printf pwned > ../outside.txt && printf wrote-outside`"})
	require.NoError(t, err)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, res.Err)
	var out *history.Message
	for i := range res.Messages {
		if res.Messages[i].Role == history.RoleTool {
			out = &res.Messages[i]
		}
	}
	require.NotNil(t, out, "run_command was called")
	assert.Contains(t, out.Text, "ADDED_NAME=added-value\n")
	assert.NotContains(t, out.Text, "ghp-agent-leak")
	assert.NotContains(t, out.Text, "wrote-outside")
	_, err = os.Stat(filepath.Join(base, "outside.txt"))
	assert.True(t, os.IsNotExist(err), "nothing was written outside the session's directory")
}

// The agent says at startup how commands run: confined (with the Landlock
// ABI), or why not.
func TestStartupSaysHowCommandsRun(t *testing.T) {
	bin := agentBinary(t)
	store := filepath.Join(t.TempDir(), "s.db")
	_, _, stderr := runAgent(t, bin, []string{"--store", store, "--sandbox=off"}, nil)
	assert.Contains(t, stderr, "commands are not sandboxed")
	assert.Contains(t, stderr, "the sandbox is off")
	if sandbox.Available().ABI > 0 {
		_, _, stderr = runAgent(t, bin, []string{"--store", store}, nil)
		assert.Contains(t, stderr, "commands run in the sandbox")
		assert.Contains(t, stderr, "Landlock ABI")
	}
}
