package sandbox_test

import (
	"os"
	"testing"

	"github.com/sessionkit/sessionkit/tools/sandbox"
)

// testTools are what the test binary does when started with one of their
// names as its first argument, instead of running the tests: the processes
// a test needs besides the helper (an agent that stands in for the real
// one, a tool for what sh cannot do).
var testTools = map[string]func(args []string) int{}

// TestMain runs the helper's stages (the test binary starts itself as the
// helper) and the test tools; it does not call sandbox.Main, so that
// TestWithoutTheHook sees a program that did not (sandbox.Hook stands in
// for Main in the other tests).
func TestMain(m *testing.M) {
	sandbox.RunHelper()
	if len(os.Args) > 1 {
		if tool, ok := testTools[os.Args[1]]; ok {
			os.Exit(tool(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}
