package sandbox

import "testing"

// RunHelper runs the helper stage os.Args names, if any, as Main does but
// without marking the program as one that can start the helper: the test
// binary's TestMain calls it, so that tests can show both ways (Hook).
var RunHelper = runHelper

// Hook makes this program one that can start the helper, as if it had
// called Main, until t ends.
func Hook(t testing.TB) {
	hooked = true
	t.Cleanup(func() { hooked = false })
}

// SetHooked makes this program one that can start the helper, for a child
// process of a test that stands in for an agent.
func SetHooked() { hooked = true }
