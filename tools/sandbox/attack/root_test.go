//go:build linux

package attack_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/sandbox/sandboxtest"
)

// confinedAsRoot is the policy of the attacks a command run by a root
// agent tries: confined, network off, writable only in dir.
func confinedAsRoot(t *testing.T) (sandbox.Policy, string) {
	t.Helper()
	requireRoot(t)
	sandboxtest.RequireLandlock(t)
	dir := t.TempDir()
	return sandbox.Policy{Mode: sandbox.Required, Writable: []string{dir}}, dir
}

// A command of a root agent has no capability left, cannot get one back,
// and has no_new_privs.
func TestRootCommandHasNoCapabilities(t *testing.T) {
	p, dir := confinedAsRoot(t)
	code, out := run(t, p, `grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status`, dir)
	require.Equal(t, 0, code, out)
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		assert.Contains(t, out, set+":\t0000000000000000\n")
	}
	assert.Contains(t, out, "NoNewPrivs:\t1\n")
}

// A command of a root agent cannot make a device in its writable
// directory: not a block device (a disk), not a character device, not
// even the whiteout (0:0) that needs no capability, which Landlock alone
// refuses.
func TestRootCommandCannotMakeDevices(t *testing.T) {
	p, dir := confinedAsRoot(t)
	_, out := run(t, p, `mknod blk b 7 0 && echo made-block
		mknod chr c 1 3 && echo made-char
		mknod whiteout c 0 0 && echo made-whiteout
		mkfifo fifo && echo made-fifo`, dir)
	assert.NotContains(t, out, "made-block")
	assert.NotContains(t, out, "made-char")
	assert.NotContains(t, out, "made-whiteout")
	assert.Contains(t, out, "made-fifo", "other special files are still allowed")
	for _, name := range []string{"blk", "chr", "whiteout"} {
		_, err := os.Lstat(filepath.Join(dir, name))
		assert.True(t, os.IsNotExist(err), name)
	}
}

// The loop-device attack: a loop device holds a file outside the
// sandbox; a command makes its block device node in the project (or uses
// /dev/loopN) and writes the outside file through it with dd.
func TestRootCommandCannotWriteThroughALoopDevice(t *testing.T) {
	p, dir := confinedAsRoot(t)
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("skipped: no losetup here to attach a loop device")
	}
	outside := filepath.Join(t.TempDir(), "outside.img")
	require.NoError(t, os.WriteFile(outside, make([]byte, 64<<10), 0o600))
	b, err := exec.Command("losetup", "--find", "--show", outside).CombinedOutput()
	if err != nil {
		t.Skipf("skipped: cannot attach a loop device here: %v: %s", err, b)
	}
	loop := strings.TrimSpace(string(b))
	detached := false
	detach := func() {
		if !detached {
			detached = true
			out, err := exec.Command("losetup", "-d", loop).CombinedOutput()
			assert.NoError(t, err, string(out))
		}
	}
	t.Cleanup(detach)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(loop, &st))
	_, out := run(t, p, fmt.Sprintf(`mknod disk b %d %d && echo made-node &&
			printf pwned-node | dd of=disk conv=notrunc,fsync && echo wrote-node
		printf pwned-dev | dd of=%s conv=notrunc,fsync && echo wrote-dev`, unix.Major(st.Rdev), unix.Minor(st.Rdev), loop), dir)
	detach() // flushes the loop device to the file
	assert.NotContains(t, out, "made-node")
	assert.NotContains(t, out, "wrote-node")
	assert.NotContains(t, out, "wrote-dev")
	img, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, 64<<10, bytes.Count(img, []byte{0}), "the outside file is untouched: %q", bytes.Trim(img, "\x00"))
}

// A command of a root agent cannot change the network configuration
// (`ip addr add` on lo: netlink, and CAP_NET_ADMIN) nor open a raw packet
// socket.
func TestRootCommandCannotConfigureTheNetwork(t *testing.T) {
	p, dir := confinedAsRoot(t)
	const addr = "127.3.2.1/32"
	if _, err := exec.LookPath("ip"); err == nil {
		t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", addr, "dev", "lo").Run() })
		_, out := run(t, p, "ip addr add "+addr+" dev lo && echo added", dir)
		assert.NotContains(t, out, "added")
		b, err := exec.Command("ip", "addr", "show", "dev", "lo").CombinedOutput()
		require.NoError(t, err, string(b))
		assert.NotContains(t, string(b), "127.3.2.1")
	} else {
		t.Log("no ip command here: the netlink socket is tested alone")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, kind := range []string{"netlink", "packet"} {
		code, out := run(t, p, fmt.Sprintf("%s %s %s", exe, socketArg, kind), dir)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "failed: permission denied", kind)
	}
}

// agentSecretEnv holds the secret of the agent process in
// TestAgentProcessUnreadable: set, this test binary plays the agent.
const agentSecretEnv = "SANDBOX_ATTACK_AGENT_SECRET"

// The agent's own process is out of a command's reach, as root too: its
// environment (where its API keys are), its memory, its open descriptors
// (their numbers may be listed; what they lead to is not readable).
// The test binary starts itself again as the agent, with a secret in its
// environment from the start (as /proc shows it) and in a file it holds
// open and has removed.
func TestAgentProcessUnreadable(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	secret := os.Getenv(agentSecretEnv)
	if secret == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAgentProcessUnreadable$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), agentSecretEnv+"=sk-agent-secret-"+strconv.Itoa(os.Getpid()))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the agent's test failed:\n%s", out)
		require.Contains(t, string(out), "--- PASS: TestAgentProcessUnreadable", string(out))
		assert.NotContains(t, string(out), "sk-agent-secret-")
		return
	}
	held, err := os.CreateTemp("", "agent-held-")
	require.NoError(t, err)
	defer held.Close()
	_, err = held.WriteString(secret)
	require.NoError(t, err)
	require.NoError(t, os.Remove(held.Name()))

	dir := t.TempDir()
	pid := os.Getpid()
	_, out := run(t, sandbox.Policy{Mode: sandbox.Required}, fmt.Sprintf(`cat /proc/%[1]d/environ && echo read-environ
		head -c 64 /proc/%[1]d/mem && echo read-mem
		cat /proc/%[1]d/fd/%[2]d && echo read-held-fd
		cat /proc/%[1]d/map_files/* && echo read-map-files`, pid, held.Fd()), dir)
	if bytes.Contains([]byte(out), []byte(secret)) {
		t.Errorf("a command read the agent's secret:\n%s", strings.ReplaceAll(out, secret, "<the secret>"))
	}
	for _, s := range []string{"read-environ", "read-mem", "read-held-fd", "read-map-files"} {
		assert.NotContains(t, out, s)
	}
}
