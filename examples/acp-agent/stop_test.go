package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/session"
)

// stopLimit is the most a stop on SIGINT or SIGTERM may take (the issue's
// promise; the agent's own bound, stopBound, is shorter).
const stopLimit = 5 * time.Second

// runningAgent is the agent binary started with its stdin and stdout
// piped, so that the test keeps its stdin open and signals it.
type runningAgent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *syncBuffer
	exited chan struct{} // closed once cmd.Wait returned
	err    error         // cmd.Wait's, set before exited is closed
}

// startAgent starts the agent with a new SQLite store (its path is
// returned) and args.
func startAgent(t *testing.T, args ...string) (*runningAgent, string) {
	t.Helper()
	clearProviderEnv(t)
	store := filepath.Join(t.TempDir(), "s.db")
	cmd := exec.Command(agentBinary(t), append([]string{"--store", store}, args...)...)
	a := &runningAgent{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = a.stderr
	// A pipe in blocking mode, as a shell or an editor gives: Go's own
	// pipes are in non-blocking mode, which the agent would inherit (and
	// then its Close of stdin would end a Read, which a blocking one does
	// not).
	var fds [2]int
	require.NoError(t, syscall.Pipe2(fds[:], syscall.O_CLOEXEC))
	stdin := os.NewFile(uintptr(fds[0]), "agent-stdin")
	a.stdin = os.NewFile(uintptr(fds[1]), "to-agent-stdin")
	cmd.Stdin = stdin
	var err error
	a.stdout, err = cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	_ = stdin.Close() // the agent's now
	t.Cleanup(func() { _ = a.stdin.Close() })
	go func() {
		a.err = cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-a.exited
	})
	return a, store
}

// waitExit waits at most limit for the agent to exit and returns its exit
// status (-1 for a death by signal).
func (a *runningAgent) waitExit(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-a.exited:
	case <-time.After(limit):
		t.Fatalf("the agent did not exit within %v; stderr:\n%s", limit, a.stderr)
	}
	var ee *exec.ExitError
	if a.err != nil && !errors.As(a.err, &ee) {
		require.NoError(t, a.err)
	}
	return a.cmd.ProcessState.ExitCode()
}

// processesWith returns the PIDs of the live processes whose command line
// contains marker.
func processesWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runLongCommand opens a session of a in dir and prompts it to run `sleep
// secs` through run_command (the offline provider, --allow-all), and
// returns once the command runs; secs is the marker its processes carry.
func runLongCommand(t *testing.T, a *runningAgent, dir, secs string) {
	t.Helper()
	ctx := context.Background()
	// The client never closes the agent's stdin (an editor that keeps it
	// open): its connection gets a writer without Close.
	c, err := acp.Dial(ctx, a.stdout, struct{ io.Writer }{a.stdin}, acp.ClientOptions{})
	require.NoError(t, err)
	rs, err := c.NewSession(ctx, dir)
	require.NoError(t, err)
	_, err = rs.Prompt(ctx, session.PromptRequest{Text: "run `sleep " + secs + "`"})
	require.NoError(t, err)
	until(t, 30*time.Second, func() bool { return len(processesWith("sleep "+secs)) > 0 }, "the command runs")
}

// SIGTERM and SIGINT stop the agent within 5 s although its stdin stays
// open, while a turn runs a long command: exit status 0 (a clean stop),
// and the command's processes are gone.
func TestSignalStopsTheAgentWithStdinOpen(t *testing.T) {
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig], func(t *testing.T) {
			a, _ := startAgent(t, "--allow-all")
			secs := fmt.Sprintf("987.%d%d", os.Getpid()%1000, i)
			runLongCommand(t, a, t.TempDir(), secs)
			require.NoError(t, a.cmd.Process.Signal(sig))
			assert.Equal(t, 0, a.waitExit(t, stopLimit), "a clean stop; stderr:\n%s", a.stderr)
			assert.Empty(t, processesWith("sleep "+secs), "the command's processes are gone")
			assert.Contains(t, a.stderr.String(), "stopping: cancelling the running turns")
		})
	}
}

// A store that does not answer (another process holds SQLite's write
// lock, so the cancelled turn's last write waits for SQLite's busy
// timeout) does not hold the stop past its bound: the agent exits within
// 5 s all the same, with 128+15 (143, the bound passed), and the command
// is gone.
func TestStuckStoreDoesNotHoldTheStop(t *testing.T) {
	a, store := startAgent(t, "--allow-all")
	secs := fmt.Sprintf("986.%d", os.Getpid()%1000)
	runLongCommand(t, a, t.TempDir(), secs)

	holdWriteLock(t, store)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 128+int(syscall.SIGTERM), a.waitExit(t, stopLimit), "the bound passed; stderr:\n%s", a.stderr)
	assert.Empty(t, processesWith("sleep "+secs), "the command's processes are gone")
	assert.Contains(t, a.stderr.String(), "not stopped within the bound")
}

// holdWriteLock takes the write lock of the SQLite store at path, as
// another process would, until the test ends: the agent's writes wait for
// SQLite's busy timeout.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	// The agent may be writing at this moment (the command's tool call):
	// wait for its write rather than fail at once.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	ctx := context.Background()
	holder, err := db.Conn(ctx)
	require.NoError(t, err)
	_, err = holder.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err, "the test takes the store's write lock")
	t.Cleanup(func() {
		_, _ = holder.ExecContext(ctx, "ROLLBACK")
		_ = holder.Close()
		_ = db.Close()
	})
}

// A second signal while the agent stops ends it at once, with 128+the
// signal's number: here the store does not answer, so the first stop
// would take its whole bound.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	a, store := startAgent(t, "--allow-all")
	secs := fmt.Sprintf("985.%d", os.Getpid()%1000)
	runLongCommand(t, a, t.TempDir(), secs)
	holdWriteLock(t, store)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	until(t, stopLimit, func() bool { return strings.Contains(a.stderr.String(), "stopping: cancelling") }, "the stop begins")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 128+int(syscall.SIGINT), a.waitExit(t, stopBound), "stderr:\n%s", a.stderr)
	assert.Contains(t, a.stderr.String(), "stopping at once on a second signal")
}

// Requests piped in and closed at once are all answered before the agent
// exits 0: `printf '<initialize>\n<session/new>\n' | acp-agent`.
func TestPipedRequestsAreAnswered(t *testing.T) {
	clearProviderEnv(t)
	dir := t.TempDir()
	results, _ := pipeNewSession(t, dir)
	assert.Contains(t, string(results["1"]), `"protocolVersion":1`)
	assert.Contains(t, string(results["2"]), `"sessionId"`)
}

// pipeNewSession runs the agent with a new store and args, with stdin an
// initialize and a session/new in cwd and then EOF, checks that it exits
// 0, and returns its responses by ID and its stderr.
func pipeNewSession(t *testing.T, cwd string, args ...string) (map[string]json.RawMessage, string) {
	t.Helper()
	cmd := exec.Command(agentBinary(t), append([]string{"--store", filepath.Join(t.TempDir(), "s.db")}, args...)...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" +
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd) + "\n")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	require.NoError(t, err, "exit status 0; stderr:\n%s", &stderr)
	return responses(t, out), stderr.String()
}

// A prompt read before stdin closes is answered when its turn ends, and
// then the agent exits 0.
func TestPromptBeforeEOFIsAnswered(t *testing.T) {
	a, _ := startAgent(t)
	dir := t.TempDir()
	lines := bufio.NewReader(a.stdout)
	send := func(s string) {
		_, err := io.WriteString(a.stdin, s+"\n")
		require.NoError(t, err)
	}
	next := func(id string) json.RawMessage {
		for {
			line, err := lines.ReadBytes('\n')
			require.NoError(t, err, "the response to %s; stderr:\n%s", id, a.stderr)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal(line, &m))
			if m.Method == "" && string(m.ID) == id {
				return m.Result
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	next("1")
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir))
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(next("2"), &sess))
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}}`, sess.SessionID))
	require.NoError(t, a.stdin.Close())
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(next("3")))
	assert.Equal(t, 0, a.waitExit(t, 10*time.Second))
}

// responses are the results of the responses among the lines of out, by
// id.
func responses(t *testing.T, out []byte) map[string]json.RawMessage {
	t.Helper()
	got := map[string]json.RawMessage{}
	for line := range strings.Lines(string(out)) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.Method == "" {
			got[string(m.ID)] = m.Result
		}
	}
	return got
}

// acp.Start's Close stops the agent while a turn runs a command that
// prints nothing: the agent is told to stop (SIGTERM), and stops as it
// does on that signal, rather than being left to finish the requests it
// read and then killed; the command is gone.
func TestClientCloseStopsTheAgent(t *testing.T) {
	clearProviderEnv(t)
	ctx := context.Background()
	var stderr syncBuffer
	c, err := acp.Start(ctx, agentBinary(t), []string{"--store", filepath.Join(t.TempDir(), "s.db"), "--allow-all"}, acp.ClientOptions{Stderr: &stderr})
	require.NoError(t, err)
	rs, err := c.NewSession(ctx, t.TempDir())
	require.NoError(t, err)
	secs := fmt.Sprintf("984.%d", os.Getpid()%1000)
	_, err = rs.Prompt(ctx, session.PromptRequest{Text: "run `sleep " + secs + "`"})
	require.NoError(t, err)
	until(t, 30*time.Second, func() bool { return len(processesWith("sleep "+secs)) > 0 }, "the command runs")
	require.NoError(t, c.Close())
	assert.Contains(t, stderr.String(), "stopping: cancelling the running turns", "stopped on SIGTERM, not killed")
	assert.Empty(t, processesWith("sleep "+secs), "the command's processes are gone")
}

// until waits until cond holds, for at most limit, and fails t naming what
// it waited for when it does not. An example's tests use no internal
// package (they can be copied out with the example), so this is the
// example's own form of the module's polling wait: it waits only for
// something to become true, never decides an order.
func until(t *testing.T, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			if !cond() {
				t.Fatalf("waited %v: %s did not happen", limit, what)
			}
			return
		case <-tick.C:
		}
	}
}
