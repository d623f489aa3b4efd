package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

var (
	crashKills = flag.Int("crash.kills", 20, "number of times TestCrashKill kills a writing child process")
	crashSeed  = flag.Uint64("crash.seed", 0, "random seed of TestCrashKill; 0 picks one (it is logged)")
)

// The environment of a crash child: the database path and its seed.
const (
	crashEnvDB   = "SESSIONKIT_SQLITE_CRASH_DB"
	crashEnvSeed = "SESSIONKIT_SQLITE_CRASH_SEED"
	crashSession = "crash"
)

// TestCrashChild is the writing process of TestCrashKill; it does nothing
// unless started by it. It continues the crash session from its stored state
// and writes until it is killed, printing "try …" before and "ack …" after
// every write.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnvDB)
	if path == "" {
		t.Skip("runs only as the child process of TestCrashKill")
	}
	seed, err := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	if err != nil {
		crashExit("seed: %v", err)
	}
	// An orphaned child stops by itself (and on SIGPIPE once the parent is gone).
	time.AfterFunc(2*time.Minute, func() { crashExit("not killed in time") })
	s, err := Open(path)
	if err != nil {
		crashExit("open: %v", err)
	}
	ctx := context.Background()
	snap, err := s.Load(ctx, crashSession)
	if err != nil {
		crashExit("load: %v", err)
	}
	say := func(format string, args ...any) {
		if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
			os.Exit(3)
		}
	}
	kind, err := historytest.CrashWrite(ctx, s, snap, seed, say)
	crashExit("%s: %v", kind, err)
}

func crashExit(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(2)
}

// TestCrashKill kills a child process that writes the crash session with
// SIGKILL at random instants, then reopens the file, recovers it and checks
// that every acknowledged write is there, that nothing is lost, duplicated or
// half-written, and that no compaction stays in progress. The next child
// continues the same file.
func TestCrashKill(t *testing.T) {
	if os.Getenv(crashEnvDB) != "" {
		t.Skip("in the child process")
	}
	seed, rng, path, s := crashStart(t, 0)
	snap, err := s.Create(context.Background(), history.NewSession{ID: crashSession})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	model := historytest.NewCrashModel(snap.Version)
	var (
		violations int
		acked      = map[string]int{}
		recovered  int
	)
	violate := func(format string, args ...any) {
		t.Helper()
		violations++
		if violations <= 20 {
			t.Errorf(format, args...)
		}
	}
	for round := range *crashKills {
		ops, err := runCrashChild(path, seed+uint64(round)+1, time.Duration(5+rng.IntN(56))*time.Millisecond)
		if err != nil {
			violate("round %d: %v", round, err)
			break
		}
		for _, op := range ops {
			if op.Ack {
				acked[op.Kind]++
			}
		}
		n, err := verifyCrash(path, model, ops, func(format string, args ...any) {
			t.Helper()
			violate("round %d: "+format, append([]any{round}, args...)...)
		})
		if err != nil {
			violate("round %d: %v", round, err)
			break
		}
		recovered += n
	}
	total := 0
	for _, n := range acked {
		total += n
	}
	t.Logf("%d kills, %d acknowledged writes (%d appends, %d begins, %d commits, %d finishes, %d uncompacts), %d messages and %d segments at the end, %d interrupted compactions recovered, %d violations",
		*crashKills, total, acked["append"], acked["begin"], acked["commit"], acked["finish"], acked["uncompact"], model.Total, len(model.Segments), recovered, violations)
	t.Logf("killed during a write (stored / not stored): %v / %v", model.InFlightStored, model.InFlightLost)
}

// crashStart picks the seed of a crash test (-crash.seed, or the clock) and
// logs it, and opens a new file; stream tells the tests' random sequences
// apart.
func crashStart(t *testing.T, stream uint64) (uint64, *rand.Rand, string, *Store) {
	t.Helper()
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", seed, seed)
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(path)
	require.NoError(t, err)
	return seed, rand.New(rand.NewPCG(seed, stream)), path, s
}

// startChild starts the test binary running only the test named test, with
// env added to its environment; it returns its stdout and its stderr,
// collected.
func startChild(test string, env ...string) (*exec.Cmd, io.ReadCloser, *bytes.Buffer, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, out, stderr, nil
}

// runCrashChild starts a child on path, lets it write for delay after its
// first acknowledgement, kills it with SIGKILL and returns what it printed.
func runCrashChild(path string, seed uint64, delay time.Duration) ([]historytest.CrashOp, error) {
	cmd, out, stderr, err := startChild("TestCrashChild", crashEnvDB+"="+path, crashEnvSeed+"="+strconv.FormatUint(seed, 10))
	if err != nil {
		return nil, err
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var (
		ops     []historytest.CrashOp
		perr    error
		kill    <-chan time.Time
		timeout = time.After(time.Minute)
		killed  bool
	)
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			op, err := historytest.ParseCrashOp(line)
			if err != nil {
				perr = errors.Join(perr, err)
				break
			}
			ops = append(ops, op)
			if op.Ack && kill == nil && !killed {
				kill = time.After(delay)
			}
		case <-kill:
			kill, killed = nil, true
			_ = cmd.Process.Kill() // SIGKILL on Unix
		case <-timeout:
			timeout = nil
			_ = cmd.Process.Kill()
			perr = errors.Join(perr, errors.New("the child did not start writing within a minute"))
		}
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(werr, &exit) || exit.Exited() {
		perr = errors.Join(perr, fmt.Errorf("the child ended by itself (%v): %s", werr, stderr.String()))
	}
	return ops, perr
}

// verifyCrash reopens path after a kill and checks the crash session with
// model (see [historytest.CrashModel.Verify]). It returns how many
// interrupted compactions Recover recorded.
func verifyCrash(path string, model *historytest.CrashModel, ops []historytest.CrashOp, violate func(string, ...any)) (int, error) {
	indexed := make(chan int, 1)
	s, err := Open(path, withOnIndexed(func(n int) {
		select {
		case indexed <- n:
		default:
		}
	}))
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = s.Close() }()
	_, ids, err := model.Verify(context.Background(), s, crashSession, ops, false, violate)
	if err != nil {
		return 0, err
	}
	if err := verifyIndexed(s, crashSession, indexed, violate); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// verifyIndexed checks the search index of session id in the store s
// just reopened: every stored message numbered below the session's
// watermark (sessions.indexed) has its row and no other row is there (the
// rows and the watermark move in one transaction); the newest message is
// found by Search, indexed or not; and the store's committer indexes the
// tail the killed process left (indexer.go) in its idle time, which
// indexed, a channel the store's withOnIndexed hook signals, tells of.
func verifyIndexed(s *Store, id string, indexed <-chan int, violate func(string, ...any)) error {
	ctx := context.Background()
	check := func() (tail int64, err error) {
		tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return 0, err
		}
		defer func() { _ = tx.Rollback() }()
		var num, messages, mark, below, all int64
		if err := tx.QueryRow(`SELECT num, message_count, indexed FROM sessions WHERE id = ?`, id).Scan(&num, &messages, &mark); err != nil {
			return 0, err
		}
		if err := tx.QueryRow(`SELECT count(*) FROM message_fts WHERE rowid BETWEEN ? AND ?`, rowidOf(num, 0), rowidOf(num, mark)-1).Scan(&below); err != nil {
			return 0, err
		}
		if err := tx.QueryRow(`SELECT count(*) FROM message_fts WHERE rowid BETWEEN ? AND ?`, rowidOf(num, 0), rowidOf(num+1, 0)-1).Scan(&all); err != nil {
			return 0, err
		}
		if mark > messages || below != mark || all != mark {
			violate("session %s: %d messages stored, %d below the watermark, %d of them indexed, %d index rows", id, messages, mark, below, all)
		}
		return messages - mark, nil
	}
	tail, err := check()
	if err != nil {
		return err
	}
	var body []byte
	err = s.r.QueryRow(`SELECT body FROM messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1`, id).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var newest history.Message
	if err := decodeBodyCalls(body, &newest); err != nil {
		return err
	}
	word := strings.Fields(newest.Text)[1] // "message <n> …"
	page, err := s.Search(ctx, id, history.SearchQuery{Text: word, Limit: 50})
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(page.Hits, func(h history.SearchHit) bool { return h.MessageID == newest.ID }) {
		violate("session %s: the newest message %s (%d not indexed) is not found by %q", id, newest.ID, tail, word)
	}
	for tail > 0 {
		select {
		case <-indexed:
		case <-time.After(time.Minute):
			violate("session %s: the tail of %d messages is not indexed a minute after the reopen", id, tail)
			return nil
		}
		if tail, err = check(); err != nil {
			return err
		}
	}
	return nil
}

// The concurrent crash test: crashWriters sessions, each appended to by its
// own goroutine of one child process, so that the child's writes are group
// committed.
var crashConcurrentKills = flag.Int("crash.concurrent.kills", 20, "number of times TestCrashKillConcurrent kills a child with several writers")

const (
	crashEnvWriters = "SESSIONKIT_SQLITE_CRASH_WRITERS"
	crashWriters    = 8
)

// crashMessageText is the text of message n of session id, long enough to
// span several pages of the WAL in a batch.
func crashMessageText(id string, n int) string {
	return strings.Repeat(fmt.Sprintf("%s/%d;", id, n), 40)
}

// TestCrashConcurrentChild is the writing process of
// TestCrashKillConcurrent; it does nothing unless started by it. Each of
// its writers continues its session, appending one message per write, and
// prints "try <session> <n>" before and "ack <session> <n>" after each.
func TestCrashConcurrentChild(t *testing.T) {
	path := os.Getenv(crashEnvWriters)
	if path == "" {
		t.Skip("runs only as the child process of TestCrashKillConcurrent")
	}
	time.AfterFunc(2*time.Minute, func() { crashExit("not killed in time") })
	s, err := Open(path)
	if err != nil {
		crashExit("open: %v", err)
	}
	ctx := context.Background()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
			os.Exit(3)
		}
	}
	errs := make(chan error)
	for w := range crashWriters {
		go func() {
			id := fmt.Sprintf("w%d", w)
			snap, err := s.Load(ctx, id)
			if err != nil {
				errs <- err
				return
			}
			v, n := snap.Version, len(snap.Active)
			for ; ; n++ {
				say("try %s %d", id, n)
				m := history.Message{ID: fmt.Sprintf("%s-%d", id, n), Role: history.RoleUser, Text: crashMessageText(id, n)}
				if v, err = s.Append(ctx, id, v, []history.Message{m}); err != nil {
					errs <- fmt.Errorf("%s: append %d: %w", id, n, err)
					return
				}
				say("ack %s %d", id, n)
			}
		}()
	}
	crashExit("%v", <-errs)
}

// TestCrashKillConcurrent kills a child process in which several sessions
// are written at once (their writes group committed) with SIGKILL at random
// instants, then reopens the file and checks every session: every
// acknowledged message is there, nothing beyond the last one tried,
// nothing duplicated, every message whole, and the version matches.
func TestCrashKillConcurrent(t *testing.T) {
	if os.Getenv(crashEnvWriters) != "" || os.Getenv(crashEnvDB) != "" {
		t.Skip("in the child process")
	}
	_, rng, path, s := crashStart(t, 1)
	for w := range crashWriters {
		_, err := s.Create(context.Background(), history.NewSession{ID: fmt.Sprintf("w%d", w)})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	var acked, inFlightStored, inFlightLost int
	for round := range *crashConcurrentKills {
		lines, err := runConcurrentChild(path, time.Duration(5+rng.IntN(56))*time.Millisecond)
		require.NoError(t, err, "round %d", round)
		tried, ackd := map[string]int{}, map[string]int{}
		for _, line := range lines {
			var (
				kind, id string
				n        int
			)
			if _, err := fmt.Sscanf(line, "%s %s %d", &kind, &id, &n); err != nil {
				t.Fatalf("round %d: child line %q: %v", round, line, err)
			}
			switch kind {
			case "try":
				tried[id] = n + 1
			case "ack":
				ackd[id] = n + 1
				acked++
			}
		}
		s, err := Open(path)
		require.NoError(t, err, "round %d: reopen", round)
		for w := range crashWriters {
			id := fmt.Sprintf("w%d", w)
			snap, err := s.Load(context.Background(), id)
			require.NoError(t, err)
			got := len(snap.Active)
			if got < ackd[id] {
				t.Errorf("round %d: %s has %d messages, %d were acknowledged", round, id, got, ackd[id])
			}
			if tried[id] > 0 && got > tried[id] {
				t.Errorf("round %d: %s has %d messages, only %d were tried", round, id, got, tried[id])
			}
			if tried[id] > ackd[id] {
				if got == tried[id] {
					inFlightStored++
				} else {
					inFlightLost++
				}
			}
			assert.Equal(t, uint64(1+got), snap.Version, "round %d: %s: the version counts the writes", round, id)
			for n, m := range snap.Active {
				if m.ID != fmt.Sprintf("%s-%d", id, n) || m.Text != crashMessageText(id, n) {
					t.Errorf("round %d: %s: message %d is %q (%d bytes of text), not whole", round, id, n, m.ID, len(m.Text))
					break
				}
			}
		}
		require.NoError(t, s.Close())
	}
	t.Logf("%d kills of %d concurrent writers, %d acknowledged writes, killed during a write (stored / not stored): %d / %d",
		*crashConcurrentKills, crashWriters, acked, inFlightStored, inFlightLost)
}

// runConcurrentChild starts a TestCrashConcurrentChild on path, kills it
// with SIGKILL delay after its first acknowledgement and returns the lines
// it printed.
func runConcurrentChild(path string, delay time.Duration) ([]string, error) {
	cmd, out, stderr, err := startChild("TestCrashConcurrentChild", crashEnvWriters+"="+path)
	if err != nil {
		return nil, err
	}
	var (
		lines  []string
		killed bool
		timer  *time.Timer
	)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "try ") && !strings.HasPrefix(line, "ack ") {
			continue // the test binary's own output
		}
		lines = append(lines, line)
		if strings.HasPrefix(line, "ack ") && timer == nil {
			timer = time.AfterFunc(delay, func() { _ = cmd.Process.Kill() }) // SIGKILL on Unix
			killed = true
		}
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(werr, &exit) || exit.Exited() {
		return lines, fmt.Errorf("the child ended by itself (%v): %s", werr, stderr.String())
	}
	return lines, nil
}
