package postgres

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
)

// The crash tests: a child process (TestCrashChild, the test binary run
// again) writes one session through a Store, and is killed (TestCrashKill)
// or has its PostgreSQL server killed under it (TestCrashServerKill) at a
// random instant; the parent then checks the stored session against what the
// child had printed: every acknowledged write is there, the write in flight
// is there completely or not at all, and interrupted compactions are
// recovered. The writing loop and the checks are historytest's
// (historytest.CrashWrite and historytest.CrashModel), shared with
// history/sqlite/crash_test.go; the leases and the server kills are this
// package's.
var (
	crashKills       = flag.Int("pgcrash.kills", 8, "number of times TestCrashKill kills a writing child process")
	crashServerKills = flag.Int("pgcrash.serverkills", 4, "number of times TestCrashServerKill kills the PostgreSQL server under a writing child")
	crashSeed        = flag.Uint64("pgcrash.seed", 0, "random seed of TestCrashKill and TestCrashServerKill; 0 picks one (it is logged)")
)

// The environment of a crash child.
const (
	crashEnvURL   = "SESSIONKIT_PGCRASH_URL"   // the database
	crashEnvSeed  = "SESSIONKIT_PGCRASH_SEED"  // the child's seed
	crashEnvMode  = "SESSIONKIT_PGCRASH_MODE"  // "client": write until killed; "server": until a write fails, then reload and exit
	crashEnvLease = "SESSIONKIT_PGCRASH_LEASE" // "1": write through a lease
	crashSession  = "crash"
	// crashTTL is the lease TTL of the crash children and of the parent.
	crashTTL = 500 * time.Millisecond
	// crashPrefix starts every line of the child's protocol; the test
	// binary prints other lines (PASS) too.
	crashPrefix = "pgcrash "
)

// TestCrashChild is the writing process of TestCrashKill and
// TestCrashServerKill; it does nothing unless started by them. It continues
// the crash session from its stored state, printing "try …" before and
// "ack …" after every write. In mode "client" it writes until it is killed.
// In mode "server" it writes until a write fails (its server was killed),
// prints "fail …", loads the session again until the server is back, prints
// "reloaded <version> <messages>" and exits. Through a lease, a write that
// fails with history.ErrFenced prints "fenced" and ends the child.
func TestCrashChild(t *testing.T) {
	dbURL := os.Getenv(crashEnvURL)
	if dbURL == "" {
		t.Skip("runs only as the child process of TestCrashKill and TestCrashServerKill")
	}
	seed, err := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	if err != nil {
		crashExit("seed: %v", err)
	}
	mode := os.Getenv(crashEnvMode)
	// An orphaned child stops by itself (and on SIGPIPE once the parent is gone).
	time.AfterFunc(2*time.Minute, func() { crashExit("not killed in time") })
	say := func(format string, args ...any) {
		if _, err := fmt.Fprintf(os.Stdout, crashPrefix+format+"\n", args...); err != nil {
			os.Exit(3)
		}
	}
	ctx := context.Background()
	s, err := Open(ctx, dbURL, WithLeaseTTL(crashTTL))
	if err != nil {
		crashExit("open: %v", err)
	}
	var st history.Store = s
	if os.Getenv(crashEnvLease) == "1" {
		l, err := s.Acquire(ctx, crashSession)
		if err != nil {
			crashExit("acquire: %v", err) // the parent released the lease
		}
		say("leased %d", l.Token())
		st = l.Store()
	}
	snap, err := st.Load(ctx, crashSession)
	if err != nil {
		crashExit("load: %v", err)
	}

	// failed ends the child after a write failed with err.
	failed := func(kind string, err error) {
		switch {
		case errors.Is(err, history.ErrFenced):
			say("fenced %s", kind)
		case mode == "server":
			say("fail %s %s", kind, strings.ReplaceAll(err.Error(), "\n", " "))
		default:
			crashExit("%s: %v", kind, err)
		}
		if mode == "server" {
			var snap *history.Snapshot
			var err error
			if !poll.Within(time.Minute, func() bool {
				snap, err = s.Load(ctx, crashSession)
				return err == nil
			}) {
				crashExit("reload: %v", err)
			}
			say("reloaded %d %d", snap.Version, int(snap.Archived)+len(snap.Active))
		}
		// Return from the test: the test binary's TestMain (pgtest.Main)
		// then checks that the store leaked no goroutines.
		if err := s.Close(); err != nil {
			crashExit("close: %v", err)
		}
	}

	kind, err := historytest.CrashWrite(ctx, st, snap, seed, say)
	failed(kind, err)
}

func crashExit(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(2)
}

// crashOp is one line a child printed: a write's try or ack (see
// historytest.ParseCrashOp), or one of the lines of this test in Kind:
// leased, fail, fenced, reloaded.
type crashOp struct {
	historytest.CrashOp
	token uint64 // leased
	// reloaded: the session's version in Version and its messages in N
}

func parseCrashLine(line string) (crashOp, error) {
	bad := fmt.Errorf("bad line %q", line)
	f := strings.Fields(line)
	if len(f) < 2 {
		return crashOp{}, bad
	}
	var (
		op  crashOp
		err error
	)
	switch f[0] {
	case "leased":
		op.Kind = f[0]
		op.token, err = strconv.ParseUint(f[1], 10, 64)
	case "fail", "fenced":
		op.Kind = f[0]
	case "reloaded":
		if len(f) != 3 {
			return op, bad
		}
		op.Kind = f[0]
		if op.Version, err = strconv.ParseUint(f[1], 10, 64); err == nil {
			op.N, err = strconv.Atoi(f[2])
		}
	default:
		op.CrashOp, err = historytest.ParseCrashOp(line)
	}
	return op, err
}

// crashRun is one crash test run: the database, the model, the counts.
type crashRun struct {
	t          *testing.T
	url        string
	rng        *rand.Rand
	seed       uint64
	model      *historytest.CrashModel
	token      uint64 // the largest fencing token seen
	violations int
	acked      map[string]int
	recovered  int
	leased     int // rounds whose child wrote through a lease
	fenced     int // children whose write was fenced
}

func newCrashRun(t *testing.T, dbURL string) *crashRun {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -pgcrash.seed=%d)", seed, seed)
	ctx := context.Background()
	s, err := Open(ctx, dbURL)
	require.NoError(t, err)
	snap, err := s.Create(ctx, history.NewSession{ID: crashSession})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return &crashRun{
		t: t, url: dbURL, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)),
		model: historytest.NewCrashModel(snap.Version),
		acked: map[string]int{},
	}
}

func (r *crashRun) violate(format string, args ...any) {
	r.t.Helper()
	r.violations++
	if r.violations <= 20 {
		r.t.Errorf(format, args...)
	}
}

func (r *crashRun) summary(kills int, what string) {
	total := 0
	for _, n := range r.acked {
		total += n
	}
	m := r.model
	r.t.Logf("%d %s, %d acknowledged writes (%d appends, %d begins, %d commits, %d finishes, %d uncompacts), %d messages and %d segments at the end, %d interrupted compactions recovered, %d rounds through a lease (%d fenced), %d violations",
		kills, what, total, r.acked["append"], r.acked["begin"], r.acked["commit"], r.acked["finish"], r.acked["uncompact"], m.Total, len(m.Segments), r.recovered, r.leased, r.fenced, r.violations)
	r.t.Logf("killed during a write (stored / not stored): %v / %v", m.InFlightStored, m.InFlightLost)
}

// TestCrashKill kills a child process that writes the crash session with
// SIGKILL at random instants, then recovers the session and checks that
// every acknowledged write is there, that nothing is lost, duplicated or
// half-written, and that no compaction stays in progress. The next child
// continues the same database. Half of the children write through a lease.
func TestCrashKill(t *testing.T) {
	if os.Getenv(crashEnvURL) != "" {
		t.Skip("in the child process")
	}
	r := newCrashRun(t, pgtest.Database(t))
	for round := range *crashKills {
		leased := r.rng.IntN(2) == 0
		name := fmt.Sprintf("pgcrash-%d-%d", r.seed, round)
		delay := time.Duration(5+r.rng.IntN(56)) * time.Millisecond
		c, err := r.runChild(round, "client", leased, name, delay, func(cmd *exec.Cmd) error {
			return cmd.Process.Kill() // SIGKILL on Unix
		}, nil)
		if err == nil && !leased {
			// The killed child's server process may still be running the
			// write it sent last; an unfenced write is not held off by the
			// parent's lease, so wait for it to end.
			err = crashWaitBackends(r.url, name)
		}
		if err == nil {
			err = r.verify(round, c)
		}
		if err != nil {
			r.violate("round %d: %v", round, err)
			break
		}
	}
	r.summary(*crashKills, "kills")
}

// TestCrashServerKill kills the PostgreSQL server with SIGKILL at random
// instants while a child process writes the crash session, starts it again,
// and checks that the child's Store works again, that every write
// acknowledged before the kill survived it, and the rest as TestCrashKill.
func TestCrashServerKill(t *testing.T) {
	if os.Getenv(crashEnvURL) != "" {
		t.Skip("in the child process")
	}
	srv := pgtest.StartServer(t)
	r := newCrashRun(t, srv.URL())
	var downtime time.Duration
	for round := range *crashServerKills {
		leased := r.rng.IntN(2) == 0
		delay := time.Duration(5+r.rng.IntN(56)) * time.Millisecond
		c, err := r.runChild(round, "server", leased, fmt.Sprintf("pgcrash-%d-%d", r.seed, round), delay, func(*exec.Cmd) error {
			srv.Kill()
			return nil
		}, func() {
			t0 := time.Now()
			srv.Start()
			downtime += time.Since(t0)
		})
		if err == nil {
			err = r.verify(round, c)
		}
		if err != nil {
			r.violate("round %d: %v", round, err)
			break
		}
	}
	r.summary(*crashServerKills, "server kills")
	if *crashServerKills > 0 {
		t.Logf("server restart (crash recovery until it accepts connections): %v on average", (downtime / time.Duration(*crashServerKills)).Round(time.Millisecond))
	}
}

// crashWaitBackends waits until the server has no session of the
// application name any more.
func crashWaitBackends(dbURL, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var qerr error
	poll.Context(ctx, func() bool {
		var n int
		if qerr = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); qerr != nil {
			return true
		}
		return n == 0
	})
	if qerr != nil {
		return fmt.Errorf("waiting for the killed child's sessions to end: %w", qerr)
	}
	return nil
}

// withAppName returns dbURL with the application_name parameter set, by
// which the server's sessions of one child are known.
func withAppName(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// crashRound is what one child printed.
type crashRound struct {
	ops      []historytest.CrashOp // the writes' tries and acks
	fenced   bool                  // the child's last write was fenced
	reloaded *crashOp              // mode server: the session as the child reloaded it
}

// runChild starts a child in mode on the run's database and, once it has
// acknowledged a write and delay has passed, calls kill (in mode "client"
// kill must kill the child; in mode "server" the server). In mode "server"
// it then calls restart when the child reports its failed write, and waits
// for the child to reload and exit by itself.
func (r *crashRun) runChild(round int, mode string, leased bool, name string, delay time.Duration, kill func(*exec.Cmd) error, restart func()) (*crashRound, error) {
	childURL, err := withAppName(r.url, name)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	lease := ""
	if leased {
		lease = "1"
	}
	cmd.Env = append(os.Environ(),
		crashEnvURL+"="+childURL,
		crashEnvSeed+"="+strconv.FormatUint(r.seed+uint64(round)+1, 10),
		crashEnvMode+"="+mode,
		crashEnvLease+"="+lease)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill() }() // if the test ends early
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), crashPrefix); ok {
				lines <- line
			}
		}
	}()
	var (
		res     crashRound
		perr    error
		timer   <-chan time.Time
		killed  bool
		down    bool // mode server: the server is killed and not restarted yet
		token   uint64
		timeout = time.After(time.Minute)
	)
	for open := true; open; {
		select {
		case line, ok := <-lines:
			if !ok {
				open = false
				break
			}
			op, err := parseCrashLine(line)
			if err != nil {
				perr = errors.Join(perr, err)
				break
			}
			switch op.Kind {
			case "leased":
				token = op.token
			case "fenced":
				res.fenced = true
			case "fail":
				if !killed {
					perr = errors.Join(perr, fmt.Errorf("a write failed before the server was killed: %s", line))
				}
			case "reloaded":
				res.reloaded = &op
			default:
				res.ops = append(res.ops, op.CrashOp)
				if op.Ack && timer == nil && !killed {
					timer = time.After(delay)
				}
			}
			if down && (op.Kind == "fail" || op.Kind == "fenced") {
				restart()
				down = false
			}
		case <-timer:
			timer, killed = nil, true
			if err := kill(cmd); err != nil {
				perr = errors.Join(perr, err)
			}
			down = mode == "server"
		case <-timeout:
			timeout = nil
			_ = cmd.Process.Kill()
			perr = errors.Join(perr, errors.New("the child did not finish its round within a minute"))
		}
	}
	if down {
		restart()
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case res.fenced && werr == nil:
		// A fenced child ends by itself.
	case mode == "client" && (!killed || !errors.As(werr, &exit) || exit.Exited()):
		perr = errors.Join(perr, fmt.Errorf("the child ended by itself (%v): %s", werr, stderr.String()))
	case mode == "server" && (!killed || werr != nil || res.reloaded == nil):
		perr = errors.Join(perr, fmt.Errorf("the child did not reload and exit (%v): %s", werr, stderr.String()))
	}
	if leased {
		r.leased++
		if token == 0 {
			perr = errors.Join(perr, fmt.Errorf("the leased child reported no lease: %s", stderr.String()))
		} else if token <= r.token {
			r.violate("round %d: the child's lease token %d is not above %d", round, token, r.token)
		}
		r.token = max(r.token, token)
	}
	if res.fenced {
		r.fenced++
	}
	for _, op := range res.ops {
		if op.Ack {
			r.acked[op.Kind]++
		}
	}
	return &res, perr
}

// verify takes the session's lease once the killed child's has expired and
// checks the session with the model (see historytest.CrashModel.Verify) and
// against the session the child reloaded. It then releases the lease.
func (r *crashRun) verify(round int, c *crashRound) error {
	violate := func(format string, args ...any) {
		r.t.Helper()
		r.violate("round %d: "+format, append([]any{round}, args...)...)
	}
	ctx := context.Background()
	s, err := Open(ctx, r.url, WithLeaseTTL(crashTTL))
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = s.Close() }()
	var l history.Lease
	poll.Within(10*crashTTL, func() bool {
		l, err = s.Acquire(ctx, crashSession)
		return !errors.Is(err, history.ErrLeased)
	})
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	defer func() { _ = l.Release(ctx) }()
	if l.Token() <= r.token {
		violate("the parent's lease token %d is not above %d", l.Token(), r.token)
	}
	r.token = max(r.token, l.Token())

	snap, ids, err := r.model.Verify(ctx, l.Store(), crashSession, c.ops, c.fenced, violate)
	r.recovered += len(ids)
	if rl := c.reloaded; snap != nil && rl != nil && (rl.Version != snap.Version || rl.N != int(snap.Archived)+len(snap.Active)) {
		violate("the child reloaded version %d with %d messages after the restart, the parent loads %d with %d",
			rl.Version, rl.N, snap.Version, int(snap.Archived)+len(snap.Active))
	}
	return err
}
