//go:build unix && !linux

package pgtest

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setDeathSignal does nothing: only Linux has parent-death signals.
func setDeathSignal(*syscall.SysProcAttr) {}

// children returns the processes whose parent is pid, as ps lists them.
func children(pid int) []int {
	out, err := exec.Command("ps", "-A", "-o", "pid=,ppid=").Output()
	if err != nil {
		return nil
	}
	var kids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		c, err1 := strconv.Atoi(f[0])
		p, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && p == pid {
			kids = append(kids, c)
		}
	}
	return kids
}

// running reports whether a process exists.
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// removeShm does nothing: the segment of a killed server stays.
func removeShm(int) {}
