package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/session"
)

// clearProviderEnv unsets every provider variable for the agents this
// test starts.
func clearProviderEnv(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SESSIONKIT_MODEL", "SESSIONKIT_PROVIDER"} {
		t.Setenv(k, "")
	}
}

// syncBuffer is a bytes.Buffer safe for the agent's stderr copier and the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// promptAgent starts the agent with a new store and args, opens a session
// in dir and returns the result of one prompt of text (within a minute).
func promptAgent(t *testing.T, args []string, stderr io.Writer, dir, text string) session.TurnResult {
	t.Helper()
	ctx := context.Background()
	c, err := acp.Start(ctx, agentBinary(t), append([]string{"--store", filepath.Join(t.TempDir(), "s.db")}, args...), acp.ClientOptions{Stderr: stderr})
	require.NoError(t, err)
	defer c.Close()
	rs, err := c.NewSession(ctx, dir)
	require.NoError(t, err)
	h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := h.Wait(wctx)
	require.NoError(t, err, "the prompt is answered; stderr: %v", stderr)
	return res
}

// TestSlowModelTimesOut: with OPENAI_BASE_URL at a server that accepts the
// request and never answers, a prompt ends with an error that names the
// idle timeout (--idle-timeout), and while it waits the log says so at
// intervals (--wait-log-interval).
func TestSlowModelTimesOut(t *testing.T) {
	clearProviderEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	var stderr syncBuffer
	res := promptAgent(t, []string{"--idle-timeout", "400ms", "--wait-log-interval", "100ms"}, &stderr, t.TempDir(), "hello")
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "idle timeout")
	assert.Contains(t, stderr.String(), "still waiting for the model")
}

// TestOnlyWorkspaceTools: the model is offered the six workspace tools and
// the session's built-in recall and plan (neither with --recall=false
// --plan=false), nothing else
// (the request body a real provider receives), and the
// offline provider's "run `echo made > f`" goes to run_command, which asks
// first (this client grants nothing): nothing is run.
func TestOnlyWorkspaceTools(t *testing.T) {
	clearProviderEnv(t)
	var (
		mu    sync.Mutex
		tools [][]string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tools []struct {
				Function struct{ Name string } `json:"function"`
			} `json:"tools"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		var names []string
		for _, tl := range body.Tools {
			names = append(names, tl.Function.Name)
		}
		mu.Lock()
		tools = append(tools, names)
		mu.Unlock()
		openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk("ok"), openaitest.FinishChunk("stop"), openaitest.UsageChunk(3, 1), openaitest.Done)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	res := promptAgent(t, nil, io.Discard, t.TempDir(), "hello")
	require.NoError(t, res.Err)
	res = promptAgent(t, []string{"--recall=false", "--plan=false"}, io.Discard, t.TempDir(), "hello")
	require.NoError(t, res.Err)
	mu.Lock()
	require.Len(t, tools, 2)
	got := slices.Sorted(slices.Values(tools[0]))
	without := slices.Sorted(slices.Values(tools[1]))
	mu.Unlock()
	assert.Equal(t, []string{"edit_file", "list_files", "plan", "read_file", "recall", "run_command", "search", "write_file"}, got)
	assert.Equal(t, []string{"edit_file", "list_files", "read_file", "run_command", "search", "write_file"}, without, "--recall=false --plan=false")

	t.Setenv("OPENAI_BASE_URL", "")
	dir := t.TempDir()
	res = promptAgent(t, nil, io.Discard, dir, "run `echo made > f`")
	require.NoError(t, res.Err)
	var calls []string
	for _, m := range res.Messages {
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.Name)
		}
	}
	assert.Equal(t, []string{"run_command"}, calls)
	_, err := os.Stat(filepath.Join(dir, "f"))
	assert.True(t, os.IsNotExist(err), "not run: the permission was not granted")
}

// TestBadCwdIsInvalidParams: session/new, session/load and session/resume
// with a cwd that is relative or does not exist are refused with -32602
// naming it, on ACP v1 and v2.
func TestBadCwdIsInvalidParams(t *testing.T) {
	clearProviderEnv(t)
	store := filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	good := t.TempDir()
	missing := filepath.Join(good, "no-such-dir")
	for _, v1 := range []bool{true, false} {
		c, err := acp.Start(ctx, agentBinary(t), []string{"--store", store}, acp.ClientOptions{V1Only: v1, Stderr: io.Discard})
		require.NoError(t, err)
		rs, err := c.NewSession(ctx, good)
		require.NoError(t, err)
		id := rs.ID()
		require.NoError(t, c.CloseSession(ctx, id))
		for _, cwd := range []string{"relative/dir", missing} {
			_, err := c.NewSession(ctx, cwd)
			requireInvalidParams(t, err, cwd)
			_, err = c.LoadSession(ctx, id, cwd)
			requireInvalidParams(t, err, cwd)
			_, err = c.ResumeSession(ctx, id, cwd)
			requireInvalidParams(t, err, cwd)
		}
		require.NoError(t, c.Close())
	}
}

func requireInvalidParams(t *testing.T, err error, cwd string) {
	t.Helper()
	var rpc *acp.RPCError
	require.True(t, errors.As(err, &rpc), "%v", err)
	assert.Equal(t, -32602, rpc.Code, rpc.Message)
	assert.Contains(t, rpc.Message, cwd)
}

// TestVersion: --version prints one line that names the program and the
// Go version, and exits 0 without serving.
func TestVersion(t *testing.T) {
	status, stdout, stderr := runAgent(t, agentBinary(t), []string{"--version"}, nil)
	assert.Equal(t, 0, status, stderr)
	assert.True(t, strings.HasPrefix(stdout, "acp-agent "), stdout)
	assert.Equal(t, 1, strings.Count(stdout, "\n"))
	assert.Contains(t, stdout, "go1.")
	assert.NotContains(t, stdout, "protocolVersion", "nothing is served")
}

// TestOfflineNotice: with no provider variable set, the agent runs the
// offline provider and says so on stderr; asked for with --provider
// offline, it says nothing of it.
func TestOfflineNotice(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s.db")
	status, _, stderr := runAgent(t, agentBinary(t), []string{"--store", store}, nil)
	assert.Equal(t, 0, status, stderr)
	assert.Contains(t, stderr, "acp-agent: no provider variable is set")
	assert.Equal(t, 1, strings.Count(stderr, "no provider variable is set"), "one line")
	status, _, stderr = runAgent(t, agentBinary(t), []string{"--store", store, "--provider", "offline"}, map[string]string{"SESSIONKIT_MODEL": "gpt-5"})
	assert.Equal(t, 0, status, stderr)
	assert.NotContains(t, stderr, "no provider variable is set")
}
