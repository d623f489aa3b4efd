// Package sandboxtest holds what the tests of programs that run commands
// in the sandbox share: skipping where the kernel cannot confine (or
// failing, in CI, where it must) and a local TCP listener to connect to.
package sandboxtest

import (
	"net"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// RequireLandlock skips the test where commands cannot run under
// Landlock here, saying why, and fails it instead when
// SESSIONKIT_REQUIRE_LANDLOCK=1 (set by .ci/run on a kernel that reports
// Landlock). The test binary must call [sandbox.Main] first.
func RequireLandlock(tb testing.TB) {
	tb.Helper()
	s := sandbox.Available()
	if s.Available {
		return
	}
	if os.Getenv("SESSIONKIT_REQUIRE_LANDLOCK") == "1" {
		tb.Fatalf("SESSIONKIT_REQUIRE_LANDLOCK=1 but the sandbox is not available: %s", s)
	}
	tb.Skipf("skipped: %s", s)
}

// TCPSink returns a TCP listener on 127.0.0.1 that accepts and closes
// every connection until the test ends.
func TCPSink(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(tb, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln
}
