//go:build linux

package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

const busyEnvDB = "SESSIONKIT_SQLITE_BUSY_CHILD_DB"

// TestBusyWriterChild is the frozen writer of TestBusyWriterNamesHolder; it
// does nothing unless started by it. As "agent-a" it takes the lease of
// session "s", stores two messages, then begins a write transaction on a
// connection of its own (the file's write lock), prints "ready" and waits
// to be stopped. That connection waits for the lock as a store's writer
// does (a busy timeout): its own store's committer indexes the two
// messages in its idle time (indexer.go), and may hold the lock when the
// transaction begins.
func TestBusyWriterChild(t *testing.T) {
	path := os.Getenv(busyEnvDB)
	if path == "" {
		t.Skip("runs only as the child process of TestBusyWriterNamesHolder")
	}
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "busy child:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := Open(path, WithHolder("agent-a"))
	if err != nil {
		fail(err)
	}
	l, err := s.Acquire(ctx, "s")
	if err != nil {
		fail(err)
	}
	snap, err := l.Store().Create(ctx, history.NewSession{ID: "s"})
	if err == nil {
		_, err = l.Store().Append(ctx, "s", snap.Version, historytest.Msgs("s", 2))
	}
	if err != nil {
		fail(err)
	}
	db, err := sql.Open("sqlite", dsn(path, "_pragma=busy_timeout(5000)", "_txlock=immediate"))
	if err != nil {
		fail(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET version = version WHERE id = 's'`); err != nil {
		fail(err)
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	os.Exit(0)
}

// TestBusyWriterNamesHolder: a process frozen (SIGSTOP) inside a write
// holds the file's write lock. Another agent's writes, its Acquire of the
// frozen one's session among them, give up after the busy timeout with a
// history.BusyError that names the session's lease holder; its reads go
// on. Once the frozen process is gone, the other agent takes the session
// over, and what the frozen one had acknowledged is there.
func TestBusyWriterNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	b := open(t, path, WithHolder("agent-b"), WithBusyTimeout(200*time.Millisecond))
	ctx := context.Background()
	snap, err := b.Create(ctx, history.NewSession{ID: "other"})
	require.NoError(t, err)

	child := exec.Command(os.Args[0], "-test.run=^TestBusyWriterChild$", "-test.count=1")
	child.Env = append(os.Environ(), busyEnvDB+"="+path)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = child.Process.Kill()
			_ = stdin.Close()
			_ = child.Wait()
		}
	}
	t.Cleanup(kill)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, child.Process.Signal(syscall.SIGSTOP))

	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for name, write := range map[string]func() error{
		"acquire": func() error { _, err := b.Acquire(bounded, "s"); return err },
		"append":  func() error { _, err := b.Append(bounded, "other", snap.Version, historytest.Msgs("o", 1)); return err },
	} {
		err := write()
		require.ErrorIs(t, err, history.ErrBusy, name)
		var be *history.BusyError
		require.ErrorAs(t, err, &be, name)
		assert.Equal(t, 200*time.Millisecond, be.Waited, name)
		assert.Contains(t, err.Error(), "write lock", name)
		require.NoError(t, bounded.Err(), "%s: the busy timeout, not the context, ended the wait", name)
	}
	var be *history.BusyError
	_, err = b.Acquire(bounded, "s")
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "agent-a", be.Holder, "names the lease holder")
	got, err := b.Load(ctx, "s")
	require.NoError(t, err, "reads go on")
	assert.Len(t, got.Active, 2)

	kill() // the frozen process is gone: its lock and its lease with it
	l, err := b.Acquire(bounded, "s")
	require.NoError(t, err, "taken over from a holder that is gone")
	got, err = l.Store().Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"s-0", "s-1"}, []string{got.Active[0].ID, got.Active[1].ID}, "nothing acknowledged is lost")
	_, err = b.Append(ctx, "other", snap.Version, historytest.Msgs("o", 1))
	require.NoError(t, err)
}
