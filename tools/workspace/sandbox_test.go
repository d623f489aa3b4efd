package workspace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/sandbox/sandboxtest"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// dialArg makes the test binary a network client: "BINARY dialArg NETWORK
// ADDR" prints whether it could connect; NETWORK is tcp4 (plain TCP, as
// most programs do), mptcp (Multipath TCP, which Go falls back from to
// plain TCP when the kernel refuses it), udp4 or unix.
const dialArg = "workspace-test-dial"

// TestMain calls the sandbox hook first: run_command starts this binary
// again as the sandbox helper.
func TestMain(m *testing.M) {
	sandbox.Main()
	if len(os.Args) == 4 && os.Args[1] == dialArg {
		d, network := net.Dialer{Timeout: 5 * time.Second}, os.Args[2]
		if network == "mptcp" {
			d.SetMultipathTCP(true)
			network = "tcp4"
		}
		c, err := d.Dial(network, os.Args[3])
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(1)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// requireLandlock skips a test where the kernel has no Landlock, saying
// why (it fails instead under SESSIONKIT_REQUIRE_LANDLOCK=1); tcpSink is a
// local TCP listener that accepts and closes every connection.
var (
	requireLandlock = sandboxtest.RequireLandlock
	tcpSink         = sandboxtest.TCPSink
)

// A sandboxed command may write in the session's directories and its
// private temporary directory, and nowhere else.
func TestSandboxRefusesWritesOutside(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, workspace.Options{})
	base := filepath.Dir(f.root)
	out, err := f.run(t, "run_command", map[string]any{"command": fmt.Sprintf(
		`echo pwned > %[1]s/new.txt && echo wrote-outside
		mkdir %[2]s/escape && echo made-dir-outside
		ln -s /etc/passwd %[1]s/link && echo linked-outside
		echo inside > inside.txt && echo wrote-inside
		echo tmp > "$TMPDIR/t" && echo wrote-tmp
		echo x > /dev/null && echo wrote-devnull`, f.outside, base)})
	require.NoError(t, err)
	for _, s := range []string{"wrote-inside", "wrote-tmp", "wrote-devnull"} {
		assert.Contains(t, out, s)
	}
	for _, s := range []string{"wrote-outside", "made-dir-outside", "linked-outside"} {
		assert.NotContains(t, out, s)
	}
	// Refused by Landlock, or before it, where commands run in a mount
	// namespace of their own, by the read-only mounts outside.
	refused := "Permission denied"
	if sandbox.Available().Contained {
		refused = "Read-only file system"
	}
	assert.Contains(t, out, refused)
	f.outsideUntouched(t)
	_, err = os.Stat(filepath.Join(base, "escape"))
	assert.True(t, os.IsNotExist(err), "no directory was made beside the workspace")
	b, err := os.ReadFile(filepath.Join(f.root, "inside.txt"))
	require.NoError(t, err)
	assert.Equal(t, "inside\n", string(b))
}

// Reading outside is allowed (documented: the whole file system is
// readable); overwriting, truncating, removing or renaming what was read
// is not.
func TestSandboxReadsOutsideButCannotOverwrite(t *testing.T) {
	requireLandlock(t)
	f := newFixture(t, workspace.Options{})
	secret := filepath.Join(f.outside, "secret.txt")
	out, err := f.run(t, "run_command", map[string]any{"command": fmt.Sprintf(
		`cat %[1]s
		echo pwned > %[1]s && echo overwrote
		: > %[1]s && echo truncated
		rm -f %[1]s && echo removed
		mv %[1]s inside.txt && echo moved`, secret)})
	require.NoError(t, err)
	assert.Contains(t, out, "SECRET", "reading outside is allowed")
	for _, s := range []string{"overwrote", "truncated", "removed", "moved"} {
		assert.NotContains(t, out, s)
	}
	f.outsideUntouched(t)
}

// TCP connect is refused by default, and so are Multipath TCP, UDP and
// UNIX sockets to services outside (which Landlock ABI 7 does not cover);
// the first three are allowed when the policy allows network, a UNIX
// socket never: through one a command would ask a service outside the
// sandbox to run what it likes, which is no network.
func TestSandboxNetwork(t *testing.T) {
	requireLandlock(t)
	ln := tcpSink(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	dial := func(network string) map[string]any {
		return map[string]any{"command": fmt.Sprintf("%s %s %s %s", exe, dialArg, network, ln.Addr())}
	}

	f := newFixture(t, workspace.Options{})
	for _, network := range []string{"tcp4", "mptcp", "udp4"} {
		out, err := f.run(t, "run_command", dial(network))
		require.NoError(t, err)
		assert.Contains(t, out, "dial failed", network)
		assert.NotContains(t, out, "connected", network)
	}
	out, err := f.run(t, "run_command", dial("tcp4"))
	require.NoError(t, err)
	assert.Contains(t, out, "permission denied", "the sandbox refuses the socket")
	// A UNIX socket of a process outside (as D-Bus, systemd or Docker
	// listen on) is out of reach too.
	sock := filepath.Join(t.TempDir(), "service.sock")
	uln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer uln.Close()
	unixDial := map[string]any{"command": fmt.Sprintf("%s %s unix %s", exe, dialArg, sock)}
	out, err = f.run(t, "run_command", unixDial)
	require.NoError(t, err)
	assert.Contains(t, out, "dial failed")

	on := newFixture(t, workspace.Options{Sandbox: sandbox.Policy{Network: true}})
	for _, network := range []string{"tcp4", "mptcp", "udp4"} {
		out, err = on.run(t, "run_command", dial(network))
		require.NoError(t, err)
		assert.Equal(t, "exit status 0\nconnected\n", out, network)
	}
	out, err = on.run(t, "run_command", unixDial)
	require.NoError(t, err)
	assert.Contains(t, out, "dial failed", "unix, with network")
	assert.NotContains(t, out, "connected", "unix, with network")
}

// alive reports whether the process pid still runs.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// sleepArg returns an argument for sleep that lasts about secs seconds
// and that no other process has: secs and a random fraction.
func sleepArg(secs string) string {
	return fmt.Sprintf("%s.%09d", secs, rand.Int64N(1e9))
}

// ended reports whether the process the command reported as "word PID"
// in out has ended. On Linux a command may run in a PID namespace of its
// own, where the PID it sees names another process here: the process is
// found instead by the argument no other process has (arg, from
// sleepArg), in /proc.
func ended(t *testing.T, out, word, arg string) bool {
	t.Helper()
	pid := pidAfter(t, out, word)
	if runtime.GOOS != "linux" {
		return !alive(pid)
	}
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), arg) {
			return false
		}
	}
	return true
}

// pids returns the numbers after each "word " in out.
func pidAfter(t *testing.T, out, word string) int {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, word+" "); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(rest))
			require.NoError(t, err, line)
			return pid
		}
	}
	t.Fatalf("no %q line in %q", word, out)
	return 0
}

// A command that leaves a background child returns at once with its
// output and exit status, and the child has ended with it; on Linux also
// a child that left the process group (setsid).
func TestCommandEndsItsBackgroundChildren(t *testing.T) {
	f := newFixture(t, workspace.Options{CommandTimeout: 20 * time.Second})
	child, detached := sleepArg("30"), sleepArg("31")
	command := "sleep " + child + " & echo started $!"
	if runtime.GOOS == "linux" {
		// In a session of its own, out of the process group; its pid
		// is the one that execs sleep (setsid may fork first).
		command += `; setsid sh -c 'echo $$ > detached.pid; exec sleep ` + detached + `' &
			while [ ! -s detached.pid ]; do sleep 0.01; done; echo detached $(cat detached.pid)`
	}
	start := time.Now()
	out, err := f.run(t, "run_command", map[string]any{"command": command + "; exit 4"})
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 10*time.Second, "it did not wait for the background child")
	assert.True(t, strings.HasPrefix(out, "exit status 4\nstarted "), out)
	assert.True(t, ended(t, out, "started", child), "the background child ended with the command")
	if runtime.GOOS == "linux" {
		assert.True(t, ended(t, out, "detached", detached), "the child in its own session ended too")
	}
}

// A command killed at its timeout, or stopped by a cancelled turn, fails,
// with what it printed until then; its children end with it.
func TestCommandTimeoutAndCancelFail(t *testing.T) {
	// Long enough for the helper to start and print (under -race too).
	f := newFixture(t, workspace.Options{CommandTimeout: 2 * time.Second})
	child := sleepArg("30")
	out, err := f.run(t, "run_command", map[string]any{"command": "echo before; sleep " + child + " & echo child $!; sleep 30; echo never"})
	require.Error(t, err, "a timed-out command fails; output %q", out)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "killed after the 2s timeout")
	assert.Contains(t, err.Error(), "before\n")
	assert.NotContains(t, err.Error(), "never")
	assert.True(t, ended(t, err.Error(), "child", child))

	slow := newFixture(t, workspace.Options{CommandTimeout: time.Minute})
	ready := filepath.Join(slow.root, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := slow.tools["run_command"].Run(ctx, json.RawMessage(`{"command":"echo before; touch ready; sleep 30; echo never"}`))
		done <- err
	}()
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })
	cancel()
	err = <-done
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "cancelled")
	assert.Contains(t, err.Error(), "before\n")
	assert.NotContains(t, err.Error(), "never")
}

// waitFor waits until cond holds (a gate on what a command did), for at
// most 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, cond, "the command's step")
}

// The environment of a command is the allow-list: no provider key or
// credential reaches it, even when they are added to the policy.
func TestCommandEnvironment(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":        "sk-openai-leak",
		"ANTHROPIC_API_KEY":     "sk-ant-leak",
		"SESSIONKIT_MODEL":      "model-leak",
		"GITHUB_TOKEN":          "ghp-leak",
		"AWS_SECRET_ACCESS_KEY": "aws-leak",
		"PGPASSWORD":            "pg-leak",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("UNLISTED", "unlisted-leak")
	t.Setenv("ADDED_NAME", "added-value")
	t.Setenv("LC_TESTING", "lc-value")
	check := func(t *testing.T, out string) {
		for k, v := range secrets {
			assert.NotContains(t, out, v, k)
		}
		assert.Contains(t, out, "LC_TESTING=lc-value\n")
		assert.Contains(t, out, "PATH="+os.Getenv("PATH")+"\n")
		assert.Contains(t, out, "TMPDIR="+os.TempDir()+"/sessionkit-cmd-")
	}
	t.Run("default", func(t *testing.T) {
		f := newFixture(t, workspace.Options{})
		out, err := f.run(t, "run_command", map[string]any{"command": "env"})
		require.NoError(t, err)
		check(t, out)
		assert.NotContains(t, out, "added-value")
		assert.NotContains(t, out, "unlisted-leak", "a name not on the allow-list")
	})
	t.Run("added names", func(t *testing.T) {
		added := append([]string{"ADDED_NAME"}, mapKeys(secrets)...)
		f := newFixture(t, workspace.Options{Sandbox: sandbox.Policy{Env: added}})
		out, err := f.run(t, "run_command", map[string]any{"command": "env"})
		require.NoError(t, err)
		check(t, out)
		assert.Contains(t, out, "ADDED_NAME=added-value\n")
	})
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// terminalEditor is an ACP client whose terminals run their command for
// real, as an editor does: with its own environment and the request's on
// top (so the agent cannot keep the editor's variables away from the
// command; the sandbox helper has to).
type terminalEditor struct {
	*fakeEditor
	req  schema.CreateTerminalRequest
	cmd  *exec.Cmd
	out  strings.Builder
	done chan struct{}
}

func (e *terminalEditor) CreateTerminal(_ context.Context, req schema.CreateTerminalRequest) (string, error) {
	e.req = req
	e.cmd = exec.Command(req.Command, req.Args...)
	e.cmd.Dir = req.Cwd
	e.cmd.Env = os.Environ()
	for _, v := range req.Env {
		e.cmd.Env = append(e.cmd.Env, v.Name+"="+v.Value)
	}
	e.cmd.Stdout, e.cmd.Stderr = &e.out, &e.out
	e.done = make(chan struct{})
	if err := e.cmd.Start(); err != nil {
		return "", err
	}
	go func() { _ = e.cmd.Wait(); close(e.done) }()
	return "term-1", nil
}

func (e *terminalEditor) WaitForTerminalExit(ctx context.Context, _ string) (*schema.TerminalExitStatus, error) {
	select {
	case <-e.done:
		code := e.cmd.ProcessState.ExitCode()
		return &schema.TerminalExitStatus{ExitCode: &code}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *terminalEditor) TerminalOutput(context.Context, string) (*schema.TerminalOutputResponse, error) {
	<-e.done
	return &schema.TerminalOutputResponse{Output: e.out.String()}, nil
}

func (e *terminalEditor) KillTerminal(context.Context, string) error {
	e.killed = true
	return e.cmd.Process.Signal(syscall.SIGTERM)
}

// In the editor's terminal the command runs as the sandbox helper of this
// executable: confined, with the allow-list environment even though the
// editor adds its own, and its background children ended.
func TestTerminalCommandIsSandboxed(t *testing.T) {
	requireLandlock(t)
	t.Setenv("OPENAI_API_KEY", "sk-editor-env-leak")
	ed := &terminalEditor{fakeEditor: newEditor()}
	f := newFixture(t, workspace.Options{Editor: ed, AllowAll: true})
	child := sleepArg("30")
	out, err := f.run(t, "run_command", map[string]any{"command": fmt.Sprintf(
		"env; echo pwned > %s/new.txt && echo wrote-outside; sleep %s & echo started $!", f.outside, child)})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, exe, ed.req.Command, "the terminal runs the helper")
	assert.Equal(t, []string{"--", "sh", "-c"}, ed.req.Args[len(ed.req.Args)-4:len(ed.req.Args)-1])
	for _, v := range ed.req.Env {
		assert.False(t, strings.HasPrefix(v.Name, "OPENAI_"), v.Name)
	}
	assert.True(t, strings.HasPrefix(out, "exit status 0\n"), out)
	assert.NotContains(t, out, "sk-editor-env-leak")
	assert.NotContains(t, out, "wrote-outside")
	assert.True(t, ended(t, out, "started", child))
	f.outsideUntouched(t)
}

// BenchmarkRunCommand measures what a command costs: the plain shell (no
// helper), the helper with the sandbox off, and confined (two starts of
// this binary: the supervisor and the confine stage).
func BenchmarkRunCommand(b *testing.B) {
	b.Run("plain sh", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, mode := range map[string]sandbox.Mode{"helper, sandbox off": sandbox.Off, "confined": sandbox.Auto} {
		b.Run(name, func(b *testing.B) {
			ws, err := workspace.New(b.TempDir())
			require.NoError(b, err)
			var run func(context.Context, json.RawMessage) (string, error)
			for _, tool := range ws.Tools(workspace.Options{Sandbox: sandbox.Policy{Mode: mode}}) {
				if tool.Name == "run_command" {
					run = tool.Run
				}
			}
			for b.Loop() {
				out, err := run(context.Background(), json.RawMessage(`{"command":"true"}`))
				if err != nil || out != "exit status 0\n" {
					b.Fatal(out, err)
				}
			}
		})
	}
}
