package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// This test binary does not call sandbox.Main: it cannot start the helper,
// so the sandbox is not available, auto runs commands unconfined (saying
// so) and required refuses them.
func TestWithoutTheHook(t *testing.T) {
	s := sandbox.Available()
	assert.False(t, s.Available)
	assert.Contains(t, s.Reason, "sandbox.Main")
	assert.False(t, s.Contained)
	assert.Contains(t, s.NotContained, "sandbox.Main")

	auto := sandbox.Policy{}
	assert.Contains(t, auto.Warning(), "not sandboxed")
	c, err := auto.Prepare("echo hi", t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	assert.False(t, c.Confined)
	var out strings.Builder
	code, err := c.Run(context.Background(), &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "hi\n", out.String())

	_, err = sandbox.Policy{Mode: sandbox.Required}.Prepare("echo hi", t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sandbox required")
	assert.Contains(t, err.Error(), "the command was not run")
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"off", "auto", "required"} {
		m, err := sandbox.ParseMode(s)
		require.NoError(t, err)
		assert.Equal(t, sandbox.Mode(s), m)
	}
	_, err := sandbox.ParseMode("on")
	assert.ErrorContains(t, err, "want off, auto or required")
}

// EnvName refuses provider, agent and credential names, and TMPDIR.
func TestEnvName(t *testing.T) {
	for _, n := range []string{"GOFLAGS", "CC", "NODE_ENV", "http_proxy"} {
		assert.NoError(t, sandbox.EnvName(n), n)
	}
	for _, n := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "SESSIONKIT_MODEL",
		"GITHUB_TOKEN", "npm_token", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "MY_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS",
		"SSH_AUTH_SOCK_KEY", "TMPDIR", "", "A=B", "1X"} {
		assert.Error(t, sandbox.EnvName(n), n)
	}
}

// Status says what it is in one line.
func TestStatusString(t *testing.T) {
	assert.Equal(t, "Landlock ABI 7", sandbox.Status{Available: true, ABI: 7}.String())
	assert.Equal(t, "Landlock ABI 7, PID and mount namespaces", sandbox.Status{Available: true, ABI: 7, Contained: true}.String())
	assert.Equal(t, "sandbox unavailable: old kernel", sandbox.Status{Reason: "old kernel"}.String())
}
