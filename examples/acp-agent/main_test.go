package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// TestStoreIsOwnerOnly starts the agent binary with a store in a directory
// that does not exist yet: the directory is created 0700, the SQLite file
// 0600, and nothing but protocol goes to stdout.
func TestStoreIsOwnerOnly(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "acp-agent")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := filepath.Join(t.TempDir(), "data", "sessionkit")
	store := filepath.Join(dir, "sessions.db")
	cmd := exec.Command(bin, "--store", store)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	require.NoError(t, err)
	buf := make([]byte, 4096)
	n, err := stdout.Read(buf)
	require.NoError(t, err)
	assert.Contains(t, string(buf[:n]), `"protocolVersion":1`)
	require.NoError(t, stdin.Close())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the agent did not exit when stdin closed")
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, store: 0o600} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, fi.Mode().Perm(), path)
	}
}

// TestOpenStoreBadInput: a PostgreSQL URL that cannot be used fails with a
// clear error that does not show the password, and creates no file named
// after it; a URL in another case is still taken for PostgreSQL.
func TestOpenStoreBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := context.Background()
	for _, spec := range []string{
		"postgres://user:secret@127.0.0.1:1/db?connect_timeout=2",
		"PostgreSQL://user:secret@127.0.0.1:1/db?connect_timeout=2",
		"postgres://user:secret@[::1/db", // malformed
		"postgres://user:secret@127.0.0.1:1/db?pool_max_conns=zero",
	} {
		st, where, err := openStore(ctx, spec, time.Second)
		require.Error(t, err, spec)
		assert.Nil(t, st)
		assert.Empty(t, where)
		assert.NotContains(t, err.Error(), "secret", spec)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "no SQLite file was created for a URL")

	st, where, err := openStore(ctx, filepath.Join(dir, "a", "s.db"), time.Second)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a", "s.db"), where)
	require.NoError(t, st.Close())
}

// TestChooseProvider: ANTHROPIC_API_KEY picks Anthropic, and wins over the
// OpenAI variables; the OpenAI variables alone pick OpenAI; nothing picks
// the offline provider. No request is made.
func TestChooseProvider(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing", nil, "offline"},
		{"openai key", map[string]string{"OPENAI_API_KEY": "sk-o"}, "openai:gpt-4o-mini"},
		{"openai base URL", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "openai:gpt-4o-mini"},
		{"anthropic key", map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, "anthropic:claude-sonnet-5-5"},
		{"both: anthropic wins", map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-o"}, "anthropic:claude-sonnet-5-5"},
		{"model", map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "SESSIONKIT_MODEL": "claude-opus-5-5"}, "anthropic:claude-opus-5-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL"} {
				t.Setenv(k, tt.env[k])
			}
			_, name, err := chooseProvider(zap.NewNop())
			require.NoError(t, err)
			assert.Equal(t, tt.want, name)
		})
	}
}

// TestRecallFlag: the agent gives its sessions the recall tool unless
// -recall=false.
func TestRecallFlag(t *testing.T) {
	c, err := parseFlags(nil)
	require.NoError(t, err)
	assert.True(t, c.recall, "on by default")
	c, err = parseFlags([]string{"-recall=false"})
	require.NoError(t, err)
	assert.False(t, c.recall)
	_, err = parseFlags([]string{"-recall=maybe"})
	assert.ErrorContains(t, err, "-recall")
}

// TestModelsAndModes: --models lists the model picker's values, the first
// a new session's; without it the provider's configured model alone; an
// empty or repeated name is a usage error naming the flag. --allow-all
// makes full-auto the first mode (a new session's).
func TestModelsAndModes(t *testing.T) {
	c, err := parseFlags([]string{"--models", "a, b,c"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, c.models)
	assert.Equal(t, []acp.Model{{ID: "a"}, {ID: "b"}, {ID: "c"}}, models(c.models, offline.New()))
	assert.Equal(t, []acp.Model{{ID: "offline"}}, models(nil, offline.New()), "the provider's model alone")
	for _, bad := range [][]string{{"--models", "a,,b"}, {"--models", "a,a"}, {"--models", ""}} {
		_, err := parseFlags(bad)
		assert.ErrorContains(t, err, "-models", "%v", bad)
	}
	assert.Equal(t, workspace.ModeAsk, modes(false)[0].ID)
	assert.Equal(t, workspace.ModeFullAuto, modes(true)[0].ID)
	assert.Len(t, modes(true), 4)
}
