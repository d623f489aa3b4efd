//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// deadlineGrace is how long after a command's timeout its supervisor ends
// it by itself: the caller, which stops the command at the timeout and
// reports it as such, goes first.
const deadlineGrace = 500 * time.Millisecond

// Exit statuses of the supervisor when it ends the command itself.
const (
	exitTimeout   = 124 // the command's timeout passed (as timeout(1))
	exitAgentGone = 128 + int(syscall.SIGKILL)
)

// supervise is the helper's first stage, unrestricted. With --ns it starts
// the init stage as PID 1 of a new PID namespace (the kernel ends every
// process of the namespace when its init ends, and init ends when this
// process does, by its parent-death signal); without it, as the child
// subreaper, it starts the confine stage (or the command) itself and kills
// what the command left when it ends. Either way it ends the command when
// the command ends, when it is told to stop (SIGTERM, SIGINT, SIGHUP),
// when the agent that prepared the command dies, and when the command's
// timeout has passed, and returns the command's status.
func supervise(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	agentGone, err := watchAgent(h.agent)
	if err != nil {
		return helperFail(err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var deadline <-chan time.Time
	if h.timeout > 0 {
		deadline = time.After(h.timeout + deadlineGrace)
	}

	argv, attr := h.argv, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	switch {
	case h.ns:
		argv, attr = append([]string{executablePath(), initArg}, args...), nsAttr()
	case h.landlock:
		argv = append([]string{executablePath(), confineArg}, args...)
	}
	if !h.ns {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return helperFail(fmt.Errorf("cannot become the subreaper of the command: %w", err))
		}
	}
	// Pdeathsig is bound to the thread that starts the child: keep this
	// goroutine on it for the helper's life.
	runtime.LockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = environ(os.Environ(), h.env, h.tmp)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return helperFail(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var code int
	select {
	case err = <-waited:
		code, waited = exitCode(err), nil
	case sig := <-stop:
		code = 128 + int(sig.(syscall.Signal))
	case <-agentGone:
		code = exitAgentGone
	case <-deadline:
		fmt.Fprintf(os.Stderr, "sandbox: the command was killed after its %v timeout\n", h.timeout)
		code = exitTimeout
	}
	if !h.ns {
		killDescendants()
		return code
	}
	// The kernel kills every process of the namespace when its init
	// ends, and init has ended only once they all have.
	if waited != nil {
		_ = cmd.Process.Kill()
		<-waited
	}
	return code
}

// executablePath is this program, to start the next stage of the helper.
func executablePath() string {
	exe, err := os.Executable()
	if err != nil {
		return "/proc/self/exe"
	}
	return exe
}

// nsAttr is how the supervisor starts the init stage (and the agent its
// probe): in new PID and mount namespaces, killed when its parent ends. A
// process without CAP_SYS_ADMIN needs a user namespace for them, in which
// it keeps its own user and group (mapped to themselves) and, for the init
// stage only, CAP_SYS_ADMIN to mount.
func nsAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if !hasSysAdmin() {
		uid, gid := os.Geteuid(), os.Getegid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return a
}

// hasSysAdmin reports whether this process has CAP_SYS_ADMIN (root, but
// not root in a container that dropped it).
func hasSysAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_ADMIN) != 0
}

// initStage is the helper's second stage with --ns: PID 1 of the
// command's PID namespace. It sets up the mount namespace (isolate), opens
// the session's directories again in it (the inherited descriptors lead
// through the agent's mounts, which a command must not reach: a working
// directory there would make paths relative to it writable again), starts
// the confine stage (or, unconfined, the command) in the working
// directory, reaps every process orphaned in the namespace, and exits with
// the command's status when the command ends, which ends every process
// left in the namespace.
func initStage(args []string) int {
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	inherited, err := openDirs(h) // checked, closed on exec
	if err != nil {
		return helperFail(err)
	}
	byName, err := currentNames(h, inherited)
	if err != nil {
		return helperFail(err)
	}
	if err := isolate(byName); err != nil {
		return helperFail(fmt.Errorf("cannot set up the command's mount namespace: %w", err))
	}
	dirs, err := openDirs(byName)
	if err != nil {
		return helperFail(err)
	}
	if err := enterDir(h, dirs); err != nil {
		return helperFail(err)
	}
	argv, files := h.argv, []*os.File{os.Stdin, os.Stdout, os.Stderr}
	if h.landlock {
		argv = append([]string{executablePath(), confineArg}, inherit(h, args)...)
		files = append(files, dirFiles(dirs)...)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return helperFail(err)
	}
	// The command gets no capability from this stage (in a user namespace
	// it holds CAP_SYS_ADMIN to mount). Capabilities are per thread: start
	// the command from the thread that dropped them.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return helperFail(fmt.Errorf("cannot drop the ambient capabilities: %w", err))
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Env: os.Environ(), Files: files})
	if err != nil {
		return helperFail(err)
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return helperFail(fmt.Errorf("waiting for the command: %w", err))
		case pid == p.Pid && ws.Signaled():
			return 128 + int(ws.Signal())
		case pid == p.Pid:
			return ws.ExitStatus()
		}
	}
}

// errNotInit: a stage that sets up namespaces was started outside them.
var errNotInit = errors.New("the sandbox's init stage runs only as PID 1 of a PID namespace made for it")

// currentNames returns h with the directories named where the descriptors
// dirs (of h's directories, in order) are now, to be opened by name in the
// new mount namespace (a copy of the agent's, so the names lead to the same
// directories; openDirs checks that they do): a directory moved since the
// command was prepared is used where it is, as the descriptor would be.
func currentNames(h helperArgs, dirs []int) (helperArgs, error) {
	name := func(d dirRef, fd int) (dirRef, error) {
		p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil || !filepath.IsAbs(p) {
			return d, fmt.Errorf("cannot find where the session directory %s is now (%q): %v; %w", d.path, p, err, errDirMoved)
		}
		d.path = p
		return d, nil
	}
	out := h
	out.inherited, out.writable = false, make([]dirRef, len(h.writable))
	var err error
	for i, d := range h.writable {
		if out.writable[i], err = name(d, dirs[i]); err != nil {
			return out, err
		}
	}
	if h.cwd != nil {
		cwd, err := name(*h.cwd, dirs[len(dirs)-1])
		if err != nil {
			return out, err
		}
		out.cwd = &cwd
	}
	return out, nil
}

// isolate sets up the mount namespace of the init stage: no mount event
// propagates to or from the agent's, and a fresh /proc shows only the
// command's PID namespace (the agent's processes are not in it). Confined
// (h.landlock), every mount is made read-only except the writable
// directories of h (opened by name, each checked to be the directory the
// command was prepared with), bound back as they were, so that what
// Landlock does not govern (chmod, chown, utimes, extended attributes)
// fails with EROFS outside them.
func isolate(h helperArgs) error {
	// Only ever in namespaces made for it: started by hand (or by a
	// mistaken caller) in the agent's, it would change the agent's
	// mounts.
	if os.Getpid() != 1 {
		return errNotInit
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if !h.landlock {
		return nil
	}
	h.cwd = nil
	at, err := openDirs(h)
	if err != nil {
		return err
	}
	// Copies of the writable directories' mounts, as they are (a
	// read-only mount below one stays read-only), taken before
	// everything is made read-only and put back on top after.
	trees := make([]int, 0, len(at))
	defer func() {
		for _, fd := range append(trees, at...) {
			unix.Close(fd)
		}
	}()
	for i, fd := range at {
		tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("copying the mount of %s: %w", h.writable[i].path, err)
		}
		trees = append(trees, tree)
	}
	if err := unix.MountSetattr(-1, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the mounts read-only: %w", err)
	}
	for i, tree := range trees {
		if err := unix.MoveMount(tree, "", at[i], "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
			return fmt.Errorf("binding %s back writable: %w", h.writable[i].path, err)
		}
	}
	return nil
}

// probe is run by the agent, as the init stage would be, to learn whether
// commands can have namespaces of their own here; it says why not on
// stderr.
func probe() int {
	h := helperArgs{landlock: true}
	err := func() error {
		f, err := os.Open(os.TempDir())
		if err != nil {
			return err
		}
		defer f.Close()
		ref, err := dirRefOf(f)
		if err != nil {
			return err
		}
		d, err := parseDirRef(ref)
		h.writable = []dirRef{d}
		return err
	}()
	if err == nil {
		err = isolate(h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// namespaces returns why commands cannot run in namespaces of their own
// here, or "". It starts the probe once and remembers its answer.
var namespaces = sync.OnceValue(func() string {
	cmd := exec.Command(executablePath(), probeArg)
	cmd.SysProcAttr = nsAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	switch {
	case err == nil:
		return ""
	case stderr.Len() > 0:
		return strings.TrimSpace(string(bytes.ToValidUTF8(stderr.Bytes()[:min(stderr.Len(), 200)], nil)))
	}
	return "cannot make PID and mount namespaces (are unprivileged user namespaces disabled?): " + err.Error()
})

// agentID names this process for its commands' supervisors: PID:START,
// START its start time in clock ticks after boot, so that a supervisor
// does not take a later process with the same PID for it.
var agentID = sync.OnceValue(func() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + ":" + startTime(pid)
})

// startTime returns the start time of the process pid (field 22 of
// /proc/PID/stat), or "" when there is no such process.
func startTime(pid int) string {
	if f := procStat(pid); len(f) > 19 {
		return f[19]
	}
	return ""
}

// procStat returns the fields of /proc/PID/stat after the command name
// (state, ppid, ...), or nil.
func procStat(pid int) []string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	// pid (comm) state ppid ...; comm may hold anything, so look after
	// its last ')'.
	s := string(stat)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// errAgentGone: the agent that prepared a command ended before its
// supervisor started.
var errAgentGone = errors.New("the agent that prepared the command has ended")

// watchAgent returns a channel closed when the agent named by id
// (PID:START, from agentID) ends, or errAgentGone if it already has. An
// empty id is watched by nothing (a nil channel).
func watchAgent(id string) (<-chan struct{}, error) {
	if id == "" {
		return nil, nil
	}
	p, start, _ := strings.Cut(id, ":")
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || start == "" {
		return nil, fmt.Errorf("--agent %q is not PID:START", id)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil, errAgentGone
	}
	// Checked after the descriptor is open: if the start time is the
	// agent's, the descriptor is the agent's too.
	if startTime(pid) != start {
		if err == nil {
			unix.Close(fd)
		}
		return nil, errAgentGone
	}
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		if err != nil { // no pidfd (before Linux 5.3): look now and then
			for startTime(pid) == start {
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		// Readable when the process has ended.
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return gone, nil
}
