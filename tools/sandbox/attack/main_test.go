//go:build linux

// Package attack_test runs the attacks the sandbox must stop as real
// commands on the real kernel, through Policy.Prepare and Command.Run,
// from a test binary that calls sandbox.Main (the package's own tests
// cannot: they check what happens without the hook).
package attack_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// TestMain calls the sandbox hook first: Command.Run starts this binary
// again as the sandbox helper.
func TestMain(m *testing.M) {
	sandbox.Main()
	if len(os.Args) >= 3 && os.Args[1] == socketArg {
		err := trySocket(os.Args[2], os.Args[3:])
		if err != nil {
			fmt.Println("failed:", err)
			os.Exit(1)
		}
		fmt.Println("ok")
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// socketArg makes this binary try one socket operation as a command:
// "BINARY socketArg KIND [ARG]" prints "ok" or "failed: ERROR". KIND is
//
//   - unixgram PATH: send a datagram to the UNIX socket PATH;
//   - tcp ADDR: connect to ADDR (IPv4);
//   - socketpair: make a connected pair of UNIX sockets;
//   - vsock, netlink, packet: make a socket of that family (AF_VSOCK
//     reaches the host of a virtual machine, AF_NETLINK the kernel's
//     configuration, AF_PACKET raw frames on every interface).
const socketArg = "sandbox-attack-socket"

func trySocket(kind string, args []string) error {
	arg := func() string {
		if len(args) == 0 {
			return ""
		}
		return args[0]
	}
	family := map[string]int{"vsock": unix.AF_VSOCK, "netlink": unix.AF_NETLINK, "packet": unix.AF_PACKET}
	switch kind {
	case "unixgram":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("-----BEGIN OPENSSH PRIVATE KEY-----"), 0, &unix.SockaddrUnix{Name: arg()})
	case "tcp":
		c, err := net.DialTimeout("tcp4", arg(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	case "socketpair":
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return err
	case "vsock", "netlink", "packet":
		typ := map[string]int{"vsock": unix.SOCK_STREAM, "netlink": unix.SOCK_RAW, "packet": unix.SOCK_RAW}[kind]
		proto := map[string]int{"netlink": unix.NETLINK_ROUTE}[kind]
		fd, err := unix.Socket(family[kind], typ, proto)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	return errors.New("unknown kind " + kind)
}

// requireRoot skips a test unless it runs as root, saying why.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: this attack needs root (the agent running as root, as in a development container); CI runs it as root")
	}
}

// run runs line under p in dir and returns its status and output.
func run(tb testing.TB, p sandbox.Policy, line, dir string) (int, string) {
	tb.Helper()
	c, err := p.Prepare(line, dir)
	require.NoError(tb, err)
	defer c.Close()
	return runCommand(tb, c)
}

// runCommand runs c here and returns its status and output.
func runCommand(tb testing.TB, c *sandbox.Command) (int, string) {
	tb.Helper()
	var out strings.Builder
	code, err := c.Run(context.Background(), &out)
	require.NoError(tb, err, out.String())
	return code, out.String()
}
