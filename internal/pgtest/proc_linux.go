package pgtest

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setDeathSignal has the kernel send the postmaster SIGQUIT (PostgreSQL's
// immediate shutdown) if the test binary dies without stopping it.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGQUIT
}

// procStat reads a process's state and parent from /proc/<pid>/stat.
func procStat(pid string) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid …; comm may contain anything, even ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return f[0][0], ppid, err == nil
}

// children returns the processes whose parent is pid.
func children(pid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var kids []int
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if _, ppid, ok := procStat(name); ok && ppid == pid {
			if c, err := strconv.Atoi(name); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids
}

// running reports whether a process exists and is not a zombie (the
// orphaned processes of a killed server may stay zombies if nothing reaps
// them).
func running(pid int) bool {
	state, _, ok := procStat(strconv.Itoa(pid))
	return ok && state != 'Z' && state != 'X'
}

// removeShm removes a System V shared memory segment (IPC_RMID).
func removeShm(id int) {
	_, _, _ = syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), 0, 0)
}
