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
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// The crash tests: a child process (TestCrashChild, the test binary run
// again) writes one session through a Store, and is killed (TestCrashKill)
// or has its PostgreSQL server killed under it (TestCrashServerKill) at a
// random instant; the parent then checks the stored session against what the
// child had printed: every acknowledged write is there, the write in flight
// is there completely or not at all, and interrupted compactions are
// recovered. history/sqlite/crash_test.go is the same test on SQLite.
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

var crashT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// crashMessage is the n-th message ever appended to the crash session. Its
// content is derived from n so that the parent can check every byte; it
// holds a NUL byte and non-ASCII text, which PostgreSQL text would refuse
// or could alter.
func crashMessage(n int) history.Message {
	m := history.Message{
		ID:        fmt.Sprintf("m-%d", n),
		Role:      history.RoleUser,
		Text:      fmt.Sprintf("message %d \x00 %s", n, strings.Repeat("é", n%97)),
		CreatedAt: crashT0.Add(time.Duration(n) * time.Millisecond),
	}
	switch n % 5 {
	case 1, 3:
		m.Role = history.RoleAssistant
	case 2:
		m.Role = history.RoleAssistant
		m.ToolCalls = []history.ToolCall{{ID: fmt.Sprintf("call-%d", n), Name: "read", Arguments: []byte(fmt.Sprintf(`{"n": %d}`, n))}}
	case 4:
		m.Role, m.ToolCallID = history.RoleTool, fmt.Sprintf("call-%d", n-2)
	}
	if n%7 == 3 && m.Role == history.RoleUser {
		m.Steer = true
	}
	return m
}

func crashSameMessage(want, got *history.Message) bool {
	if !want.CreatedAt.Equal(got.CreatedAt) || len(want.ToolCalls) != len(got.ToolCalls) {
		return false
	}
	for i := range want.ToolCalls {
		w, g := want.ToolCalls[i], got.ToolCalls[i]
		if w.ID != g.ID || w.Name != g.Name || !bytes.Equal(w.Arguments, g.Arguments) {
			return false
		}
	}
	return want.ID == got.ID && want.Role == got.Role && want.Text == got.Text &&
		want.ToolCallID == got.ToolCallID && want.Steer == got.Steer
}

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
			deadline := time.Now().Add(time.Minute)
			for {
				snap, err := s.Load(ctx, crashSession)
				if err == nil {
					say("reloaded %d %d", snap.Version, int(snap.Archived)+len(snap.Active))
					break
				}
				if time.Now().After(deadline) {
					crashExit("reload: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		// Return from the test: the test binary's TestMain (pgtest.Main)
		// then checks that the store leaked no goroutines.
		if err := s.Close(); err != nil {
			crashExit("close: %v", err)
		}
	}

	v := snap.Version
	next := int(snap.Archived) + len(snap.Active)
	active := len(snap.Active)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; ; i++ {
		n := 1 + rng.IntN(3)
		batch := make([]history.Message, n)
		for j := range batch {
			batch[j] = crashMessage(next + j)
		}
		say("try append %d %d", next, n)
		if v, err = st.Append(ctx, crashSession, v, batch); err != nil {
			failed("append", err)
			return
		}
		say("ack append %d %d %d", v, next, n)
		next += n
		active += n
		if rng.IntN(3) != 0 {
			continue
		}
		cid := fmt.Sprintf("c-%d-%d", seed, i)
		say("try begin %s", cid)
		v, err = st.BeginCompaction(ctx, crashSession, v, history.CompactionRecord{
			CompactID: cid, Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now(),
		})
		if err != nil {
			failed("begin", err)
			return
		}
		say("ack begin %d %s", v, cid)
		switch r := rng.IntN(10); {
		case r < 6:
			k := max(1, active/2)
			say("try commit %s %d", cid, k)
			v, _, err = st.CommitCompaction(ctx, crashSession, v, history.Commit{
				CompactID: cid, SegmentID: "seg-" + cid, Archive: k, Summary: "summary of " + cid, At: time.Now(),
			})
			if err != nil {
				failed("commit", err)
				return
			}
			say("ack commit %d %s %d", v, cid, k)
			active -= k
		case r < 8:
			say("try finish %s", cid)
			v, err = st.FinishCompaction(ctx, crashSession, v, cid, history.StatusFailed, "model failed", time.Now())
			if err != nil {
				failed("finish", err)
				return
			}
			say("ack finish %d %s", v, cid)
		default: // left in progress
		}
	}
}

func crashExit(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	os.Exit(2)
}

// crashOp is one line a child printed.
type crashOp struct {
	kind    string // try and ack: append, begin, commit, finish; or leased, fail, fenced, reloaded
	ack     bool   // a write's ack, else its try
	version uint64 // ack, reloaded
	first   int    // append
	n       int    // append: messages; commit: archived; reloaded: messages
	cid     string // begin, commit, finish
	token   uint64 // leased
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
		op.kind = f[0]
		op.token, err = strconv.ParseUint(f[1], 10, 64)
		return op, err
	case "fail", "fenced":
		op.kind = f[0]
		return op, nil
	case "reloaded":
		if len(f) != 3 {
			return op, bad
		}
		op.kind = f[0]
		if op.version, err = strconv.ParseUint(f[1], 10, 64); err == nil {
			op.n, err = strconv.Atoi(f[2])
		}
		return op, err
	case "try", "ack":
	default:
		return op, bad
	}
	op.ack, op.kind = f[0] == "ack", f[1]
	args := f[2:]
	if op.ack {
		if len(args) == 0 {
			return op, bad
		}
		v, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return op, bad
		}
		op.version, args = v, args[1:]
	}
	switch {
	case op.kind == "append" && len(args) == 2:
		op.first, err = strconv.Atoi(args[0])
		if err == nil {
			op.n, err = strconv.Atoi(args[1])
		}
	case op.kind == "commit" && len(args) == 2:
		op.cid = args[0]
		op.n, err = strconv.Atoi(args[1])
	case (op.kind == "begin" || op.kind == "finish") && len(args) == 1:
		op.cid = args[0]
	default:
		err = bad
	}
	return op, err
}

// crashModel is what the parent knows of the stored session after the last
// verified round.
type crashModel struct {
	total    int      // messages ever appended
	segments []string // compaction IDs of the segments, in order
	sizes    []int    // their message counts
	version  uint64
	token    uint64 // the largest fencing token seen
	// finished compactions whose outcome is known from acknowledged writes
	committed, failed map[string]bool
	// the unacknowledged last writes, by kind, found stored or not stored
	inFlightStored, inFlightLost map[string]int
}

// crashRun is one crash test run: the database, the model, the counts.
type crashRun struct {
	t          *testing.T
	url        string
	rng        *rand.Rand
	seed       uint64
	model      *crashModel
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
		model: &crashModel{
			version:   snap.Version,
			committed: map[string]bool{}, failed: map[string]bool{},
			inFlightStored: map[string]int{}, inFlightLost: map[string]int{},
		},
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
	r.t.Logf("%d %s, %d acknowledged writes (%d appends, %d begins, %d commits, %d finishes), %d messages and %d segments at the end, %d interrupted compactions recovered, %d rounds through a lease (%d fenced), %d violations",
		kills, what, total, r.acked["append"], r.acked["begin"], r.acked["commit"], r.acked["finish"], m.total, len(m.segments), r.recovered, r.leased, r.fenced, r.violations)
	r.t.Logf("killed during a write (stored / not stored): %v / %v", m.inFlightStored, m.inFlightLost)
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
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); err != nil {
			return fmt.Errorf("waiting for the killed child's sessions to end: %w", err)
		}
		if n == 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
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
	ops      []crashOp // the writes' tries and acks
	fenced   bool      // the child's last write was fenced
	reloaded *crashOp  // mode server: the session as the child reloaded it
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
			switch op.kind {
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
				res.ops = append(res.ops, op)
				if op.ack && timer == nil && !killed {
					timer = time.After(delay)
				}
			}
			if down && (op.kind == "fail" || op.kind == "fenced") {
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
		} else if token <= r.model.token {
			r.violate("round %d: the child's lease token %d is not above %d", round, token, r.model.token)
		}
		r.model.token = max(r.model.token, token)
	}
	if res.fenced {
		r.fenced++
	}
	for _, op := range res.ops {
		if op.ack {
			r.acked[op.kind]++
		}
	}
	return &res, perr
}

// verify takes the session's lease once the killed child's has expired,
// recovers the session and checks it against the model and what the child
// printed, reporting each violation. It then brings the model up to the
// stored state and releases the lease.
func (r *crashRun) verify(round int, c *crashRound) error {
	violate := func(format string, args ...any) {
		r.t.Helper()
		r.violate("round %d: "+format, append([]any{round}, args...)...)
	}
	model := r.model
	ctx := context.Background()
	s, err := Open(ctx, r.url, WithLeaseTTL(crashTTL))
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = s.Close() }()
	var l history.Lease
	for deadline := time.Now().Add(10 * crashTTL); ; time.Sleep(20 * time.Millisecond) {
		if l, err = s.Acquire(ctx, crashSession); err == nil {
			break
		}
		if !errors.Is(err, history.ErrLeased) || time.Now().After(deadline) {
			return fmt.Errorf("acquire: %w", err)
		}
	}
	defer func() { _ = l.Release(ctx) }()
	if l.Token() <= model.token {
		violate("the parent's lease token %d is not above %d", l.Token(), model.token)
	}
	model.token = max(model.token, l.Token())
	st := l.Store()

	// What the acknowledgements promise, and the one write that may or may
	// not have happened.
	ackedTotal, lastVersion := model.total, model.version
	var (
		commits []crashOp
		pending *crashOp
		begun   = map[string]bool{}
	)
	ops := c.ops
	for i, op := range ops {
		if !op.ack {
			if i != len(ops)-1 {
				if next := ops[i+1]; !next.ack || next.kind != op.kind {
					violate("a %s was not acknowledged before the next write", op.kind)
				}
			}
			pending = &ops[i]
			continue
		}
		pending = nil
		if op.version <= lastVersion {
			violate("acknowledged version %d does not increase (after %d)", op.version, lastVersion)
		}
		lastVersion = op.version
		switch op.kind {
		case "append":
			if op.first != ackedTotal {
				violate("append acknowledged at message %d, expected %d", op.first, ackedTotal)
			}
			ackedTotal = op.first + op.n
		case "begin":
			begun[op.cid] = true
		case "commit":
			commits = append(commits, op)
			model.committed[op.cid] = true
		case "finish":
			model.failed[op.cid] = true
		}
	}

	snap, err := st.Load(ctx, crashSession)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if snap.Version < lastVersion {
		violate("stored version %d is older than the last acknowledged %d", snap.Version, lastVersion)
	}
	if rl := c.reloaded; rl != nil && (rl.version != snap.Version || rl.n != int(snap.Archived)+len(snap.Active)) {
		violate("the child reloaded version %d with %d messages after the restart, the parent loads %d with %d",
			rl.version, rl.n, snap.Version, int(snap.Archived)+len(snap.Active))
	}
	rv, ids, err := st.Recover(ctx, crashSession, snap.Version, time.Now())
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	r.recovered += len(ids)
	if fmt.Sprint(ids) != fmt.Sprint(snap.Interrupted) {
		violate("Recover recorded %v, Load reported %v interrupted", ids, snap.Interrupted)
	}
	if (len(ids) > 0) != (rv > snap.Version) {
		violate("Recover of %d compactions went from version %d to %d", len(ids), snap.Version, rv)
	}
	after, err := st.Load(ctx, crashSession)
	if err != nil {
		return fmt.Errorf("load after recover: %w", err)
	}
	segs, err := st.Segments(ctx, crashSession)
	if err != nil {
		return fmt.Errorf("segments: %w", err)
	}
	tl, err := st.Timeline(ctx, crashSession)
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	if after.Version != rv || len(after.Interrupted) > 0 {
		violate("after Recover: version %d (want %d), interrupted %v", after.Version, rv, after.Interrupted)
	}

	// Segments + Active is every message ever appended, in order, each
	// exactly as written.
	var all []history.Message
	for _, g := range segs {
		all = append(all, g.Messages...)
	}
	archived := len(all)
	all = append(all, after.Active...)
	bad := 0
	for i := range all {
		if want := crashMessage(i); !crashSameMessage(&want, &all[i]) {
			if bad++; bad <= 3 {
				violate("message %d is %s %q, want %s", i, all[i].ID, all[i].Text, want.ID)
			}
		}
	}
	switch {
	case len(all) == ackedTotal:
	case pending != nil && pending.kind == "append" && len(all) == ackedTotal+pending.n:
	default:
		violate("%d messages stored, %d acknowledged (pending %+v)", len(all), ackedTotal, pending)
	}
	if int64(archived) != after.Archived {
		violate("Snapshot.Archived %d, segments hold %d", after.Archived, archived)
	}

	// The segments are the earlier ones, the acknowledged commits and at most
	// the pending one, each with the summary and size it was committed with.
	want := append([]string(nil), model.segments...)
	wantSizes := append([]int(nil), model.sizes...)
	for _, c := range commits {
		want, wantSizes = append(want, c.cid), append(wantSizes, c.n)
	}
	if pending != nil && pending.kind == "commit" && len(segs) == len(want)+1 {
		want, wantSizes = append(want, pending.cid), append(wantSizes, pending.n)
		model.committed[pending.cid] = true
	}
	if len(segs) != len(want) {
		violate("%d segments stored, want %d", len(segs), len(want))
	}
	for i := range min(len(segs), len(want)) {
		g := segs[i]
		if g.CompactID != want[i] || g.ID != "seg-"+want[i] || len(g.Messages) != wantSizes[i] || g.Summary != "summary of "+want[i] {
			violate("segment %d is %s/%s with %d messages and %q, want %s with %d", i, g.ID, g.CompactID, len(g.Messages), g.Summary, want[i], wantSizes[i])
		}
	}
	wantSummary := ""
	if len(segs) > 0 {
		wantSummary = segs[len(segs)-1].Summary
	}
	if after.Summary != wantSummary {
		violate("retained summary %q, last segment's %q", after.Summary, wantSummary)
	}

	// The timeline: positions increase, every message once, no compaction
	// in progress, acknowledged outcomes recorded.
	mi := 0
	records := map[string]history.CompactionRecord{}
	for i, e := range tl {
		if i > 0 && e.Position <= tl[i-1].Position {
			violate("timeline position %d after %d", e.Position, tl[i-1].Position)
		}
		switch {
		case e.Message != nil:
			if mi >= len(all) || e.Message.ID != all[mi].ID || e.Archived != (mi < archived) {
				violate("timeline message %s (archived %v) at index %d", e.Message.ID, e.Archived, mi)
			}
			mi++
		case e.Compaction != nil:
			c := *e.Compaction
			records[c.CompactID] = c
			if !c.Status.Terminal() {
				violate("compaction %s is %s after Recover", c.CompactID, c.Status)
			}
		}
	}
	if mi != len(all) {
		violate("timeline has %d messages, segments and Active %d", mi, len(all))
	}
	for cid := range begun {
		if _, ok := records[cid]; !ok {
			violate("acknowledged compaction %s is not in the timeline", cid)
		}
	}
	for cid, c := range records {
		switch {
		case model.committed[cid] && c.Status != history.StatusCompleted:
			violate("committed compaction %s is %s", cid, c.Status)
		case model.failed[cid] && (c.Status != history.StatusFailed || c.Error != "model failed"):
			violate("finished compaction %s is %s %q", cid, c.Status, c.Error)
		case !model.committed[cid] && c.Status == history.StatusCompleted:
			violate("compaction %s completed without a commit", cid)
		}
	}

	if pending != nil {
		stored := false
		switch pending.kind {
		case "append":
			stored = len(all) > ackedTotal
		case "begin":
			_, stored = records[pending.cid]
		case "commit":
			stored = records[pending.cid].Status == history.StatusCompleted
		case "finish":
			stored = records[pending.cid].Error == "model failed"
		}
		switch {
		case stored && c.fenced:
			violate("the fenced %s was stored", pending.kind)
		case stored:
			model.inFlightStored[pending.kind]++
		default:
			model.inFlightLost[pending.kind]++
		}
	} else if c.fenced {
		violate("the child reported a fenced write but had none in flight")
	}

	model.total = len(all)
	model.segments, model.sizes = model.segments[:0], model.sizes[:0]
	for _, g := range segs {
		model.segments = append(model.segments, g.CompactID)
		model.sizes = append(model.sizes, len(g.Messages))
	}
	model.version = rv
	return nil
}
