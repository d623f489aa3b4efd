package crashtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/session"
)

const (
	// scaleTTL is the agents' --lease-ttl: they renew every third of it.
	scaleTTL = time.Second
	// scaleSummaryDelay is the --summary-delay of the owner whose compaction
	// is killed in flight: long enough to kill it inside the summary call.
	scaleSummaryDelay = time.Second
	// clockSlack absorbs the difference between when the database's now()
	// and this process's time.Now() are read (one machine, one clock).
	clockSlack = 100 * time.Millisecond
	// renewSlack bounds how long after A stopped a renewal A sent before
	// may still be carried out by the database.
	renewSlack = scaleTTL / 4
	// takeoverWithin bounds how long after the lease's expiry a load that
	// is retried (paced by poll.Tries) takes the session over.
	takeoverWithin = 5 * time.Second
)

// How the owner A stops serving the session.
type ownerStop int

const (
	killIdle         ownerStop = iota // SIGKILL between two operations
	killInCompaction                  // SIGKILL inside a manual compaction's summary call, a prompt queued behind it
	pauseOwner                        // SIGSTOP until B took over, then SIGCONT: A must find its lease lost
)

// TestScaleOut runs two examples/acp-agent processes on one PostgreSQL
// database. Client A creates a session on agent A and works in it; client B
// asks agent B for the same session and is refused at once (the JSON-RPC
// error names the session, A's process and the lease's expiry) while B goes
// on serving its own sessions. Then A stops serving: killed while idle,
// killed inside a compaction, or frozen. B is still refused until A's lease
// expires, and then loads the session: the replay is exactly what A
// acknowledged, in order, nothing lost or twice (the completed compaction
// with its summary; a compaction killed in flight as failed, interrupted),
// and so is the database. B goes on with prompts and a compaction; a third
// agent C is refused while B serves the session, and after B exits cleanly
// loads it at once and replays everything. A frozen A, resumed after B took
// over, finds its lease lost: its session closes, its prompts fail and
// never reach the database, and it is refused the session.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts agent processes and waits for leases to expire")
	}
	bin := buildAgent(t)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host" // as history/postgres names holders
	}
	for _, v := range []struct {
		name string
		stop ownerStop
	}{
		{"KillIdle", killIdle},
		{"KillInCompaction", killInCompaction},
		{"PauseOwner", pauseOwner},
	} {
		t.Run(v.name, func(t *testing.T) {
			r := &scaleRun{t: t, bin: bin, host: host, db: pgtest.Database(t), cwd: t.TempDir()}
			r.run(v.stop)
		})
	}
}

// scaleRun is one run of TestScaleOut.
type scaleRun struct {
	t    *testing.T
	bin  string
	host string
	db   string // the database's URL
	cwd  string
	id   string // the shared session

	// expected is the session's timeline as acknowledged to the clients:
	// every acknowledged turn's messages and every compaction's outcome, in
	// acknowledgement order.
	expected []tlItem
	procs    []*agentProc
	texts    int // prompt texts numbered so far
}

// start starts an agent on the run's database; it is killed when the test
// ends if it still runs.
func (r *scaleRun) start(name string, extra ...string) *agentProc {
	r.t.Helper()
	args := append([]string{"--store", r.db, "--lease-ttl", scaleTTL.String()}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	p, err := startAgent(ctx, r.bin, args)
	if err != nil {
		r.t.Fatalf("agent %s: %v", name, err)
	}
	r.t.Cleanup(p.reap)
	r.procs = append(r.procs, p)
	r.t.Logf("agent %s: pid %d", name, p.cmd.Process.Pid)
	return p
}

// holder is the lease holder name of an agent: "<hostname>:<pid>".
func (r *scaleRun) holder(p *agentProc) string {
	return r.host + ":" + strconv.Itoa(p.cmd.Process.Pid)
}

// text returns a new unique prompt text; with echo the turn calls the echo
// tool.
func (r *scaleRun) text(tag string, echo bool) string {
	r.texts++
	if echo {
		return fmt.Sprintf("%s-%d please call echo with text: %s-%d", tag, r.texts, tag, r.texts)
	}
	return fmt.Sprintf("%s-%d We are building falcon, a file copier in Go; keep main.go small.", tag, r.texts)
}

// turn sends a prompt and waits for its turn, which must succeed.
func (r *scaleRun) turn(p *agentProc, rs *acp.RemoteSession, text string) session.TurnResult {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
	if err != nil {
		r.t.Fatalf("prompt %q: %v (stderr: %s)", text, err, p.stderr.tail(2000))
	}
	res, err := h.Wait(ctx)
	if err != nil || res.Err != nil {
		r.t.Fatalf("prompt %q: %v %v (stderr: %s)", text, err, res.Err, p.stderr.tail(2000))
	}
	if len(res.Messages) < 2 || res.Messages[0].Role != history.RoleUser || res.Messages[0].Text != text {
		r.t.Fatalf("prompt %q: the turn's messages are %+v", text, res.Messages)
	}
	return res
}

// prompt runs an acknowledged turn in the shared session and records it.
func (r *scaleRun) prompt(p *agentProc, rs *acp.RemoteSession, text string) {
	r.t.Helper()
	for _, m := range r.turn(p, rs, text).Messages {
		r.expected = appendMessage(r.expected, m)
	}
}

// compact runs a manual compaction in the shared session, which must
// compact, and records it.
func (r *scaleRun) compact(p *agentProc, rs *acp.RemoteSession) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, err := rs.Compact(ctx, session.CompactRequest{})
	if err != nil {
		r.t.Fatalf("compact: %v (stderr: %s)", err, p.stderr.tail(2000))
	}
	res, err := h.Wait(ctx)
	if err != nil {
		r.t.Fatalf("compact %s: %v", h.ID(), err)
	}
	if !res.Compacted || res.CompactID != h.ID() || res.Segment == nil || res.Segment.Summary == "" {
		r.t.Fatalf("compact %s: %+v, want compacted with a summary (stderr: %s)", h.ID(), res, p.stderr.tail(2000))
	}
	r.expected = append(r.expected, tlItem{Kind: "compaction", ID: res.CompactID, Status: string(history.StatusCompleted), Text: res.Segment.Summary})
}

// load asks agent p for session id and reports how long the answer took.
func (r *scaleRun) load(p *agentProc, id string) (*acp.RemoteSession, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	t0 := time.Now()
	rs, err := p.client.LoadSession(ctx, id, r.cwd)
	return rs, time.Since(t0), err
}

// refused checks that agent p refuses session id at once because holder
// serves it, and returns the refusal.
func (r *scaleRun) refused(p *agentProc, id, holder string) *leaseRefusal {
	r.t.Helper()
	t0 := time.Now()
	rs, took, err := r.load(p, id)
	if err == nil {
		r.t.Fatalf("session/load of %s succeeded (%d items replayed) while %s serves it", id, len(rs.Timeline().Items), holder)
	}
	ref, why := asLeaseRefusal(err, id)
	if why != nil {
		r.t.Fatalf("session/load of %s served by %s: %v", id, holder, why)
	}
	if ref.Holder != holder {
		r.t.Errorf("session/load of %s: refused for holder %q, want %q", id, ref.Holder, holder)
	}
	if took > scaleTTL/2 {
		r.t.Errorf("session/load of %s took %v to be refused; want at once (TTL %v)", id, took, scaleTTL)
	}
	if ref.Expires.Before(t0.Add(-clockSlack)) || ref.Expires.After(time.Now().Add(scaleTTL+clockSlack)) {
		r.t.Errorf("session/load of %s between %s and %s: the live lease expires at %s, not within the TTL",
			id, t0.Format(time.RFC3339Nano), time.Now().Format(time.RFC3339Nano), ref.Expires.Format(time.RFC3339Nano))
	}
	if closed(p.client.Done()) || p.dead() {
		r.t.Fatalf("agent %d ended after refusing a session/load (stderr: %s)", p.cmd.Process.Pid, p.stderr.tail(2000))
	}
	return ref
}

// usable checks that agent p still serves new sessions.
func (r *scaleRun) usable(p *agentProc, tag string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rs, err := p.client.NewSession(ctx, r.cwd)
	if err != nil {
		r.t.Fatalf("session/new on agent %d: %v (stderr: %s)", p.cmd.Process.Pid, err, p.stderr.tail(2000))
	}
	r.turn(p, rs, r.text(tag, true))
}

// checkStored compares the session's rows in the database with want.
func (r *scaleRun) checkStored(when string, want []tlItem) []history.Entry {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	entries, err := readStored(ctx, r.db, r.id)
	if err != nil {
		r.t.Fatalf("%s: read the database: %v", when, err)
	}
	got := storedItems(entries)
	if d := diffItems(want, got); d != "" {
		r.t.Errorf("%s: the database holds another timeline than was acknowledged: %s", when, d)
	}
	if dups := duplicates(got); len(dups) > 0 {
		r.t.Errorf("%s: stored twice: %v", when, dups)
	}
	return entries
}

// checkReplay compares the timeline replayed by a session/load with want.
func (r *scaleRun) checkReplay(who string, rs *acp.RemoteSession, want []tlItem) {
	r.t.Helper()
	got := replayedItems(rs.Timeline())
	if d := diffItems(want, got); d != "" {
		r.t.Errorf("the replay to %s differs from what was acknowledged: %s", who, d)
	}
	if dups := duplicates(got); len(dups) > 0 {
		r.t.Errorf("the replay to %s repeats: %v", who, dups)
	}
	for _, it := range got {
		if it.Kind == "compaction" && !history.CompactionStatus(it.Status).Terminal() {
			r.t.Errorf("the replay to %s shows compaction %s %s", who, it.ID, it.Status)
		}
	}
}

func (r *scaleRun) run(stop ownerStop) {
	t := r.t
	started := time.Now()
	var extraA []string
	if stop == killInCompaction {
		extraA = []string{"--summary-delay", scaleSummaryDelay.String()}
	}
	a := r.start("A", extraA...)
	b := r.start("B")
	holderA, holderB := r.holder(a), r.holder(b)

	// A creates the session and works in it: turns (two with a tool call)
	// and a compaction between them.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	rsA, err := a.client.NewSession(ctx, r.cwd)
	cancel()
	if err != nil {
		t.Fatalf("session/new on A: %v (stderr: %s)", err, a.stderr.tail(2000))
	}
	r.id = rsA.ID()
	r.prompt(a, rsA, r.text("a", false))
	r.prompt(a, rsA, r.text("a", true))
	r.compact(a, rsA)
	r.prompt(a, rsA, r.text("a", false))
	r.prompt(a, rsA, r.text("a", true))

	// B is refused the session at once, and keeps serving its own; A is
	// refused B's.
	r.usable(b, "b")
	r.refused(b, r.id, holderA)
	ctx, cancel = context.WithTimeout(context.Background(), opTimeout)
	rsBOwn, err := b.client.NewSession(ctx, r.cwd)
	cancel()
	if err != nil {
		t.Fatalf("session/new on B: %v", err)
	}
	r.turn(b, rsBOwn, r.text("b", false))
	r.refused(a, rsBOwn.ID(), holderB)
	r.turn(b, rsBOwn, r.text("b", true))
	r.prompt(a, rsA, r.text("a", false)) // A still serves its session
	r.checkStored("while A serves the session", r.expected)
	want := slices.Clone(r.expected)

	// The lease's expiry as A last renewed it: nobody may take the session
	// over before it.
	before := r.refused(b, r.id, holderA).Expires

	// A stops serving the session.
	inFlight := ""
	switch stop {
	case killIdle:
		a.kill()
	case killInCompaction:
		inFlight = r.killInCompaction(a, rsA)
		want = append(want, tlItem{Kind: "compaction", ID: inFlight, Status: string(history.StatusInProgress)})
	case pauseOwner:
		if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP A: %v", err)
		}
	}
	stoppedAt := time.Now() // A renews no more
	r.checkStored("after A stopped", want)
	if inFlight != "" {
		// B's open records the interrupted compaction as failed (§5.5).
		want[len(want)-1] = tlItem{Kind: "compaction", ID: inFlight, Status: string(history.StatusFailed), Err: history.InterruptedError}
	}
	r.expected = want

	// B is refused until A's lease expires, then takes the session over and
	// replays it intact.
	rsB := r.takeOver(b, holderA, before, stoppedAt)
	r.checkReplay("B", rsB, r.expected)
	r.checkStored("after B took over", r.expected)

	if stop == pauseOwner {
		r.zombie(a, rsA, b, rsB)
	}

	// B goes on: turns and a compaction; C is refused meanwhile.
	r.prompt(b, rsB, r.text("s", false))
	r.compact(b, rsB)
	r.prompt(b, rsB, r.text("s", true))
	c := r.start("C")
	r.refused(c, r.id, holderB)
	r.checkStored("before B exits", r.expected)

	// B exits cleanly, which releases the lease: C loads the session at
	// once and replays everything.
	if err := b.stop(); err != nil {
		t.Errorf("agent B: %v", err)
	}
	rsC, took, err := r.load(c, r.id)
	if err != nil {
		t.Fatalf("session/load on C after B exited: %v (B's stderr: %s)", err, b.stderr.tail(2000))
	}
	r.checkReplay("C", rsC, r.expected)
	r.prompt(c, rsC, r.text("c", false))
	r.checkStored("at the end", r.expected)

	for name, p := range map[string]*agentProc{"A": a, "C": c} {
		if p.killed.Load() {
			p.reap()
		} else if err := p.stop(); err != nil {
			t.Errorf("agent %s: %v", name, err)
		}
	}
	for _, p := range r.procs {
		if !p.dead() {
			t.Errorf("agent %d still runs", p.cmd.Process.Pid)
		}
	}
	t.Logf("%d timeline items acknowledged, C's load %v; %v in all", len(r.expected), took.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
}

// killInCompaction starts a manual compaction on A, waits until it is in
// its summary call (A's client saw it start and the database holds it in
// progress), queues a prompt behind it and kills A. Neither is
// acknowledged. It returns the compaction's ID.
func (r *scaleRun) killInCompaction(a *agentProc, rsA *acp.RemoteSession) string {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	// Watched through Subscribe: RemoteSession.Timeline's copy shares its
	// entities and indexes with the live timeline (see the report).
	sub, err := rsA.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		t.Fatalf("subscribe on A: %v", err)
	}
	defer sub.Close()
	hc, err := rsA.Compact(ctx, session.CompactRequest{})
	if err != nil {
		t.Fatalf("compact on A: %v", err)
	}
	cid := hc.ID()
	for started := false; !started; {
		ev, ok := <-sub.Events()
		if !ok {
			t.Fatalf("A's events ended before compaction %s started: %v", cid, sub.Err())
		}
		if ce, ok := ev.Payload.(*session.CompactionEvent); ok && ce.CompactID == cid {
			switch ce.Phase {
			case session.PhaseStarted:
				started = true
			case session.PhaseFinished:
				t.Fatalf("compaction %s finished before A is killed: %+v (is --summary-delay %v too short?)", cid, ce.Result, scaleSummaryDelay)
			}
		}
	}
	// The session publishes the start before it writes the record.
	for range poll.Tries(ctx) {
		entries, err := readStored(ctx, r.db, r.id)
		if err != nil {
			t.Fatalf("read the database: %v", err)
		}
		st := compactionStatus(entries, cid)
		if st == history.StatusInProgress {
			break
		}
		if st != "" || ctx.Err() != nil {
			t.Fatalf("compaction %s is %q in the database before A is killed (is --summary-delay %v too short?)", cid, st, scaleSummaryDelay)
		}
	}
	hp, err := rsA.Prompt(ctx, session.PromptRequest{Text: r.text("q", false)})
	if err != nil {
		t.Fatalf("prompt on A: %v", err)
	}
	a.kill()

	// Both Handles end with the connection.
	res, err := hc.Wait(ctx)
	if err != nil {
		t.Fatalf("compaction %s: no result after A was killed: %v", cid, err)
	}
	if res.Success || res.Compacted || !strings.Contains(res.Error, acp.ErrConnection.Error()) {
		t.Errorf("compaction %s killed in flight: %+v, want compact_failed with the connection lost", cid, res)
	}
	turn, err := hp.Wait(ctx)
	if err != nil {
		t.Fatalf("queued prompt: no result after A was killed: %v", err)
	}
	if !errors.Is(turn.Err, acp.ErrConnection) {
		t.Errorf("prompt queued behind the compaction killed in flight: %v, want the connection lost", turn.Err)
	}
	return cid
}

// takeOver loads the session on B until B takes it over from A, which
// stopped serving it at stoppedAt: every load is refused (naming A, with an
// expiry A cannot have extended after it stopped) until the lease has
// expired, and the first one after that succeeds. before is the lease's
// expiry that a load refused just before A stopped reported.
func (r *scaleRun) takeOver(b *agentProc, holderA string, before, stoppedAt time.Time) *acp.RemoteSession {
	t := r.t
	t.Helper()
	expires := before // the latest expiry reported
	refusals := 0
	for range poll.Tries(t.Context()) {
		sent := time.Now()
		rs, took, err := r.load(b, r.id)
		if err == nil {
			done := time.Now()
			if done.Before(expires.Add(-clockSlack)) {
				t.Errorf("B took the session over at %s, before A's lease expired (%s)", done.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano))
			}
			if late := sent.Sub(expires); late > takeoverWithin {
				t.Errorf("B was refused the session %v after A's lease expired", late)
			}
			t.Logf("A stopped; its lease expired %v later; B refused %d times, then took the session over %v after A stopped (load and replay %v)",
				expires.Sub(stoppedAt).Round(time.Millisecond), refusals, done.Sub(stoppedAt).Round(time.Millisecond), took.Round(time.Millisecond))
			if refusals == 0 && sent.Before(expires) {
				t.Errorf("B's first load after A stopped was sent before the lease expired and was not refused")
			}
			return rs
		}
		ref, why := asLeaseRefusal(err, r.id)
		if why != nil {
			t.Fatalf("session/load on B after A stopped: %v (stderr: %s)", why, b.stderr.tail(2000))
		}
		refusals++
		if ref.Holder != holderA {
			t.Errorf("session/load on B after A stopped: refused for %q, want %q", ref.Holder, holderA)
		}
		if ref.Expires.After(stoppedAt.Add(scaleTTL + renewSlack)) {
			t.Errorf("A's lease expires at %s, more than the TTL after A stopped (%s)", ref.Expires.Format(time.RFC3339Nano), stoppedAt.Format(time.RFC3339Nano))
		}
		if ref.Expires.Before(sent.Add(-clockSlack)) {
			t.Errorf("a load sent at %s was refused for a lease that expired at %s", sent.Format(time.RFC3339Nano), ref.Expires.Format(time.RFC3339Nano))
		}
		if took > scaleTTL/2 {
			t.Errorf("session/load on B took %v to be refused; want at once", took)
		}
		if ref.Expires.After(expires) {
			expires = ref.Expires
		}
		if time.Since(stoppedAt) > scaleTTL+takeoverWithin {
			t.Fatalf("B is still refused the session %v after A stopped: %s", time.Since(stoppedAt).Round(time.Millisecond), ref.Message)
		}
	}
	t.Fatalf("the test ended while B was refused the session")
	return nil
}

// zombie resumes the frozen A after B took its session over (and wrote to
// it): A's session must find its lease lost and close, its prompts must
// fail without being stored, and A's server must forget the session, refuse
// it (B serves it) and go on serving others.
func (r *scaleRun) zombie(a *agentProc, rsA *acp.RemoteSession, b *agentProc, rsB *acp.RemoteSession) {
	t := r.t
	t.Helper()
	r.prompt(b, rsB, r.text("s", true))
	// A prompt waits in A's input while A is frozen: when A resumes, it
	// races with A noticing that its lease is gone.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	early := r.text("z", false)
	h, err := rsA.Prompt(ctx, session.PromptRequest{Text: early})
	if err != nil {
		t.Fatalf("prompt to the frozen A: %v", err)
	}
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT A: %v", err)
	}
	resumed := time.Now()
	res, err := h.Wait(ctx)
	switch {
	case err != nil:
		t.Fatalf("prompt %q sent to the frozen A: %v", early, err)
	case res.Err == nil:
		t.Errorf("the resumed A acknowledged prompt %q in a session B took over (stderr: %s)", early, a.stderr.tail(2000))
	default:
		t.Logf("the prompt sent to the frozen A failed when it resumed: %v", res.Err)
	}
	for n := range poll.Tries(t.Context()) {
		text := r.text("z", false)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		h, err := rsA.Prompt(ctx, session.PromptRequest{Text: text})
		if err != nil {
			cancel()
			t.Fatalf("prompt on the resumed A: %v (stderr: %s)", err, a.stderr.tail(2000))
		}
		res, err := h.Wait(ctx)
		cancel()
		switch {
		case err != nil:
			t.Fatalf("prompt %q on the resumed A: %v", text, err)
		case res.Err == nil:
			t.Fatalf("the resumed A acknowledged prompt %q in a session B took over (stderr: %s)", text, a.stderr.tail(2000))
		case isUnknownSession(res.Err):
			t.Logf("the resumed A forgot the session %v after SIGCONT, after %d refused prompts", time.Since(resumed).Round(time.Millisecond), n)
			r.refused(a, r.id, r.holder(b))
			r.usable(a, "a")
			return
		case n == 0:
			t.Logf("prompt on the resumed A: %v", res.Err)
		}
		if time.Since(resumed) > 10*time.Second {
			t.Fatalf("the resumed A still has the session 10 s after SIGCONT; last prompt: %v (stderr: %s)", res.Err, a.stderr.tail(3000))
		}
	}
	t.Fatalf("the test ended while the resumed A had the session")
}
