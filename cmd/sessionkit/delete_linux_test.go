package main

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side the user types on and the
// terminal a program reads.
func openPTY(t *testing.T) (user, tty *os.File) {
	t.Helper()
	user, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no pseudo-terminal, which CI has: %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { _ = user.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(user.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(user.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tty.Close() })
	return user, tty
}

// TestDeleteOnTerminal runs delete in a process of its own whose standard
// input is a terminal (a pseudo-terminal): it asks, and deletes on yes
// only.
func TestDeleteOnTerminal(t *testing.T) {
	path, ids := writeSessions(t)
	bin, err := os.Executable()
	require.NoError(t, err)
	for _, tt := range []struct {
		answer string
		status int
	}{{"no\n", exitFailure}, {"y\n", 0}} {
		user, tty := openPTY(t)
		_, err := user.WriteString(tt.answer) // typed ahead: the terminal keeps the line
		require.NoError(t, err)
		res := cliUser{bin: bin, stdin: tty}.run(t, "--store", path, "delete", ids[0])
		assert.Equal(t, tt.status, res.status, "answer %q: %s", tt.answer, res.stderr)
		assert.Contains(t, res.stderr, "[y/N]")
		if tt.status == 0 {
			assert.Equal(t, "deleted session "+ids[0]+"\n", res.stdout)
			gone(t, path, ids[0])
		} else {
			assert.Contains(t, res.stderr, "not deleted")
			stillThere(t, path, ids[0])
		}
	}
	stillThere(t, path, ids[1])
}
