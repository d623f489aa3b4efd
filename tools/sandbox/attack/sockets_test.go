//go:build linux

package attack_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/sandbox/sandboxtest"
)

// socketCommand is the command line that runs this binary as a socket
// client (socketArg).
func socketCommand(t *testing.T, kind string, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return shellArgs(`"$@"`, append([]string{exe, socketArg, kind}, args...))
}

// networkModes are the policies of a confined command, without network
// and with.
var networkModes = map[string]sandbox.Policy{
	"network off": {Mode: sandbox.Required},
	"network on":  {Mode: sandbox.Required, Network: true},
}

// A UNIX datagram socket outside the sandbox (as syslog's, or one an
// attacker's accomplice listens on) receives nothing from a command, with
// network or without; unconfined, the same command delivers (so the
// attack works where nothing stops it).
func TestUnixDatagramToOutsideRefused(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	sock := filepath.Join(t.TempDir(), "outside.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	require.NoError(t, err)
	defer ln.Close()
	// received reads what is queued on the listener now, without
	// waiting: a datagram sent has been queued when its sendto returned.
	received := func() bool {
		rc, err := ln.SyscallConn()
		require.NoError(t, err)
		var rerr error
		require.NoError(t, rc.Read(func(fd uintptr) bool {
			_, _, rerr = unix.Recvfrom(int(fd), make([]byte, 64), unix.MSG_DONTWAIT)
			return true
		}))
		if errors.Is(rerr, unix.EAGAIN) {
			return false
		}
		require.NoError(t, rerr)
		return true
	}
	for name, p := range networkModes {
		code, out := run(t, p, socketCommand(t, "unixgram", sock), t.TempDir())
		assert.Equal(t, 1, code, name+": "+out)
		assert.Contains(t, out, "failed: socket: permission denied", name)
		assert.False(t, received(), "%s: the listener outside received a datagram", name)
	}
	code, out := run(t, sandbox.Policy{Mode: sandbox.Off}, socketCommand(t, "unixgram", sock), t.TempDir())
	assert.Equal(t, 0, code, "unconfined: "+out)
	assert.True(t, received(), "unconfined, the datagram arrives")
}

// vsock (the host of a virtual machine) and netlink (the kernel's
// configuration) sockets cannot be made, with network or without; a
// socketpair (which reaches nothing outside) can.
func TestSocketFamiliesRefusedInEveryMode(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	for name, p := range networkModes {
		for _, kind := range []string{"vsock", "netlink", "packet"} {
			code, out := run(t, p, socketCommand(t, kind), t.TempDir())
			assert.Equal(t, 1, code, "%s, %s: %s", name, kind, out)
			assert.Equal(t, "failed: permission denied\n", out, "%s, %s", name, kind)
		}
		code, out := run(t, p, socketCommand(t, "socketpair"), t.TempDir())
		assert.Equal(t, 0, code, "%s, socketpair: %s", name, out)
		assert.Equal(t, "ok\n", out, "%s, socketpair", name)
	}
}

// TCP to a listener on 127.0.0.1 connects with network and fails without
// (the socket itself is refused).
func TestTCPOnlyWithNetwork(t *testing.T) {
	sandboxtest.RequireLandlock(t)
	ln := sandboxtest.TCPSink(t)
	want := map[string]string{"network off": fmt.Sprintf("failed: dial tcp4 %s: socket: permission denied\n", ln.Addr()), "network on": "ok\n"}
	for name, p := range networkModes {
		_, out := run(t, p, socketCommand(t, "tcp", ln.Addr().String()), t.TempDir())
		assert.Equal(t, want[name], out, name)
	}
}
