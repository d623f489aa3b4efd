// Package sandbox runs the shell commands of a coding agent confined: on
// Linux under Landlock, with the whole file system readable but writable
// only in the session's directories and a private temporary directory
// (never a device made there), no capability even when the agent runs as
// root, no socket but a UNIX socketpair unless the policy allows network
// (then IPv4 and IPv6 too), and always with a clean environment and a
// process tree that ends with the command.
//
// The agent process itself is never restricted: a command runs in a helper,
// the agent's own executable started again in helper mode. The program
// therefore calls [Main] first thing in main (and a test binary in
// TestMain):
//
//	func main() {
//		sandbox.Main() // returns at once unless this process is the helper
//		...
//	}
//
// The helper has three stages. The supervisor (unrestricted) keeps only
// the allowed environment variables and starts the init stage as PID 1 of
// new PID and mount namespaces (as an ordinary user, inside a user
// namespace that maps the user and group to themselves). Init mounts a
// fresh /proc (the agent's processes are not in it), makes every mount
// read-only but the session's directories and the private temporary
// directory (so chmod, chown, utimes and extended attributes, which
// Landlock does not govern, fail outside them), and starts the confine
// stage, which confines itself (the Landlock ruleset, every capability
// dropped, no_new_privs, a seccomp filter of socket families) and then
// execs the shell. The session's directories travel as descriptors
// ([Policy.WritableDirs], [Policy.PrepareAt], [Command.Files]): the rules
// are built from the directories the session opened, and the shell starts
// in its directory by descriptor, so a directory moved or replaced by a
// symbolic link cannot redirect a later command. With Landlock ABI 6 or
// later the command cannot signal the supervisor or init, which lie
// outside its domain.
//
// # Lifetime
//
// A command and every process it starts end, in this order of precedence:
// when the shell ends (init exits with its status, and the kernel kills
// what is left in the namespace); when the supervisor is told to stop
// (SIGTERM, SIGINT, SIGHUP: a timeout or cancel of [Command.Run]) or is
// killed, even with SIGKILL (init dies with it, by its parent-death
// signal); when the agent that prepared it dies (the supervisor watches it
// by a pidfd, checked against its start time, also when an editor's
// terminal started the supervisor); and half a second after
// [Policy.Timeout], which the supervisor enforces itself. Where the
// namespaces cannot be made ([Status.Contained] is false: unprivileged
// user namespaces disabled, or an old kernel), the supervisor becomes the
// child subreaper of the command's processes instead and kills them all
// in the same cases, but not when it is itself SIGKILLed, and a confined
// command may then change the metadata of files outside;
// [Policy.Warning] says so.
//
// # Modes
//
// [Off] runs commands without Landlock (still with the clean environment
// and the process-tree cleanup); [Auto] confines them when the kernel can
// and otherwise runs them unconfined, saying so ([Policy.Warning]);
// [Required] refuses to run a command it cannot confine.
//
// # Environment
//
// A command sees PATH, HOME, LANG, LC_*, TERM, USER and SHELL from the
// agent's environment, TMPDIR set to its private temporary directory
// (XDG_CACHE_HOME below it, so that build caches work), and the names added
// with [Policy.Env]. A name that can hold a credential is never passed,
// whatever the policy adds: see [EnvName].
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Mode says what to do with commands where Landlock is missing.
type Mode string

// The modes (the agent's --sandbox flag).
const (
	// Off runs commands without Landlock.
	Off Mode = "off"
	// Auto confines commands where the kernel can and runs them
	// unconfined, with a warning, elsewhere. The zero Mode is Auto.
	Auto Mode = "auto"
	// Required refuses to run a command it cannot confine.
	Required Mode = "required"
)

// ParseMode returns the Mode named s: off, auto or required.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Off, Auto, Required:
		return m, nil
	}
	return "", fmt.Errorf("unknown sandbox mode %q (want off, auto or required)", s)
}

// Status says whether this process can confine commands.
type Status struct {
	// Available is true when commands can run under Landlock: the kernel
	// has it enabled and the program called [Main].
	Available bool
	// ABI is the kernel's Landlock ABI version (0: none). TCP rules need
	// ABI 4 or later, signal scoping ABI 6.
	ABI int
	// Reason says why Landlock cannot be used, when it cannot.
	Reason string
	// Contained is true when each command runs in a PID namespace and a
	// mount namespace of its own (see the package doc, Lifetime): its
	// processes end with it whatever happens to its helper or the agent,
	// and, confined, it cannot change the metadata of files outside the
	// session's directories.
	Contained bool
	// NotContained says why commands cannot run in namespaces of their
	// own, when they cannot.
	NotContained string
}

// String describes s in one line.
func (s Status) String() string {
	if s.Available && s.Contained {
		return fmt.Sprintf("Landlock ABI %d, PID and mount namespaces", s.ABI)
	}
	if s.Available {
		return fmt.Sprintf("Landlock ABI %d", s.ABI)
	}
	return "sandbox unavailable: " + s.Reason
}

// hooked is set by Main: the helper can be started from this executable.
var hooked bool

// The first argument of the helper's two stages.
const (
	superviseArg = "__sessionkit_sandbox_supervise"
	initArg      = "__sessionkit_sandbox_init"
	confineArg   = "__sessionkit_sandbox_confine"
	probeArg     = "__sessionkit_sandbox_probe"
)

// Main runs the helper when this process was started as one, and never
// returns then; otherwise it returns at once. Call it first in main, before
// anything else runs: a program that does not call it gets no sandbox
// ([Available] says so).
func Main() {
	hooked = true
	runHelper()
}

// runHelper runs the helper stage os.Args names, if any, and exits.
func runHelper() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case superviseArg:
		os.Exit(supervise(os.Args[2:]))
	case initArg:
		os.Exit(initStage(os.Args[2:]))
	case confineArg:
		os.Exit(confine(os.Args[2:]))
	case probeArg:
		os.Exit(probe())
	}
}

// Available reports whether commands can run under Landlock here, and in
// namespaces of their own.
func Available() Status {
	s := kernelStatus()
	const unhooked = "the program does not call sandbox.Main first in main, so it cannot start the sandbox helper"
	if s.Available && !hooked {
		s.Available = false
		s.Reason = unhooked
	}
	switch {
	case !helperSupported:
		s.NotContained = "namespaces are Linux only"
	case !hooked:
		s.NotContained = unhooked
	default:
		s.NotContained = namespaces()
	}
	s.Contained = s.NotContained == ""
	return s
}

// Policy is how commands run.
type Policy struct {
	// Mode is off, auto or required; "" is Auto.
	Mode Mode
	// Writable are the directories a command may change (the session's
	// directories); the command's private temporary directory is added.
	// Prepare opens each once, and the command gets the directory the
	// name leads to then.
	Writable []string
	// WritableDirs are directories a command may change, held open by
	// the caller (the session's directories, opened once when the session
	// starts). The helper builds its rules from these descriptors, never
	// from a name, so a directory moved away or replaced by a symbolic
	// link after it was opened cannot redirect a command. Prefer them to
	// Writable; both may be given.
	WritableDirs []*os.File
	// Network allows IPv4 and IPv6 sockets: TCP connect and bind, UDP,
	// Multipath TCP. Off (the default) denies them. UNIX sockets (a
	// service outside the sandbox, as D-Bus or Docker, or a listener
	// outside) stay refused either way, but for a socketpair; so do
	// netlink, packet, vsock and every other family.
	Network bool
	// Env are the names of environment variables passed to commands
	// besides the allow-list; names [EnvName] refuses are never passed.
	Env []string
	// Timeout, when positive, is the command's timeout: the helper itself
	// ends the command and all its processes at most half a second after
	// it (the caller, which stops it at the timeout, goes first), even if
	// the agent is frozen or dead.
	Timeout time.Duration
}

// mode is p.Mode with the default.
func (p Policy) mode() Mode {
	if p.Mode == "" {
		return Auto
	}
	return p.Mode
}

// Warning returns what a command does not get under p, in one sentence for
// the user (at startup and in every command's permission request), or ""
// when commands run confined as the policy says.
func (p Policy) Warning() string {
	s := Available()
	switch {
	case p.mode() == Off:
		return "the sandbox is off (--sandbox=off): the command runs with the agent's rights"
	case !s.Available:
		return "not sandboxed (" + s.Reason + "): the command runs with the agent's rights"
	case !p.Network && s.ABI < 4:
		return fmt.Sprintf("network not confined: Landlock ABI %d cannot restrict TCP (ABI 4, Linux 6.7, can)", s.ABI)
	case !s.Contained:
		return "processes not contained (" + s.NotContained + "): a command's processes may outlive a SIGKILL of its helper or the agent's death, and it can change the permissions, owners and times of files outside the session's directories"
	}
	return ""
}

// check returns why p cannot run a command: under Required, anything
// [Policy.Warning] reports.
func (p Policy) check() error {
	if p.mode() == Required {
		if w := p.Warning(); w != "" {
			return errors.New("sandbox required (--sandbox=required) but " + w + "; the command was not run")
		}
	}
	return nil
}

// Command is a shell command prepared to run under a policy: the program
// and arguments to start (the helper, or the shell where there is none),
// its environment and directory. Run runs it here; an ACP client's
// terminal can run Path with Args, Env and Dir too. Close removes its
// private temporary directory and closes the directories Prepare opened.
type Command struct {
	Path string
	Args []string // without the program name
	Env  []string // NAME=value
	Dir  string
	// Files are the directories the helper inherits when Run runs the
	// command here (descriptors 3, 4, … in this order: the writable
	// directories, the private temporary directory, then the working
	// directory). The helper builds its Landlock rules from them and
	// starts the command in the last one, whatever their names lead to
	// by then. A terminal cannot pass descriptors: for it Args name each
	// directory with its device and inode, and the helper refuses to run
	// the command (status 126, saying which directory) when a name no
	// longer leads to the same directory. Nil where there is no helper.
	Files []*os.File
	// Confined says whether the command runs under Landlock.
	Confined bool
	// TempDir is the command's private temporary directory (its TMPDIR).
	TempDir string

	owned []*os.File // the Files Prepare opened, closed by Close
}

// Prepare returns the command that runs the shell command line under p in
// dir, with a private temporary directory made for it. Under [Required]
// it fails when the command cannot be confined. The directories of
// p.Writable and dir are opened here, once: the command gets the
// directories their names lead to now (see [Command.Files]).
func (p Policy) Prepare(line, dir string) (*Command, error) {
	return p.prepare(line, dir, nil)
}

// PrepareAt is [Policy.Prepare] with the command's working directory
// given as an open directory (usually one of [Policy.WritableDirs]): the
// command starts in that directory whatever its name leads to by then.
func (p Policy) PrepareAt(line string, dir *os.File) (*Command, error) {
	return p.prepare(line, dir.Name(), dir)
}

// prepare is Prepare and PrepareAt: at is the open directory named dir, or
// nil to open dir ("" for this process's directory).
func (p Policy) prepare(line, dir string, at *os.File) (*Command, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sessionkit-cmd-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: private temporary directory: %w", err)
	}
	c := &Command{Dir: dir, TempDir: tmp, Env: environ(os.Environ(), p.Env, tmp)}
	exe, err := os.Executable()
	if !helperSupported || !hooked || err != nil {
		// No helper: the shell runs directly (Run still ends its
		// process group).
		c.Path, c.Args = "sh", []string{"-c", line}
		return c, nil
	}
	s := Available()
	c.Confined = p.mode() != Off && s.Available
	args := []string{superviseArg, "--agent", agentID()}
	if p.Timeout > 0 {
		args = append(args, "--timeout", p.Timeout.String())
	}
	if s.Contained {
		args = append(args, "--ns")
	}
	if c.Confined {
		args = append(args, "--landlock")
	}
	if p.Network || (c.Confined && s.ABI < 4) {
		// Below ABI 4 Landlock cannot deny TCP: under Auto the command
		// runs with the network (Warning says so); Required refused it.
		args = append(args, "--net")
	}
	c.Files = slices.Clone(p.WritableDirs)
	for _, name := range append(slices.Clone(p.Writable), tmp) {
		f, err := c.open(name)
		if err != nil {
			return nil, err
		}
		c.Files = append(c.Files, f)
	}
	for _, f := range c.Files {
		ref, err := dirRefOf(f)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		args = append(args, "--rw", ref)
	}
	if at == nil && dir != "" {
		if at, err = c.open(dir); err != nil {
			return nil, err
		}
	}
	if at != nil {
		ref, err := dirRefOf(at)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		args = append(args, "--cwd", ref)
		c.Files = append(c.Files, at)
	}
	args = append(args, "--tmp", tmp)
	for _, n := range p.Env {
		if EnvName(n) == nil {
			args = append(args, "--env", n)
		}
	}
	c.Path, c.Args = exe, append(args, "--", "sh", "-c", line)
	return c, nil
}

// open opens the directory name for c (Close closes it); on failure it
// closes c and says which directory could not be opened.
func (c *Command) open(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err == nil {
		c.owned = append(c.owned, f)
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("sandbox: directory %s for a command: %w", name, err)
	}
	return f, nil
}

// dirRefOf returns how the helper's command line names the directory f:
// DEV:INO:PATH, its device and inode and its absolute name.
func dirRefOf(f *os.File) (string, error) {
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("sandbox: directory %s for a command: %w", f.Name(), err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("sandbox: directory %s for a command: no device and inode", f.Name())
	}
	name, err := filepath.Abs(f.Name())
	if err != nil {
		return "", fmt.Errorf("sandbox: directory %s for a command: %w", f.Name(), err)
	}
	return fmt.Sprintf("%d:%d:%s", uint64(sys.Dev), uint64(sys.Ino), name), nil
}

// Close removes the command's private temporary directory and closes the
// directories Prepare opened (never those of [Policy.WritableDirs] or the
// one given to [Policy.PrepareAt]).
func (c *Command) Close() error {
	for _, f := range c.owned {
		_ = f.Close()
	}
	c.owned = nil
	return os.RemoveAll(c.TempDir)
}

// stopGrace is how long a command told to stop (SIGTERM to its group) may
// take before it is killed.
const stopGrace = 2 * time.Second

// drainWait bounds the wait for the end of the output once the command has
// ended: a process that escaped the cleanup and holds the pipe open is not
// waited for.
const drainWait = time.Second

// Run runs c here in its own process group, writing its stdout and stderr
// to out (from one goroutine), and returns its exit status (128+n for a
// signal n, as sh reports it). When ctx ends first the command is told to
// stop (SIGTERM to its group; SIGKILL after a grace period) and Run returns
// the cause of ctx with the status. Either way every process the command
// started has ended when Run returns (on Linux, through the helper; where
// there is none, its process group), and out has all the output that was
// written.
func (c *Command) Run(ctx context.Context, out io.Writer) (int, error) {
	if ctx.Err() != nil {
		return -1, context.Cause(ctx) // nothing started
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer r.Close()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	if len(c.Files) > 0 {
		// The helper inherits the directories and enters the working
		// one by its descriptor, not by its name.
		cmd.Args = slices.Insert(slices.Clone(cmd.Args), 2, inheritedArg) // after the program and superviseArg
		cmd.ExtraFiles, cmd.Dir = c.Files, ""
	}
	cmd.Stdout, cmd.Stderr = w, w // a file: the child writes it directly, os/exec copies nothing
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return -1, err
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(out, r)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pgid := cmd.Process.Pid
	var cause error
	select {
	case err = <-waited:
	case <-ctx.Done():
		cause = context.Cause(ctx)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(stopGrace)
		select {
		case err = <-waited:
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-waited
		}
		t.Stop()
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // what is left of the group (where there is no helper)
	_ = r.SetReadDeadline(time.Now().Add(drainWait))
	<-copied
	code := -1
	var ee *exec.ExitError
	switch {
	case err == nil:
		code = 0
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case cause == nil:
		return -1, err
	}
	return code, cause
}

// The environment a command gets.
var (
	allowedEnv = []string{"PATH", "HOME", "LANG", "TERM", "USER", "SHELL"}
	// Names with these prefixes or containing these words (upper case)
	// are never passed.
	deniedPrefixes = []string{"OPENAI_", "ANTHROPIC_", "SESSIONKIT_"}
	deniedWords    = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}
	envNameRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// EnvName returns why the environment variable name may not be added to a
// command's environment, or nil. Provider and agent variables (OPENAI_*,
// ANTHROPIC_*, SESSIONKIT_*) and any name containing KEY, TOKEN, SECRET,
// PASSWORD, PASSWD or CREDENTIAL (in any case) are never passed: a command
// is run on the model's word and its output goes back to the model, so it
// gets no credential. TMPDIR is the command's own.
func EnvName(name string) error {
	if !envNameRE.MatchString(name) {
		return fmt.Errorf("%q is not an environment variable name", name)
	}
	u := strings.ToUpper(name)
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(u, p) {
			return fmt.Errorf("%s is never passed to commands (provider and agent variables (%s*) stay with the agent)", name, strings.Join(deniedPrefixes, "*, "))
		}
	}
	for _, w := range deniedWords {
		if strings.Contains(u, w) {
			return fmt.Errorf("%s is never passed to commands (a name containing %s may hold a credential)", name, w)
		}
	}
	if u == "TMPDIR" || u == "XDG_CACHE_HOME" {
		return fmt.Errorf("%s is set by the sandbox to the command's private temporary directory", name)
	}
	return nil
}

// environ returns the environment of a command from env (NAME=value):
// the allow-list, LC_*, the added names that EnvName accepts, and TMPDIR
// and XDG_CACHE_HOME in the private directory tmp.
func environ(env, added []string, tmp string) []string {
	out := Policy{Env: added}.Environ(env)
	return append(out, "TMPDIR="+tmp, "XDG_CACHE_HOME="+tmp+"/.cache")
}

// Environ returns the variables of env (NAME=value entries) a command
// gets under p: the allow-list, LC_* and the names of p.Env, each only if
// [EnvName] accepts it (never a credential). A program that starts other
// programs outside the sandbox, such as MCP servers, gives them this so
// that they see no more of its environment than a command does.
func (p Policy) Environ(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || EnvName(name) != nil {
			continue
		}
		if slices.Contains(allowedEnv, name) || strings.HasPrefix(name, "LC_") || slices.Contains(p.Env, name) {
			out = append(out, kv)
		}
	}
	return out
}

// The helper's argument that says its directories are inherited: the
// descriptors 3, 4, … are the --rw directories in order, then the --cwd
// one.
const inheritedArg = "--fds"

// helperArgs is the policy of the helper, from its command line.
type helperArgs struct {
	agent    string        // the agent's process: PID:START (its start time in clock ticks after boot)
	timeout  time.Duration // the command's timeout; 0: none
	ns       bool          // run the command in PID and mount namespaces of its own
	landlock bool
	network  bool
	// writable are the directories the command may change, cwd (if
	// any) the one it starts in.
	writable []dirRef
	cwd      *dirRef
	// inherited says the directories are descriptors 3, 4, …
	// (writable, then cwd), not to be opened by name.
	inherited bool
	tmp       string
	env       []string
	argv      []string // the command
}

// dirRef names a directory on the helper's command line: its device and
// inode when the command was prepared, and its name.
type dirRef struct {
	dev, ino uint64
	path     string
}

// parseDirRef reads DEV:INO:PATH.
func parseDirRef(s string) (dirRef, error) {
	dev, rest, ok1 := strings.Cut(s, ":")
	ino, path, ok2 := strings.Cut(rest, ":")
	d, err1 := strconv.ParseUint(dev, 10, 64)
	i, err2 := strconv.ParseUint(ino, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || !filepath.IsAbs(path) {
		return dirRef{}, fmt.Errorf("%q is not DEV:INO:ABSOLUTE-PATH", s)
	}
	return dirRef{dev: d, ino: i, path: path}, nil
}

// dirs returns the directories of h in the order of their descriptors.
func (h helperArgs) dirs() []dirRef {
	if h.cwd == nil {
		return h.writable
	}
	return append(slices.Clone(h.writable), *h.cwd)
}

func parseHelperArgs(args []string) (helperArgs, error) {
	var h helperArgs
	for i := 0; i < len(args); i++ {
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", args[i])
			}
			i++
			return args[i], nil
		}
		var err error
		var v string
		var d dirRef
		switch args[i] {
		case "--agent":
			h.agent, err = value()
		case "--timeout":
			if v, err = value(); err == nil {
				h.timeout, err = time.ParseDuration(v)
			}
		case "--ns":
			h.ns = true
		case "--landlock":
			h.landlock = true
		case "--net":
			h.network = true
		case inheritedArg:
			h.inherited = true
		case "--rw":
			if v, err = value(); err == nil {
				d, err = parseDirRef(v)
				h.writable = append(h.writable, d)
			}
		case "--cwd":
			if v, err = value(); err == nil {
				d, err = parseDirRef(v)
				h.cwd = &d
			}
		case "--tmp":
			h.tmp, err = value()
		case "--env":
			v, err = value()
			h.env = append(h.env, v)
		case "--":
			h.argv = args[i+1:]
			if len(h.argv) == 0 {
				return h, errors.New("no command after --")
			}
			return h, nil
		default:
			return h, fmt.Errorf("unknown argument %q", args[i])
		}
		if err != nil {
			return h, err
		}
	}
	return h, errors.New("no command (-- PROGRAM ARGS...)")
}

// helperFail reports an error of the helper on its stderr (the command's
// output) and returns the exit status 126 (as sh for a command it cannot
// run).
func helperFail(err error) int {
	fmt.Fprintln(os.Stderr, "sandbox:", err, "(the command was not run)")
	return 126
}
