package crashtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/acp"
)

// buildAgent builds examples/acp-agent, with its demo tools (the demotools
// build tag: echo and fail), into a temporary directory and
// returns the binary's path.
func buildAgent(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the agent: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "acp-agent")
	cmd := exec.Command(goBin, "build", "-tags", "demotools", "-o", bin, "github.com/sessionkit/sessionkit/examples/acp-agent")
	cmd.Env = offlineEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build examples/acp-agent: %v\n%s", err, out)
	}
	return bin
}

// offlineEnv is this process's environment without the variables that would
// make the agent use a network provider.
func offlineEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_API_KEY=") || strings.HasPrefix(kv, "OPENAI_BASE_URL=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// syncBuffer is a bytes.Buffer safe for the copying goroutine of exec.Cmd
// and the test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail returns the last n bytes written.
func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// agentProc is one agent process and the ACP client connected to its stdio
// through plain pipes (no copying goroutine: after a SIGKILL the client reads
// everything the agent wrote and then EOF).
type agentProc struct {
	cmd     *exec.Cmd
	client  *acp.Client
	stderr  *syncBuffer
	exited  chan struct{} // closed when cmd.Wait has returned
	waitErr error         // cmd.Wait's error, once exited is closed
	killed  atomic.Bool   // this test sent SIGKILL
	args    []string
}

// startAgent starts bin with args and connects an ACP client (which
// advertises session.compaction) to it.
func startAgent(ctx context.Context, bin string, args []string) (*agentProc, error) {
	inR, inW, err := os.Pipe() // the agent's stdin
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe() // the agent's stdout
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, err
	}
	p := &agentProc{stderr: &syncBuffer{}, exited: make(chan struct{}), args: args}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.Env = offlineEnv()
	err = p.cmd.Start()
	// The child has its own copies; ours of its ends must go, so that its
	// death ends our reads with EOF.
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("start agent: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	// Dial owns outR and inW from here: the connection closes them when it
	// ends, also when the handshake fails.
	p.client, err = acp.Dial(ctx, outR, inW, acp.ClientOptions{})
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("dial agent %v: %w (stderr: %s)", args, err, p.stderr.tail(2000))
	}
	return p, nil
}

// kill sends SIGKILL (once the process exited it does nothing) and waits for
// the process to be gone.
func (p *agentProc) kill() {
	select {
	case <-p.exited:
	default:
		p.killed.Store(true)
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.exited
}

// dead reports whether the process has exited.
func (p *agentProc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop ends the connection (the agent sees EOF and exits by itself) and
// waits for the process; after 10 s it is killed. It returns an error when
// the agent did not exit cleanly.
func (p *agentProc) stop() error {
	var cerr error
	if p.client != nil {
		cerr = p.client.Close()
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.kill()
		return errors.Join(cerr, fmt.Errorf("the agent did not exit within 10 s of EOF (stderr: %s)", p.stderr.tail(2000)))
	}
	if p.waitErr != nil && !p.killed.Load() {
		return errors.Join(cerr, fmt.Errorf("the agent exited with %v (stderr: %s)", p.waitErr, p.stderr.tail(2000)))
	}
	return cerr
}

// reap waits until a killed agent is gone and its client's goroutines have
// returned.
func (p *agentProc) reap() {
	p.kill()
	if p.client != nil {
		_ = p.client.Close()
	}
}
