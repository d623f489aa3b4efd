package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	agentBin  string
	buildErr  error
)

// TestMain removes the agent binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if agentBin != "" {
		_ = os.RemoveAll(filepath.Dir(agentBin))
	}
	os.Exit(code)
}

// agentBinary builds the agent once for the tests of this file.
func agentBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acp-agent-test-")
		if err != nil {
			buildErr = err
			return
		}
		agentBin = filepath.Join(dir, "acp-agent")
		if out, err := exec.Command("go", "build", "-o", agentBin, ".").CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	require.NoError(t, buildErr)
	return agentBin
}

// TestStartupErrors: every bad configuration is reported before anything
// is served, on one line of stderr that names the flag or variable at
// fault, with exit status 2. The agent is sent an initialize request: it
// must not answer it.
func TestStartupErrors(t *testing.T) {
	bin := agentBinary(t)
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain-file")
	require.NoError(t, os.WriteFile(notDir, []byte("x"), 0o600))
	good := filepath.Join(dir, "ok", "sessions.db")
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		wants []string // in the one line of stderr
	}{
		{"negative auto-compact-tokens", []string{"--store", good, "--auto-compact-tokens", "-5"}, nil, []string{"--auto-compact-tokens", "-5", "negative"}},
		{"non-numeric auto-compact-tokens", []string{"--store", good, "--auto-compact-tokens", "lots"}, nil, []string{"--auto-compact-tokens", `"lots"`}},
		{"negative context-window", []string{"--store", good, "--context-window", "-1"}, nil, []string{"--context-window", "negative"}},
		{"non-numeric context-window", []string{"--store", good, "--context-window", "1e5x"}, nil, []string{"--context-window"}},
		{"zero lease-ttl", []string{"--store", good, "--lease-ttl", "0s"}, nil, []string{"--lease-ttl"}},
		{"negative summary-delay", []string{"--store", good, "--summary-delay", "-1s"}, nil, []string{"--summary-delay"}},
		{"negative offline-delta-size", []string{"--store", good, "--offline-delta-size", "-2"}, nil, []string{"--offline-delta-size"}},
		{"zero max-sessions", []string{"--store", good, "--max-sessions", "0"}, nil, []string{"--max-sessions", "0", "not positive"}},
		{"non-numeric max-sessions", []string{"--store", good, "--max-sessions", "many"}, nil, []string{"--max-sessions", `"many"`}},
		{"allow-all not a boolean", []string{"--store", good, "--allow-all=sometimes"}, nil, []string{"--allow-all", `"sometimes"`}},
		{"unknown flag", []string{"--store", good, "--auto-compact", "5"}, nil, []string{"--auto-compact"}},
		{"positional argument", []string{"--store", good, "serve"}, nil, []string{`"serve"`, "argument"}},
		{"store is a directory", []string{"--store", dir}, nil, []string{"--store", dir, "is a directory: give the path of a SQLite file"}},
		{"store under a file", []string{"--store", filepath.Join(notDir, "sessions.db")}, nil, []string{"--store", "cannot make its directory", "not a directory"}},
		{"empty store", []string{"--store", ""}, nil, []string{"--store", "empty"}},
		{"malformed postgres URL", []string{"--store", "postgres://u:secret@[::1/db"}, nil, []string{"--store", "postgres://"}},
		{"malformed OPENAI_BASE_URL", []string{"--store", good}, map[string]string{"OPENAI_BASE_URL": "not a url"}, []string{"OPENAI_BASE_URL", `"not a url"`}},
		{"OPENAI_BASE_URL without scheme", []string{"--store", good}, map[string]string{"OPENAI_BASE_URL": "localhost:8080/v1"}, []string{"OPENAI_BASE_URL"}},
		{"OPENAI_BASE_URL that does not parse", []string{"--store", good}, map[string]string{"OPENAI_BASE_URL": "http://[::1"}, []string{"OPENAI_BASE_URL", `"http://[::1" is not a valid URL (missing ']' in host)`}},
		{"malformed ANTHROPIC_BASE_URL", []string{"--store", good}, map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "::"}, []string{"ANTHROPIC_BASE_URL"}},
		// A provider variable that is set but not enough never means the
		// offline provider.
		{"SESSIONKIT_MODEL alone", []string{"--store", good}, map[string]string{"SESSIONKIT_MODEL": "gpt-5"}, []string{"SESSIONKIT_MODEL", `"gpt-5"`, "no provider"}},
		{"ANTHROPIC_BASE_URL without a key", []string{"--store", good}, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}, []string{"ANTHROPIC_BASE_URL is set", "ANTHROPIC_API_KEY is not"}},
		{"blank OPENAI_API_KEY", []string{"--store", good}, map[string]string{"OPENAI_API_KEY": "   "}, []string{"OPENAI_API_KEY is blank"}},
		{"blank ANTHROPIC_API_KEY", []string{"--store", good}, map[string]string{"ANTHROPIC_API_KEY": " "}, []string{"ANTHROPIC_API_KEY is blank"}},
		{"unknown --provider", []string{"--store", good, "--provider", "gemini"}, nil, []string{`--provider "gemini"`, "offline, openai or anthropic"}},
		{"--provider openai without its variables", []string{"--store", good, "--provider", "openai"}, nil, []string{"--provider is openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"}},
		{"SESSIONKIT_PROVIDER anthropic without a key", []string{"--store", good}, map[string]string{"SESSIONKIT_PROVIDER": "anthropic"}, []string{"SESSIONKIT_PROVIDER is anthropic", "ANTHROPIC_API_KEY"}},
		{"zero request-timeout", []string{"--store", good, "--request-timeout", "0s"}, nil, []string{"--request-timeout", "not positive"}},
		{"negative idle-timeout", []string{"--store", good, "--idle-timeout", "-1s"}, nil, []string{"--idle-timeout", "not positive"}},
		{"negative thinking-budget", []string{"--store", good, "--thinking-budget", "-1"}, nil, []string{"--thinking-budget", "-1", "negative"}},
		{"thinking-budget below the minimum", []string{"--store", good, "--thinking-budget", "500"}, nil, []string{"--thinking-budget", "500", "minimum of 1024"}},
		{"thinking-budget not below max tokens", []string{"--store", good, "--thinking-budget", "8192"}, nil, []string{"--thinking-budget", "8192", "at most 8191"}},
		{"non-numeric thinking-budget", []string{"--store", good, "--thinking-budget", "lots"}, nil, []string{"--thinking-budget", `"lots"`}},
		{"negative wait-log-interval", []string{"--store", good, "--wait-log-interval", "-1s"}, nil, []string{"--wait-log-interval", "negative"}},
		{"embedding-model with the offline provider", []string{"--store", good, "--embedding-model", "text-embedding-3-small"}, nil, []string{"--embedding-model", "text-embedding-3-small", "needs the openai provider", "offline"}},
		{"embedding-model with white space", []string{"--store", good, "--embedding-model", " nomic "}, nil, []string{"--embedding-model", "white space"}},
	}
	// An unwritable directory: one of mode 0500, unless root runs the test
	// (root writes anywhere), then sysfs, which even root cannot write to.
	ro := filepath.Join(dir, "read-only")
	require.NoError(t, os.Mkdir(ro, 0o500))
	if os.Geteuid() == 0 {
		ro = ""
		if f, err := os.CreateTemp("/sys", "probe-*"); err != nil {
			ro = "/sys"
		} else {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}
	if ro != "" {
		tests = append(tests, struct {
			name  string
			args  []string
			env   map[string]string
			wants []string
		}{"store in an unwritable directory", []string{"--store", filepath.Join(ro, "sessions.db")}, nil, []string{"--store", "not writable"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, stdout, stderr := runAgent(t, bin, tt.args, tt.env)
			assert.Equal(t, exitUsage, status, "stderr: %s", stderr)
			assert.Empty(t, stdout, "nothing is served")
			line := strings.TrimSuffix(stderr, "\n")
			assert.NotContains(t, line, "\n", "one line")
			assert.True(t, strings.HasPrefix(line, "acp-agent: "), line)
			for _, w := range tt.wants {
				assert.Contains(t, line, w)
			}
			assert.NotContains(t, line, "secret")
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, "ok", e.Name(), "no store was opened")
	}
}

// TestHelp: -h prints the usage, with the exit statuses, and exits 0.
func TestHelp(t *testing.T) {
	status, stdout, stderr := runAgent(t, agentBinary(t), []string{"-h"}, nil)
	assert.Equal(t, 0, status)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "-auto-compact-tokens")
	assert.Contains(t, stderr, "Exit status:")
	assert.Contains(t, stderr, "130/143  128 + the signal")
}

// runAgent runs the agent with args and the provider variables of env (the
// others cleared), sends it an initialize request and returns its exit
// status, stdout and stderr.
func runAgent(t *testing.T, bin string, args []string, env map[string]string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir())
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL", "SESSIONKIT_PROVIDER"} {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
