//go:build linux

package sandbox_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// The test tools of this file (see TestMain).
const (
	// agentTool stands in for an agent: "BINARY agentTool DIR LINE"
	// prepares LINE in DIR (default policy), starts it, prints "helper
	// PID TMPDIR" and waits for it.
	agentTool = "sandbox-test-agent"
	// xattrTool sets an extended attribute: "BINARY xattrTool PATH".
	xattrTool = "sandbox-test-xattr"
)

func init() {
	testTools[agentTool] = standInAgent
	testTools[xattrTool] = func(args []string) int {
		if err := unix.Setxattr(args[0], "user.sessionkit", []byte("x"), 0); err != nil {
			fmt.Println("setxattr:", err)
			return 1
		}
		return 0
	}
}

func standInAgent(args []string) int {
	sandbox.SetHooked()
	c, err := sandbox.Policy{}.Prepare(args[1], args[0])
	if err != nil {
		fmt.Println(err)
		return 1
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("helper", cmd.Process.Pid, c.TempDir)
	_ = cmd.Wait()
	return 0
}

// requireContained makes this program able to start the helper and skips
// the test, saying why, where commands cannot have namespaces of their own;
// with SESSIONKIT_REQUIRE_NAMESPACES=1 (set by .ci/run where unshare can
// make them) it fails instead.
func requireContained(t *testing.T) {
	t.Helper()
	sandbox.Hook(t)
	s := sandbox.Available()
	switch {
	case s.Contained:
	case os.Getenv("SESSIONKIT_REQUIRE_NAMESPACES") == "1":
		t.Fatalf("SESSIONKIT_REQUIRE_NAMESPACES=1 but commands cannot run in namespaces of their own: %s", s.NotContained)
	default:
		t.Skipf("skipped: commands cannot run in namespaces of their own here: %s", s.NotContained)
	}
}

// marker returns an argument for sleep that lasts about secs seconds and
// that no other process has: secs and a random fraction. When the test
// ends, a process left with it (the test failed) is killed.
func marker(t *testing.T, secs int) string {
	m := fmt.Sprintf("%d.%09d", secs, rand.Int64N(1e9))
	t.Cleanup(func() {
		for _, pid := range withArg(t, m) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

// withArg returns the processes whose arguments (NUL-terminated, in
// /proc/PID/cmdline) contain s (zombies, which have none, are not counted:
// they have ended).
func withArg(t *testing.T, s string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// sleeping returns how many processes run "sleep m".
func sleeping(t *testing.T, m string) int {
	t.Helper()
	return len(withArg(t, "sleep\x00"+m+"\x00"))
}

// start starts the prepared command as an editor's terminal would: the
// program and arguments of c, nothing more.
func start(t *testing.T, c *sandbox.Command, out io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = c.Env, c.Dir, out, out
	cmd.WaitDelay = time.Second // a process left behind holds the output open
	require.NoError(t, cmd.Start())
	return cmd
}

// An editor that kills its terminal's process (the supervisor) with
// SIGKILL ends the command and every process it started: none outlives it
// by a second.
func TestHelperKilledEndsEveryProcess(t *testing.T) {
	requireContained(t)
	m := marker(t, 1000)
	c, err := sandbox.Policy{}.Prepare(fmt.Sprintf("sleep %s & setsid sleep %s & sleep %s", m, m, m), t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	cmd := start(t, c, io.Discard)
	poll.For(t, func() bool { return sleeping(t, m) >= 3 }, "the three sleeps")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	poll.Until(t, time.Second, func() bool { return len(withArg(t, m)) == 0 }, "the end of every process of the command")
}

// When the agent dies while a command runs (here a stand-in agent killed
// with SIGKILL), the helper notices and ends the command: the helper and
// every process of the command are gone within a second.
func TestAgentDeathEndsTheCommand(t *testing.T) {
	requireContained(t)
	m := marker(t, 1000)
	agent := exec.Command(os.Args[0], agentTool, t.TempDir(), fmt.Sprintf("sleep %s & sleep %s", m, m))
	stdout, err := agent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, agent.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the stand-in agent started the helper")
	var helper int
	var tmp string
	_, err = fmt.Sscanf(line, "helper %d %s", &helper, &tmp)
	require.NoError(t, err, line)
	defer os.RemoveAll(tmp)
	poll.For(t, func() bool { return sleeping(t, m) >= 2 }, "the two sleeps")

	require.NoError(t, agent.Process.Kill())
	_ = agent.Wait()
	poll.Until(t, time.Second, func() bool { return len(withArg(t, m)) == 0 }, "the end of the helper and of every process of the command")
}

// A command that ignores SIGTERM and whose children leave its session and
// are orphaned (setsid, a double fork) is ended by its helper after its
// timeout, though its caller never stops it: nothing is left a second
// after the timeout.
func TestTimeoutEndsTheCommandWithoutTheCaller(t *testing.T) {
	requireContained(t)
	m := marker(t, 1000)
	c, err := sandbox.Policy{Timeout: time.Second}.Prepare(fmt.Sprintf(
		`trap '' TERM; setsid sh -c 'trap "" TERM; sleep %[1]s' & (sh -c 'sleep %[1]s &' &); sleep %[1]s`, m), t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	began := time.Now()
	var out strings.Builder
	cmd := start(t, c, &out)
	poll.For(t, func() bool { return sleeping(t, m) >= 3 }, "the three sleeps")
	poll.Until(t, time.Until(began.Add(2*time.Second)), func() bool { return len(withArg(t, m)) == 0 },
		"the end of every process of the command a second after its timeout")
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 124, ee.ExitCode(), "as timeout(1)")
	assert.Contains(t, out.String(), "killed after its 1s timeout")
}

// The command's /proc is its own PID namespace's: the agent's processes
// are not in it, and its PID 1 is the helper's init stage.
func TestCommandSeesOnlyItsOwnProcesses(t *testing.T) {
	requireContained(t)
	if os.Getpid() <= 100 {
		t.Skip("skipped: this test's PID is too small to tell it from the command's")
	}
	c, err := sandbox.Policy{}.Prepare(fmt.Sprintf("test -e /proc/%d && echo agent-vis\"\"ible; cat /proc/1/cmdline; echo; echo /proc/[0-9]*", os.Getpid()), t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	var out strings.Builder
	require.NoError(t, start(t, c, &out).Wait())
	assert.NotContains(t, out.String(), "agent-visible")
	assert.Contains(t, out.String(), "__sessionkit_sandbox_init")
}

// A confined command cannot change the permissions, owner, times or
// extended attributes of a file outside the session's directories (which
// Landlock does not govern), as root or as an ordinary user who owns the
// file; inside, it can (chmod +x, as builds do).
func TestMetadataOutsideIsReadOnly(t *testing.T) {
	requireContained(t)
	if !sandbox.Available().Available {
		t.Skip("skipped: no Landlock: ", sandbox.Available().Reason)
	}
	for name, uid := range map[string]int{"root": 0, "user": 65534} {
		t.Run(name, func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Skip("skipped: the test makes files for two users, so it needs root")
			}
			base, err := os.MkdirTemp("", "sandbox-metadata-")
			require.NoError(t, err)
			defer os.RemoveAll(base)
			project, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
			in, out := filepath.Join(project, "f"), filepath.Join(outside, "f")
			for _, d := range []string{base, project, outside} {
				require.NoError(t, os.MkdirAll(d, 0o755))
				require.NoError(t, os.Chmod(d, 0o755))
				require.NoError(t, os.Chown(d, uid, uid))
			}
			for _, f := range []string{in, out} {
				require.NoError(t, os.WriteFile(f, []byte("key\n"), 0o600))
				require.NoError(t, os.Chown(f, uid, uid))
			}
			// The helper is this binary, which the user must be able to
			// run: a copy beside the files.
			exe := filepath.Join(base, "sandbox.test")
			b, err := os.ReadFile(os.Args[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(exe, b, 0o755))
			before, err := os.Stat(out)
			require.NoError(t, err)

			script := ""
			for _, where := range []struct{ name, path string }{{"outside", out}, {"inside", in}} {
				script += fmt.Sprintf("chmod 0755 %[1]s && echo chmod-%[2]s\nchown %[3]d %[1]s && echo chown-%[2]s\n"+
					"touch -d 2001-01-01 %[1]s && echo touch-%[2]s\n%[4]s %[5]s %[1]s && echo xattr-%[2]s\n",
					where.path, where.name, uid, exe, xattrTool)
			}
			// Relative to the working directory too (the command must not
			// start in it through the agent's mounts).
			script += "chmod 0755 ../outside/f && echo chmod-relative-outside\n"
			if _, err := exec.LookPath("git"); err == nil {
				script += "git init -q . && git add f && git -c user.name=t -c user.email=t@t commit -qm t && echo git-inside\n"
			}
			c, err := sandbox.Policy{Writable: []string{project}}.Prepare(script, project)
			require.NoError(t, err)
			defer c.Close()
			require.True(t, c.Confined)
			require.NoError(t, os.Chown(c.TempDir, uid, uid))
			c.Path = exe
			var output strings.Builder
			cmd := exec.Command(c.Path, c.Args...)
			cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = c.Env, c.Dir, &output, &output
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
			require.NoError(t, cmd.Run(), output.String())

			for _, op := range []string{"chmod", "chown", "touch", "xattr"} {
				assert.Contains(t, output.String(), op+"-inside", "inside the project")
				assert.NotContains(t, output.String(), op+"-outside", "outside")
			}
			assert.NotContains(t, output.String(), "chmod-relative-outside")
			if _, err := exec.LookPath("git"); err == nil {
				assert.Contains(t, output.String(), "git-inside", "git works in the project")
			}
			assert.Contains(t, output.String(), "Read-only file system")
			after, err := os.Stat(out)
			require.NoError(t, err)
			assert.Equal(t, before.Mode(), after.Mode(), "the file outside keeps its mode")
			assert.Equal(t, before.ModTime(), after.ModTime(), "and its time")
			inside, err := os.Stat(in)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o755), inside.Mode().Perm(), "chmod +x inside works")
		})
	}
}

// A supervisor started after its agent has gone does not run the command,
// also when another process now has the agent's PID (here this test's
// PID with another start time, as a reused PID would have).
func TestCommandOfAGoneAgentIsNotRun(t *testing.T) {
	requireContained(t)
	c, err := sandbox.Policy{}.Prepare("echo ran", t.TempDir())
	require.NoError(t, err)
	defer c.Close()
	i := slices.Index(c.Args, "--agent")
	require.GreaterOrEqual(t, i, 0, c.Args)
	c.Args[i+1] = fmt.Sprintf("%d:1", os.Getpid())
	var out strings.Builder
	err = start(t, c, &out).Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, out.String())
	assert.Equal(t, 126, ee.ExitCode())
	assert.NotContains(t, out.String(), "ran\n")
	assert.Contains(t, out.String(), "the agent that prepared the command has ended")
}

// The stages that set up namespaces refuse to run outside namespaces made
// for them (as PID 1): started by hand in the agent's, they would change
// its mounts. Started here in a mount namespace of their own (so that,
// were the guard missing, nothing outside would change).
func TestNamespaceStagesRefuseToRunOutside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: a mount namespace for the test needs root")
	}
	for _, stage := range []string{"__sessionkit_sandbox_probe", "__sessionkit_sandbox_init"} {
		cmd := exec.Command(os.Args[0], stage, "--", "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s: %s", stage, out)
		assert.Contains(t, string(out), "runs only as PID 1 of a PID namespace made for it", stage)
	}
}
