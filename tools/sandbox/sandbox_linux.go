//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

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
		fields := procStat(p)
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

// errDirMoved is why the helper refuses a command whose directory's name
// leads elsewhere than when the command was prepared.
var errDirMoved = errors.New("the session's directories must stay where they were when the session opened: move it back, or open a new session where the directories are now")

// openDirs returns a descriptor of each directory of h (in the order of
// h.dirs): the inherited ones, or, where h has none (an editor's
// terminal), each name opened once. Either way each must be the directory
// the command was prepared with, on the same device with the same inode:
// a name that leads elsewhere now (the directory was moved, or replaced by
// another or by a symbolic link) fails with errDirMoved, naming it. The
// descriptors are closed on exec.
func openDirs(h helperArgs) ([]int, error) {
	refs := h.dirs()
	fds := make([]int, 0, len(refs))
	for i, d := range refs {
		var fd int
		var err error
		if h.inherited {
			fd = 3 + i
			syscall.CloseOnExec(fd)
		} else if fd, err = unix.Open(d.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil, fmt.Errorf("the session directory %s is gone (%v); %w", d.path, err, errDirMoved)
			}
			return nil, fmt.Errorf("cannot open the session directory %s: %w", d.path, err)
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		switch err := unix.Fstat(fd, &st); {
		case err != nil && h.inherited:
			return nil, fmt.Errorf("descriptor %d (%s) was not inherited: %w", fd, d.path, err)
		case err != nil:
			return nil, fmt.Errorf("cannot stat the session directory %s: %w", d.path, err)
		case st.Dev != d.dev || st.Ino != d.ino || st.Mode&unix.S_IFMT != unix.S_IFDIR:
			if h.inherited {
				return nil, fmt.Errorf("descriptor %d is not the directory %s", fd, d.path)
			}
			return nil, fmt.Errorf("the session directory %s was moved or replaced (the name leads to another directory now); %w", d.path, errDirMoved)
		}
	}
	return fds, nil
}

// enterDir makes the working directory of h (the last of dirs) this
// process's, by its descriptor.
func enterDir(h helperArgs, dirs []int) error {
	if h.cwd == nil {
		return nil
	}
	if err := unix.Fchdir(dirs[len(dirs)-1]); err != nil {
		return fmt.Errorf("cannot enter %s: %w", h.cwd.path, err)
	}
	return nil
}

// inherit returns the helper's arguments args for a stage that inherits
// the directories of h as descriptors 3, 4, … ([dirFiles]).
func inherit(h helperArgs, args []string) []string {
	if h.inherited {
		return args
	}
	return append([]string{inheritedArg}, args...)
}

// dirFiles returns the descriptors dirs as files for exec.Cmd.ExtraFiles,
// so that the next stage gets them as 3, 4, …
func dirFiles(dirs []int) []*os.File {
	files := make([]*os.File, len(dirs))
	for i, fd := range dirs {
		files[i] = os.NewFile(uintptr(fd), "")
	}
	return files
}

// confine is the helper's second stage: it confines itself (Landlock, no
// capabilities, no_new_privs, the seccomp filter) and execs the command,
// which inherits all of it, in the working directory it was given.
func confine(args []string) int {
	// Capabilities and the Landlock domain belong to a thread: this one,
	// which execs the command.
	runtime.LockOSThread()
	h, err := parseHelperArgs(args)
	if err != nil {
		return helperFail(err)
	}
	dirs, err := openDirs(h)
	if err != nil {
		return helperFail(err)
	}
	if err := enterDir(h, dirs); err != nil {
		return helperFail(err)
	}
	if err := restrict(h, dirs[:len(h.writable)]); err != nil {
		return helperFail(fmt.Errorf("cannot confine the command: %w", err))
	}
	path, err := exec.LookPath(h.argv[0])
	if err != nil {
		return helperFail(err)
	}
	return helperFail(syscall.Exec(path, h.argv, os.Environ()))
}

// restrict confines the calling thread (locked to its OS thread, which
// then execs the command) as h says, with writable the descriptors of its
// writable directories: the Landlock ruleset of [landlockRuleset], every
// capability dropped and no_new_privs set ([dropPrivileges]), and the
// seccomp filter of [denySockets].
func restrict(h helperArgs, writable []int) error {
	s := kernelStatus()
	if !s.Available {
		return errors.New(s.Reason)
	}
	if !h.network && s.ABI < 4 {
		return fmt.Errorf("Landlock ABI %d cannot restrict TCP", s.ABI)
	}
	ruleset, err := landlockRuleset(s.ABI, h.network, writable)
	if err != nil {
		return fmt.Errorf("Landlock ruleset: %w", err)
	}
	defer unix.Close(ruleset)
	if err := dropPrivileges(); err != nil {
		return err
	}
	if err := llsyscall.LandlockRestrictSelf(ruleset, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return denySockets(h.network)
}

// Landlock file-system rights.
const (
	// readRights: the whole file system, read and executed.
	readRights = llsyscall.AccessFSExecute | llsyscall.AccessFSReadFile | llsyscall.AccessFSReadDir
	// deviceRights: the devices every shell writes to.
	deviceRights = llsyscall.AccessFSReadFile | llsyscall.AccessFSWriteFile | llsyscall.AccessFSTruncate
	// neverGranted: making block and character devices (as root, a
	// block device of a disk or loop device is the disk) and ioctl on
	// devices, in no directory.
	neverGranted = llsyscall.AccessFSMakeChar | llsyscall.AccessFSMakeBlock | llsyscall.AccessFSIoctlDev
)

// devices are the device files a command may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// handledFS returns the file-system rights Landlock ABI abi restricts
// that the sandbox knows.
func handledFS(abi int) uint64 {
	h := uint64(llsyscall.AccessFSMakeSym<<1 - 1) // ABI 1: execute … make symbolic links
	if abi >= 2 {
		h |= llsyscall.AccessFSRefer
	}
	if abi >= 3 {
		h |= llsyscall.AccessFSTruncate
	}
	if abi >= 5 {
		h |= llsyscall.AccessFSIoctlDev
	}
	return h
}

// landlockRuleset returns a Landlock ruleset for Landlock ABI abi: the
// whole file system readable and executable; the directories writable
// (every handled right but [neverGranted]: moving files between them
// included, from ABI 2) from their descriptors, never from a name; the
// [devices] readable and writable; TCP connect and bind denied unless
// network; signals and abstract UNIX sockets scoped to the command's own
// processes (ABI 6).
func landlockRuleset(abi int, network bool, writable []int) (int, error) {
	attr := llsyscall.RulesetAttr{HandledAccessFS: handledFS(abi)}
	if !network {
		attr.HandledAccessNet = llsyscall.AccessNetBindTCP | llsyscall.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = llsyscall.ScopeAbstractUnixSocket | llsyscall.ScopeSignal
	}
	ruleset, err := llsyscall.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	allow := func(fd int, access uint64) error {
		rule := llsyscall.PathBeneathAttr{ParentFd: fd, AllowedAccess: access & attr.HandledAccessFS}
		return llsyscall.LandlockAddPathBeneathRule(ruleset, &rule, 0)
	}
	err = allowPath(allow, "/", readRights)
	for _, fd := range writable {
		if err == nil {
			err = allow(fd, attr.HandledAccessFS&^neverGranted)
		}
	}
	for _, dev := range devices {
		if err == nil {
			err = allowPath(allow, dev, deviceRights)
		}
	}
	if err != nil {
		unix.Close(ruleset)
		return -1, err
	}
	return ruleset, nil
}

// allowPath calls allow with a descriptor of the file name, which may be
// missing.
func allowPath(allow func(fd int, access uint64) error, name string, access uint64) error {
	fd, err := unix.Open(name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := allow(fd, access); err != nil {
		return fmt.Errorf("%s: landlock_add_rule: %w", name, err)
	}
	return nil
}

// The securebits (linux/securebits.h): root gets no capabilities on exec
// and keeps none on a change of user ID, each locked.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
	lockedOut                     = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked | secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// dropPrivileges leaves the calling thread, and what it execs, no more
// power than an unprivileged user's, run as root or not: where it may
// (CAP_SETPCAP), it locks root out of its special case (the securebits) and
// empties the bounding set; then it clears the ambient capabilities and
// the effective, permitted and inheritable sets, and sets no_new_privs (no
// setuid or file capabilities on exec).
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedOut, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := uintptr(0); ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) {
			// Past the last capability, or no CAP_SETPCAP (then
			// nothing permitted to lose: the sets below are emptied
			// and no_new_privs keeps them so).
			break
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return nil
}
