//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// helperSupported: on Linux commands run in the helper.
const helperSupported = true

func kernelStatus() Status {
	abi, err := llsyscall.LandlockGetABIVersion()
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return Status{Reason: "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)"}
	case errors.Is(err, syscall.EOPNOTSUPP):
		return Status{Reason: "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"}
	case err != nil:
		return Status{Reason: "Landlock cannot be queried: " + err.Error()}
	case abi < 1:
		return Status{Reason: fmt.Sprintf("the kernel reports Landlock ABI %d", abi)}
	}
	return Status{Available: true, ABI: abi}
}

// supervise is the helper's first stage: with the environment cleaned, as
// the child subreaper, it runs the command (through the confine stage when
// Landlock is asked for), ends every process the command left when it ends
// or when the helper is told to stop, and returns the command's status.
func supervise(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	env := environ(os.Environ(), h.env, h.tmp)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return helperFail(fmt.Errorf("cannot become the subreaper of the command: %w", err))
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	argv := h.argv
	if h.landlock {
		exe, err := os.Executable()
		if err != nil {
			return helperFail(err)
		}
		argv = append([]string{exe, confineArg}, args...)
	}
	// Pdeathsig is bound to the thread that starts the child: keep this
	// goroutine on it for the helper's life.
	runtime.LockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return helperFail(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var code int
	select {
	case err = <-waited:
		code = exitCode(err)
	case sig := <-stop:
		code = 128 + int(sig.(syscall.Signal))
	}
	killDescendants()
	return code
}

// exitCode is the status sh would report for a command that ended with
// err from Wait.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 126
}

// killDescendants kills every descendant of this process and reaps them,
// until none is left: orphans come to this process (the subreaper), so a
// process that left the group or the session is found too.
func killDescendants() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range descendants(os.Getpid()) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return // no child left, none can come
			}
			if pid <= 0 {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// descendants returns the processes below pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold anything, so look
		// after its last ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, children[p]...)
		queue = append(queue, children[p]...)
	}
	return out
}

// confine is the helper's second stage: it applies the Landlock ruleset to
// itself and execs the command, which inherits it.
func confine(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	if err := restrict(h); err != nil {
		return helperFail(fmt.Errorf("cannot apply the Landlock ruleset: %w", err))
	}
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		return helperFail(err)
	}
	return helperFail(syscall.Exec(path, h.argv, os.Environ()))
}

// restrict applies the ruleset of h to this process: everything readable
// and executable, the writable directories (and the few devices every
// shell writes to) writable, TCP connect and bind denied unless h allows
// network (and, then, UDP and Multipath TCP sockets refused by a seccomp
// filter), UNIX stream sockets refused by that filter with network or
// without, signals and abstract UNIX sockets scoped to the command's own
// processes (ABI 6).
func restrict(h helperArgs) error {
	s := kernelStatus()
	if !s.Available {
		return errors.New(s.Reason)
	}
	if !h.network && s.ABI < 4 {
		return fmt.Errorf("Landlock ABI %d cannot restrict TCP", s.ABI)
	}
	cfg := landlock.V11.BestEffort()
	if h.network {
		cfg.HandledAccessNet = 0
	}
	rw := landlock.RWDirs(h.writable...)
	if s.ABI >= 2 {
		rw = rw.WithRefer() // moving files between directories (git does)
	}
	err := cfg.Restrict(
		landlock.RODirs("/"),
		rw,
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty").IgnoreIfMissing(),
	)
	if err != nil {
		return err
	}
	return denySockets(h.network)
}
