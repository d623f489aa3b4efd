package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
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

var crashT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// crashMessage is the n-th message ever appended to the crash session. Its
// content is derived from n so that the parent can check every byte.
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
	return m
}

func sameMessage(want, got *history.Message) bool {
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
	v := snap.Version
	next := int(snap.Archived) + len(snap.Active)
	active := len(snap.Active)
	rng := rand.New(rand.NewPCG(seed, 1))
	say := func(format string, args ...any) {
		if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
			os.Exit(3)
		}
	}
	for i := 0; ; i++ {
		n := 1 + rng.IntN(3)
		batch := make([]history.Message, n)
		for j := range batch {
			batch[j] = crashMessage(next + j)
		}
		say("try append %d %d", next, n)
		if v, err = s.Append(ctx, crashSession, v, batch); err != nil {
			crashExit("append: %v", err)
		}
		say("ack append %d %d %d", v, next, n)
		next += n
		active += n
		if rng.IntN(3) != 0 {
			continue
		}
		cid := fmt.Sprintf("c-%d-%d", seed, i)
		say("try begin %s", cid)
		v, err = s.BeginCompaction(ctx, crashSession, v, history.CompactionRecord{
			CompactID: cid, Trigger: "auto", Status: history.StatusInProgress, StartedAt: time.Now(),
		})
		if err != nil {
			crashExit("begin: %v", err)
		}
		say("ack begin %d %s", v, cid)
		switch r := rng.IntN(10); {
		case r < 6:
			k := max(1, active/2)
			say("try commit %s %d", cid, k)
			v, _, err = s.CommitCompaction(ctx, crashSession, v, history.Commit{
				CompactID: cid, SegmentID: "seg-" + cid, Archive: k, Summary: "summary of " + cid, At: time.Now(),
			})
			if err != nil {
				crashExit("commit: %v", err)
			}
			say("ack commit %d %s %d", v, cid, k)
			active -= k
		case r < 8:
			say("try finish %s", cid)
			v, err = s.FinishCompaction(ctx, crashSession, v, cid, history.StatusFailed, "model failed", time.Now())
			if err != nil {
				crashExit("finish: %v", err)
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
	ack     bool // else try
	kind    string
	version uint64
	first   int    // append
	n       int    // append: messages; commit: archived
	cid     string // begin, commit, finish
}

func parseCrashLine(line string) (crashOp, error) {
	f := strings.Fields(line)
	if len(f) < 2 || (f[0] != "try" && f[0] != "ack") {
		return crashOp{}, fmt.Errorf("bad line %q", line)
	}
	op := crashOp{ack: f[0] == "ack", kind: f[1]}
	args := f[2:]
	if op.ack {
		if len(args) == 0 {
			return op, fmt.Errorf("bad line %q", line)
		}
		v, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return op, fmt.Errorf("bad line %q", line)
		}
		op.version, args = v, args[1:]
	}
	var err error
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
		err = fmt.Errorf("bad line %q", line)
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
	// finished compactions whose outcome is known from acknowledged writes
	committed, failed map[string]bool
	// the unacknowledged last writes, by kind, found stored or not stored
	inFlightStored, inFlightLost map[string]int
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
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(path)
	require.NoError(t, err)
	snap, err := s.Create(context.Background(), history.NewSession{ID: crashSession})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	model := &crashModel{
		version:   snap.Version,
		committed: map[string]bool{}, failed: map[string]bool{},
		inFlightStored: map[string]int{}, inFlightLost: map[string]int{},
	}
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
			if op.ack {
				acked[op.kind]++
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
	t.Logf("%d kills, %d acknowledged writes (%d appends, %d begins, %d commits, %d finishes), %d messages and %d segments at the end, %d interrupted compactions recovered, %d violations",
		*crashKills, total, acked["append"], acked["begin"], acked["commit"], acked["finish"], model.total, len(model.segments), recovered, violations)
	t.Logf("killed during a write (stored / not stored): %v / %v", model.inFlightStored, model.inFlightLost)
}

// runCrashChild starts a child on path, lets it write for delay after its
// first acknowledgement, kills it with SIGKILL and returns what it printed.
func runCrashChild(path string, seed uint64, delay time.Duration) ([]crashOp, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDB+"="+path, crashEnvSeed+"="+strconv.FormatUint(seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
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
		ops     []crashOp
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
			op, err := parseCrashLine(line)
			if err != nil {
				perr = errors.Join(perr, err)
				break
			}
			ops = append(ops, op)
			if op.ack && kill == nil && !killed {
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

// verifyCrash reopens path after a kill, recovers the crash session and
// checks it against model and the child's ops, reporting each violation. It
// then brings model up to the stored state and returns how many interrupted
// compactions Recover recorded.
func verifyCrash(path string, model *crashModel, ops []crashOp, violate func(string, ...any)) (int, error) {
	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		return 0, fmt.Errorf("reopen: %w", err)
	}
	defer func() { _ = s.Close() }()

	// What the acknowledgements promise, and the one write that may or may
	// not have happened.
	ackedTotal, lastVersion := model.total, model.version
	var (
		commits []crashOp
		pending *crashOp
		begun   = map[string]bool{}
	)
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

	snap, err := s.Load(ctx, crashSession)
	if err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	if snap.Version < lastVersion {
		violate("stored version %d is older than the last acknowledged %d", snap.Version, lastVersion)
	}
	rv, ids, err := s.Recover(ctx, crashSession, snap.Version, time.Now())
	if err != nil {
		return 0, fmt.Errorf("recover: %w", err)
	}
	if fmt.Sprint(ids) != fmt.Sprint(snap.Interrupted) {
		violate("Recover recorded %v, Load reported %v interrupted", ids, snap.Interrupted)
	}
	if (len(ids) > 0) != (rv > snap.Version) {
		violate("Recover of %d compactions went from version %d to %d", len(ids), snap.Version, rv)
	}
	after, err := s.Load(ctx, crashSession)
	if err != nil {
		return 0, fmt.Errorf("load after recover: %w", err)
	}
	segs, err := s.Segments(ctx, crashSession)
	if err != nil {
		return 0, fmt.Errorf("segments: %w", err)
	}
	tl, err := s.Timeline(ctx, crashSession)
	if err != nil {
		return 0, fmt.Errorf("timeline: %w", err)
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
		if want := crashMessage(i); !sameMessage(&want, &all[i]) {
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
		if stored {
			model.inFlightStored[pending.kind]++
		} else {
			model.inFlightLost[pending.kind]++
		}
	}

	model.total = len(all)
	model.segments, model.sizes = model.segments[:0], model.sizes[:0]
	for _, g := range segs {
		model.segments = append(model.segments, g.CompactID)
		model.sizes = append(model.sizes, len(g.Messages))
	}
	model.version = rv
	return len(ids), nil
}
