//go:build unix

package sqlite

import (
	"errors"
	"syscall"
)

// processRuns reports whether process pid of this machine may still run:
// only a process that certainly does not exist (ESRCH) is gone.
func processRuns(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
