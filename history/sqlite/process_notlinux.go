//go:build !linux

package sqlite

import "github.com/sessionkit/sessionkit/history/internal/leasing"

// whereAmI is what a lease row records of where its holder runs, and
// whether this process can judge a holder recorded there: without PID
// namespaces, the host name (see processRuns for how a holder is judged).
func whereAmI() (where string, checkable bool) { return leasing.Hostname(), true }
