//go:build unix

package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timeouts of a server's life.
const (
	readyTimeout = 60 * time.Second // start (with crash recovery) until it accepts connections
	stopTimeout  = 30 * time.Second // fast shutdown before the server is killed
	goneTimeout  = 30 * time.Second // the processes of a killed server to be gone
)

// dirPrefix names the temporary directories of servers; a server start
// removes those of test binaries that are gone.
const dirPrefix = "sessionkit-pgtest-"

// server is one throwaway PostgreSQL server: a data directory and, while it
// runs, a postmaster that is our child and leads its own process group.
type server struct {
	bin     string              // the directory of initdb and postgres
	version string              // PG_VERSION of the data directory
	cred    *syscall.Credential // nil: run as the current user
	dir     string              // the temporary directory: data/, server.log, owner
	data    string
	logPath string
	port    int

	mu   sync.Mutex
	proc *os.Process // the postmaster while it runs
}

// newServer initializes a data directory in a new temporary directory and
// starts a server on it.
func newServer() (*server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := makeDir(cred)
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, cred: cred, dir: dir, data: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "server.log")}
	if err := s.initdb(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.start(false); err != nil {
		_ = s.destroy()
		return nil, err
	}
	return s, nil
}

// findBinaries returns the directory that holds initdb and postgres: the one
// of initdb in PATH, or else the newest /usr/lib/postgresql/<version>/bin.
func findBinaries() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if dir := filepath.Dir(p); has(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(pgLibGlob)
	sort.Slice(dirs, func(i, j int) bool { return versionLess(dirs[i], dirs[j]) })
	for _, dir := range slices.Backward(dirs) {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) in PATH or /usr/lib/postgresql/*/bin")
}

// runAs returns the credentials to run PostgreSQL with: nil (the current
// user) unless we are root, which PostgreSQL refuses to run as; then the user
// "postgres", or "nobody".
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New(`running as root, and there is no user "postgres" or "nobody" to run PostgreSQL as`)
}

// makeDir creates the server's temporary directory (mode 0700, owned by the
// user that runs the server) in the first of os.TempDir() and /tmp that
// this user can reach, after removing the directories that dead test
// binaries left there.
func makeDir(cred *syscall.Credential) (string, error) {
	var why []string
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if err := reachable(base, cred); err != nil {
			why = append(why, err.Error())
			continue
		}
		sweep(base)
		dir, err := os.MkdirTemp(base, dirPrefix+"*")
		if err != nil {
			return "", err
		}
		err = os.WriteFile(filepath.Join(dir, "owner"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
		if err == nil && cred != nil {
			err = chownTree(dir, cred)
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
		return dir, nil
	}
	return "", fmt.Errorf("no temporary directory the server's user can use: %s", strings.Join(why, "; "))
}

// reachable reports whether the user of cred (nil: the current user) can
// traverse dir and each of its parents, and write to dir.
func reachable(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d, first := dir, true; ; d, first = filepath.Dir(d), false {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := uint32(fi.Mode().Perm())
		switch {
		case st.Uid == cred.Uid:
			perm >>= 6
		case st.Gid == cred.Gid:
			perm >>= 3
		}
		if perm&1 == 0 || (first && perm&2 == 0) {
			return fmt.Errorf("%s is not accessible to uid %d", d, cred.Uid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func chownTree(dir string, cred *syscall.Credential) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

// sweep removes the server directories in base whose test binary is gone
// and whose server is not running (the kernel stopped it when its test
// binary died, see setDeathSignal).
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			// Being created, or created by something else: leave it unless it is old.
			if fi, err := os.Stat(dir); err != nil || time.Since(fi.ModTime()) < time.Hour {
				continue
			}
		} else if pid, err := strconv.Atoi(strings.TrimSpace(string(owner))); err != nil || running(pid) {
			continue
		}
		data := filepath.Join(dir, "data")
		if pid, _ := postmasterPID(data); pid > 0 && running(pid) {
			continue
		}
		removeSharedMemory(data)
		_ = os.RemoveAll(dir)
	}
}

// postmasterPID reads the process ID from a data directory's lock file.
func postmasterPID(data string) (int, []string) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, nil
	}
	lines := strings.Split(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	return pid, lines
}

// removeSharedMemory removes the System V shared memory segment that a
// killed server leaves (its ID is on line 7 of postmaster.pid); a server
// started on the data directory would remove it, a directory being deleted
// has to.
func removeSharedMemory(data string) {
	_, lines := postmasterPID(data)
	if len(lines) < 7 {
		return
	}
	if f := strings.Fields(lines[6]); len(f) == 2 {
		if id, err := strconv.Atoi(f[1]); err == nil {
			removeShm(id)
		}
	}
}

// command returns a command that runs a PostgreSQL binary as the server's
// user.
func (s *server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	env := []string{"LC_ALL=C", "LANG=C", "TZ=UTC"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "LC_ALL" && k != "LANG" && k != "TZ" && !strings.HasPrefix(k, "PG") && !strings.HasPrefix(k, "LC_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *server) initdb() error {
	cmd := s.command("initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &startError{err: fmt.Errorf("initdb: %v", err), what: "initdb output", log: string(out)}
	}
	v, _ := os.ReadFile(filepath.Join(s.data, "PG_VERSION"))
	s.version = strings.TrimSpace(string(v))
	// Trust the loopback, and nothing else (the server listens there only).
	hba := "# pgtest: trust connections from the loopback only\nhost all all 127.0.0.1/32 trust\n"
	path := filepath.Join(s.data, "pg_hba.conf")
	if err := os.WriteFile(path, []byte(hba), 0o600); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Lchown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func (s *server) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// start starts the postmaster and waits until it accepts connections. The
// first start picks a free port, and picks another if the server cannot bind
// it; a restart keeps the port.
func (s *server) start(restart bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("the server is running")
	}
	for attempt := 0; ; attempt++ {
		if !restart {
			port, err := freePort()
			if err != nil {
				return err
			}
			s.port = port
		}
		err := s.startOnce()
		var se *startError
		if err == nil || attempt >= 9 || !errors.As(err, &se) || !strings.Contains(se.log, "Address already in use") {
			return err
		}
		if restart {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startOnce starts the postmaster on s.port; s.mu is held.
func (s *server) startOnce() error {
	logf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	off, _ := logf.Seek(0, io.SeekEnd)
	readLog := func() string {
		b, _ := os.ReadFile(s.logPath)
		if int64(len(b)) >= off {
			b = b[off:]
		}
		return string(bytes.TrimSpace(b))
	}
	cmd := s.command("postgres", "-D", s.data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "fsync=on",
		"-c", "synchronous_commit=on",
		"-c", "full_page_writes=on",
		// Dynamic shared memory in files of the data directory, which is
		// removed with it, rather than in /dev/shm, where killed servers
		// would leave it.
		"-c", "dynamic_shared_memory_type=mmap",
		"-c", "shared_buffers=32MB",
		"-c", "max_connections=200",
	)
	if v, _ := strconv.Atoi(s.version); v >= 14 && runtime.GOOS == "linux" {
		// After a crash, sync the data directory's file system with one
		// syncfs rather than fsync its files one by one: a restart after
		// Kill takes a few hundred milliseconds less.
		cmd.Args = append(cmd.Args, "-c", "recovery_init_sync_method=syncfs")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setpgid = true // not stopped by a ^C meant for the test binary
	setDeathSignal(cmd.SysProcAttr)
	if err := spawn(cmd); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.proc = cmd.Process

	deadline := time.Now().Add(readyTimeout)
	for {
		if status, exited := s.reap(false); exited {
			return &startError{err: fmt.Errorf("postgres exited at start (%s)", status), what: "server log", log: readLog()}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.adminURL())
		if err == nil {
			err = conn.Close(ctx)
			cancel()
			return err
		}
		cancel()
		if time.Now().After(deadline) {
			_ = s.killLocked()
			return &startError{err: fmt.Errorf("postgres accepts no connections after %v: %v", readyTimeout, err), what: "server log", log: readLog()}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reap collects the postmaster if it exited (or, with block, once it exits);
// s.mu is held.
func (s *server) reap(block bool) (status string, exited bool) {
	if s.proc == nil {
		return "not running", true
	}
	flags := syscall.WNOHANG
	if block {
		flags = 0
	}
	var ws syscall.WaitStatus
	for {
		pid, err := syscall.Wait4(s.proc.Pid, &ws, flags, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err == nil && pid == 0 {
			return "", false
		}
		switch {
		case err != nil:
			status = err.Error()
		case ws.Signaled():
			status = "signal " + ws.Signal().String()
		default:
			status = "exit status " + strconv.Itoa(ws.ExitStatus())
		}
		_ = s.proc.Release()
		s.proc = nil
		spawned()
		return status, true
	}
}

// kill kills the postmaster and its processes with SIGKILL and waits for
// them to be gone. PostgreSQL's processes each lead a process group of
// their own, so the postmaster is stopped (it cannot fork any more) while
// they are listed.
func (s *server) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	return s.killLocked()
}

func (s *server) killLocked() error {
	pid := s.proc.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	procs := descendants(pid)
	for _, p := range procs {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	s.reap(true)
	return waitGone(procs)
}

// descendants returns the processes below pid.
func descendants(pid int) []int {
	var all []int
	for next := []int{pid}; len(next) > 0; {
		var kids []int
		for _, p := range next {
			kids = append(kids, children(p)...)
		}
		all = append(all, kids...)
		next = kids
	}
	return all
}

// stop shuts the server down (a fast shutdown; killed if it takes too long).
func (s *server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil
	}
	_ = syscall.Kill(s.proc.Pid, syscall.SIGINT)
	procs := descendants(s.proc.Pid)
	for deadline := time.Now().Add(stopTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, exited := s.reap(false); exited {
			return waitGone(procs)
		}
	}
	if err := s.killLocked(); err != nil {
		return err
	}
	return fmt.Errorf("the server did not shut down within %v; killed", stopTimeout)
}

// destroy stops the server and removes its directory.
func (s *server) destroy() error {
	err := s.stop()
	removeSharedMemory(s.data)
	return errors.Join(err, os.RemoveAll(s.dir))
}

// The postmasters are started from one goroutine locked to its OS thread,
// which lives as long as one of them runs: Linux sends a process its
// parent-death signal when the thread that started it exits, not the
// process.
var spawner struct {
	mu   sync.Mutex
	live int
	reqs chan func()
}

// spawn starts cmd on the spawner's thread.
func spawn(cmd *exec.Cmd) error {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	if spawner.reqs == nil {
		spawner.reqs = make(chan func())
		go spawnLoop(spawner.reqs)
	}
	done := make(chan error)
	spawner.reqs <- func() { done <- cmd.Start() }
	if err := <-done; err != nil {
		if spawner.live == 0 {
			close(spawner.reqs)
			spawner.reqs = nil
		}
		return err
	}
	spawner.live++
	return nil
}

// spawned records that a process that spawn started has been reaped.
func spawned() {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	if spawner.live--; spawner.live == 0 {
		close(spawner.reqs)
		spawner.reqs = nil
	}
}

func spawnLoop(reqs <-chan func()) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	for f := range reqs {
		f()
	}
}

// waitGone waits until none of procs runs any more.
func waitGone(procs []int) error {
	deadline := time.Now().Add(goneTimeout)
	for _, p := range procs {
		for running(p) {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d of the killed server still runs after %v", p, goneTimeout)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return nil
}
