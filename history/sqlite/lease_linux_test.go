//go:build linux

package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/historytest"
)

const leaseEnvDB = "SESSIONKIT_SQLITE_LEASE_CHILD_DB"

// TestLeaseHolderChild is the holder of TestLeaseHolderInOtherPIDNamespace;
// it does nothing unless started by it. It takes the lease of session
// "contained", prints "held <pid>" and keeps it until its stdin closes.
func TestLeaseHolderChild(t *testing.T) {
	path := os.Getenv(leaseEnvDB)
	if path == "" {
		t.Skip("runs only as the child process of TestLeaseHolderInOtherPIDNamespace")
	}
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	s, err := Open(path, WithHolder("contained-agent"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "lease child:", err)
		os.Exit(2)
	}
	if _, err := s.Acquire(context.Background(), "contained"); err != nil {
		fmt.Fprintln(os.Stderr, "lease child:", err)
		os.Exit(2)
	}
	fmt.Printf("held %d\n", os.Getpid())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until EOF
	_ = s.Close()
	os.Exit(0)
}

// TestLeaseHolderInOtherPIDNamespace: a live holder in another PID
// namespace (another container sharing the file and the host name) whose
// pid names no process here is not taken for gone: its lease is not taken
// over, and the session reads as served, until the lease expires.
func TestLeaseHolderInOtherPIDNamespace(t *testing.T) {
	if os.Getenv(leaseEnvDB) != "" {
		t.Skip("in the child process")
	}
	// Where a PID namespace cannot be made the test skips, except in CI
	// (CI set), which runs as root on a machine that can: there it fails.
	skip := t.Skipf
	if os.Getenv("CI") != "" {
		skip = t.Fatalf
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		skip("needs unshare(1) to start a process in a PID namespace of its own")
	}
	if err := exec.Command(unshare, "--pid", "--fork", "--kill-child", "true").Run(); err != nil {
		skip("cannot make a PID namespace here (unshare --pid --fork --kill-child: %v; it needs root or CAP_SYS_ADMIN)", err)
	}
	// A pid no process of this namespace has: the holder gets it in its
	// own namespace, so that judging it by its pid here says "gone".
	want := 300
	for want < 30000 && processRuns(want) {
		want++
	}
	path := t.TempDir() + "/sessions.db"
	s := open(t, path, WithHolder("outside"))

	// sh is pid 1 of the new namespace; it forks until the next pid is
	// want, then starts the holder.
	script := `while :; do /bin/true & wait; [ "$!" -ge "$1" ] && break; done; "$0" -test.run='^TestLeaseHolderChild$' -test.count=1`
	cmd := exec.Command(unshare, "--pid", "--fork", "--kill-child", "sh", "-c", script, os.Args[0], strconv.Itoa(want-1))
	cmd.Env = append(os.Environ(), leaseEnvDB+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the holder: %v: %s", err, stderr.String())
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, stderr.String())
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "held ")))
	require.NoError(t, err, line)
	if processRuns(pid) {
		t.Skipf("the holder's pid %d is also a process of this namespace: the check would not tell", pid)
	}
	require.NoError(t, cmd.Process.Signal(syscall.Signal(0)), "the holder runs")

	ctx := context.Background()
	_, err = s.Acquire(ctx, "contained")
	historytest.LeaseError(t, err, "contained", "contained-agent")
	info, err := s.ReadLease(ctx, "contained")
	require.NoError(t, err)
	require.NotNil(t, info, "served")
	assert.Equal(t, "contained-agent", info.Holder)
	if processRuns(pid) {
		t.Skipf("pid %d was taken by a process of this namespace meanwhile: the check did not tell", pid)
	}
}
