package mcp

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// drainWait bounds how long an ended server's stderr is still read: a
// process that left the group may hold it open.
const drainWait = time.Second

// process is a stdio server's process, the leader of its own process
// group. One goroutine waits for it; exited is closed once it has been
// waited for (waitErr set first) and the rest of its group killed.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File // our end of its stdin
	stdout  *os.File // our end of its stdout
	stderr  *os.File // our end of its stderr
	tail    *tailBuffer
	exited  chan struct{}
	drained chan struct{} // its stderr has been read to the end (or given up on)
	waitErr error
}

// startProcess starts the command of cfg in a process group of its own,
// with pipes for its stdin, stdout and stderr.
func startProcess(cfg Server, environ []string) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append(slices.Clip(environ), cfg.Env...)
	cmd.Dir = cfg.Dir
	// Files, not writers: the child writes them directly, and Wait returns
	// when the process exits, whoever else holds them.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	closeAll(inR, outW, errW) // the child's ends
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: errR, tail: &tailBuffer{},
		exited: make(chan struct{}), drained: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		var w io.Writer = p.tail
		if cfg.Stderr != nil {
			w = io.MultiWriter(p.tail, cfg.Stderr)
		}
		_, _ = io.Copy(w, errR)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		// The server is gone: end what is left of its group (the group
		// lives on while any of it does, so its ID is not reused) and its
		// connection, so that calls in flight fail instead of waiting for
		// a child that holds its stdout.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		closeAll(p.stdin, p.stdout)
		close(p.exited)
		_ = errR.SetReadDeadline(time.Now().Add(drainWait))
		<-copied
		_ = errR.Close()
		close(p.drained)
	}()
	return p, nil
}

// stop ends the process: its stdin is closed, then its group is sent
// SIGTERM after grace and SIGKILL after grace again; stop returns once
// it has been waited for and its stderr read.
func (p *process) stop(grace time.Duration) {
	_ = p.stdin.Close()
	pgid := p.cmd.Process.Pid
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t.Reset(grace)
		select {
		case <-p.exited:
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
	}
	<-p.drained
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// tailMax bounds the stderr a ServerError quotes.
const tailMax = 1 << 10

// tailBuffer keeps the last tailMax bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) >= tailMax {
		p = p[len(p)-tailMax:]
		b.buf = b.buf[:0]
	}
	if over := len(b.buf) + len(p) - tailMax; over > 0 {
		b.buf = b.buf[over:]
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

// String returns the tail, its lines joined by " | ", with control and
// format characters shown escaped (clean).
func (b *tailBuffer) String() string {
	b.mu.Lock()
	s := string(b.buf)
	b.mu.Unlock()
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		if line = clean(strings.TrimSpace(line), tailMax); line != "" {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, " | ")
}
