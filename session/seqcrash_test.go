package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// The environment of a numbering child (TestSeqChild).
const (
	seqEnvDB   = "SESSIONKIT_SEQ_CHILD_DB"
	seqEnvMode = "SESSIONKIT_SEQ_CHILD_MODE" // new, open, or stuck
	seqSession = "numbered"
)

// stuckLog is a store whose event log writes of events never return, as a
// store that hangs (or a process killed before its first batch lands):
// only batches without events (the reservation of an open) get through.
type stuckLog struct{ history.Store }

func (s stuckLog) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	if len(b.Events) > 0 {
		select {} // until the process is killed
	}
	return s.Store.LogEvents(ctx, id, b)
}

// stuckLeaser is a SQLite store whose leases write through a stuckLog.
type stuckLeaser struct{ *sqlite.Store }

func (s stuckLeaser) Acquire(ctx context.Context, id string) (history.Lease, error) {
	l, err := s.Store.Acquire(ctx, id)
	if err != nil {
		return nil, err
	}
	return stuckLease{l}, nil
}

// AcquireReserving is the store's, with the lease's writes through a
// stuckLog too (the reservation made with the lease gets through).
func (s stuckLeaser) AcquireReserving(ctx context.Context, id string, gap uint64) (history.Lease, history.SeqReservation, error) {
	l, r, err := s.Store.AcquireReserving(ctx, id, gap)
	if err != nil {
		return nil, r, err
	}
	return stuckLease{l}, r, nil
}

type stuckLease struct{ history.Lease }

func (l stuckLease) Store() history.Store { return stuckLog{l.Lease.Store()} }

// TestSeqChild is a process of TestSeq_NeverReusedAcrossKilledProcesses; it
// does nothing unless started by it. It opens the session (creates it in
// mode new), holds two turns and prints "seq N" for every event it is given,
// then "turns done". In mode stuck its event log never takes a batch of
// events and it waits to be killed; otherwise it closes and exits.
func TestSeqChild(t *testing.T) {
	path, mode := os.Getenv(seqEnvDB), os.Getenv(seqEnvMode)
	if path == "" {
		t.Skip("runs only as a child process of TestSeq_NeverReusedAcrossKilledProcesses")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "seq child: "+format+"\n", args...)
		os.Exit(2)
	}
	time.AfterFunc(time.Minute, func() { fail("not done or killed in time") })
	st, err := sqlite.Open(path)
	if err != nil {
		fail("open store: %v", err)
	}
	ctx := context.Background()
	cfg := session.Config{ID: seqSession, Provider: offline.New(offline.WithDeltaSize(3)), Store: st}
	var s *session.Session
	switch mode {
	case "new":
		s, err = session.New(ctx, cfg)
	case "stuck":
		cfg.Store = stuckLeaser{st}
		s, err = session.Open(ctx, cfg)
	default:
		s, err = session.Open(ctx, cfg)
	}
	if err != nil {
		fail("open session: %v", err)
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{Buffer: 10000})
	if err != nil {
		fail("subscribe: %v", err)
	}
	for i := range 2 {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: fmt.Sprintf("%s note %d: the build uses tabs.", mode, i)})
		if err != nil {
			fail("prompt: %v", err)
		}
		if _, err := h.Wait(ctx); err != nil {
			fail("wait: %v", err)
		}
	}
	// Every event of the two turns is in the subscription by now, the
	// last one a TurnFinished.
	for finished := 0; finished < 2; {
		ev := <-sub.Events()
		fmt.Printf("seq %d\n", ev.Seq)
		if te, ok := ev.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
			finished++
		}
	}
	fmt.Println("turns done")
	if mode == "stuck" {
		select {} // killed here, its events never logged
	}
	sub.Close()
	if err := errors.Join(s.Close(), st.Close()); err != nil {
		fail("close: %v", err)
	}
	os.Exit(0)
}

// TestSeq_NeverReusedAcrossKilledProcesses (§6.1): five processes in turn
// serve one session on one SQLite file; the second and the fourth are
// killed (SIGKILL) before the first batch of their event log lands. No
// sequence number is given twice, and every process numbers above all
// numbers of the processes before it, also of those that logged nothing.
func TestSeq_NeverReusedAcrossKilledProcesses(t *testing.T) {
	if os.Getenv(seqEnvDB) != "" {
		t.Skip("in the child process")
	}
	path := filepath.Join(t.TempDir(), "seq.db")
	given := map[uint64]int{} // number → the process that gave it
	var highest uint64
	for proc, mode := range []string{"new", "stuck", "open", "stuck", "open"} {
		seqs := runSeqChild(t, path, mode)
		require.NotEmpty(t, seqs, "process %d (%s)", proc, mode)
		for i, n := range seqs {
			if other, dup := given[n]; dup {
				t.Errorf("number %d given by process %d and again by process %d (%s)", n, other, proc, mode)
			}
			given[n] = proc
			if i == 0 {
				assert.Greater(t, n, highest, "process %d (%s) numbers above every number given before", proc, mode)
			} else {
				assert.Greater(t, n, seqs[i-1], "process %d numbers in order", proc)
			}
		}
		t.Logf("process %d (%s): %d numbers, %d to %d", proc, mode, len(seqs), seqs[0], seqs[len(seqs)-1])
		highest = max(highest, seqs[len(seqs)-1])
		if mode == "stuck" {
			// Killed before its first batch: none of its numbers are logged.
			st, err := sqlite.Open(path)
			require.NoError(t, err)
			logged, err := st.Events(t.Context(), seqSession, seqs[0]-1, 0)
			require.NoError(t, err)
			require.NoError(t, st.Close())
			assert.Empty(t, logged, "process %d logged nothing before it was killed", proc)
		}
	}

	// The messages of the killed processes are stored and were never
	// logged; the open after each logged them: a replay from the log holds
	// every stored message at its position, each logged once.
	ctx := t.Context()
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer func() { _ = st.Close() }()
	tl, err := st.Timeline(ctx, seqSession)
	require.NoError(t, err)
	var stored []int64
	for _, e := range tl {
		if e.Message != nil {
			stored = append(stored, e.Position)
		}
	}
	require.Len(t, stored, 20, "five processes, two turns of two messages each")
	s, err := session.Open(ctx, session.Config{ID: seqSession, Provider: offline.New(), Store: st})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	rep, err := s.Replay(ctx, session.ReplayOptions{})
	require.NoError(t, err)
	rep.Sub.Close()
	var replayed []int64
	var stuckNotes int
	for _, ev := range rep.Events {
		if m, ok := ev.Payload.(*session.MessageEvent); ok {
			replayed = append(replayed, m.Position)
			if strings.HasPrefix(m.Message.Text, "stuck note") {
				stuckNotes++
			}
		}
	}
	assert.Equal(t, stored, replayed, "every stored message, in order")
	assert.Equal(t, 4, stuckNotes, "the prompts of the two killed processes")
	logged, err := st.Events(ctx, seqSession, 0, 0)
	require.NoError(t, err)
	messages := 0
	for _, e := range logged {
		if e.Kind == "message" {
			messages++
		}
	}
	assert.Equal(t, len(stored), messages, "each stored message logged once")
}

// runSeqChild runs one TestSeqChild in mode on path and returns the numbers
// it printed; a stuck child is killed with SIGKILL once it printed them.
func runSeqChild(t *testing.T, path, mode string) []uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeqChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), seqEnvDB+"="+path, seqEnvMode+"="+mode)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var seqs []uint64
	done := false
	sc := bufio.NewScanner(out)
	for !done && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "turns done":
			done = true
		case strings.HasPrefix(line, "seq "):
			n, err := strconv.ParseUint(strings.TrimPrefix(line, "seq "), 10, 64)
			require.NoError(t, err, line)
			seqs = append(seqs, n)
		}
	}
	if mode == "stuck" {
		require.NoError(t, cmd.Process.Kill()) // SIGKILL
	}
	werr := cmd.Wait() // reaped: its lease's holder is gone
	require.True(t, done, "%s child: %v: %s", mode, werr, stderr.String())
	var exit *exec.ExitError
	if mode == "stuck" {
		require.True(t, errors.As(werr, &exit) && !exit.Exited(), "the stuck child was killed: %v: %s", werr, stderr.String())
	} else {
		require.NoError(t, werr, stderr.String())
	}
	return seqs
}

// TestSeq_RefusedNearMaxSeq (§6.1): a session whose recorded numbers are so
// close to history.MaxSeq that a process could run out of them is not
// opened; the error says why.
func TestSeq_RefusedNearMaxSeq(t *testing.T) {
	for _, tt := range []struct {
		name string
		open func(t *testing.T) history.Store
	}{
		{"memstore", func(t *testing.T) history.Store { return memstore.New() }}, // history.SeqReserver
		{"sqlite", func(t *testing.T) history.Store { // the reservation made with the lease
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.open(t)
			el := store.(history.EventLog)
			ctx := context.Background()
			_, err := store.Create(ctx, history.NewSession{ID: "s"})
			require.NoError(t, err)
			require.NoError(t, el.LogEvents(ctx, "s", history.EventBatch{Through: math.MaxInt64 - 1<<32}))
			for range 2 { // a refused open takes nothing along: the second is refused alike
				_, err = session.Open(ctx, session.Config{ID: "s", Provider: offline.New(), Store: store})
				require.ErrorIs(t, err, session.ErrSeqExhausted)
				assert.Contains(t, err.Error(), "history.MaxSeq")
			}
			snap, err := store.Load(ctx, "s")
			require.NoError(t, err)
			assert.EqualValues(t, math.MaxInt64-1<<32, snap.LastSeq, "nothing recorded")

			// Further below, it opens and numbers above its reservation.
			_, err = store.Create(ctx, history.NewSession{ID: "t"})
			require.NoError(t, err)
			require.NoError(t, el.LogEvents(ctx, "t", history.EventBatch{Through: math.MaxInt64 - 2<<32}))
			s, err := session.Open(ctx, session.Config{ID: "t", Provider: offline.New(), Store: store})
			require.NoError(t, err)
			sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
			require.NoError(t, err)
			require.NoError(t, wait(t, mustPrompt(t, s, "hello")).Err)
			ev := <-sub.Events()
			assert.Greater(t, ev.Seq, uint64(math.MaxInt64-1<<32), "numbered above the reservation")
			sub.Close()
			require.NoError(t, s.Close())
			snap, err = store.Load(ctx, "t")
			require.NoError(t, err)
			assert.GreaterOrEqual(t, snap.LastSeq, uint64(math.MaxInt64-1<<32))
		})
	}
}
