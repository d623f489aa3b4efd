package crashtest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/session"
)

var (
	agentKills = flag.Int("crash.agent.kills", 50, "number of times TestCrashKillAgent kills the agent process")
	agentSeed  = flag.Uint64("crash.agent.seed", 0, "random seed of TestCrashKillAgent; 0 picks one (it is logged)")
)

const (
	// autoCompactTokens is small: with the offline provider the retained
	// summary alone is a few hundred tokens, so about every other turn ends
	// with an automatic compaction (or runs one at a step checkpoint).
	autoCompactTokens = 600
	// opTimeout bounds every wait of the test; nothing should come near it.
	opTimeout = 30 * time.Second
	// maxKillAt is the number of operations before the one during which the
	// kill timer is started, at most.
	maxKillAt = 6
	// maxKillDelay is the longest delay from the start of that operation to
	// the SIGKILL.
	maxKillDelay = 50 * time.Millisecond
	// maxReported bounds the violations reported one by one.
	maxReported = 40
)

// ackedPrompt is a prompt whose Handle finished with Err == nil: its user
// message and its assistant reply are acknowledged to the client.
type ackedPrompt struct {
	text  string
	reply string // the last assistant text of TurnResult.Messages; "" when not checked
}

// crashRun is the state of TestCrashKillAgent: what was acknowledged and the
// figures it logs.
type crashRun struct {
	t     *testing.T
	rng   *rand.Rand
	bin   string
	store string
	cwd   string
	id    string // the session, created by the first agent

	acked     []ackedPrompt     // in acknowledgement order
	sent      map[string]bool   // every prompt text ever sent
	compacted map[string]string // acknowledged compactions that compacted → their summary
	recovered map[string]bool   // compactions interrupted by a kill, recovered by the next agent
	prompts   int               // prompt texts numbered so far

	// Figures.
	kills             int
	killsInCompaction int            // kills after which the store held a compaction in progress
	interruptedStored int            // compactions found in progress in the store after a kill
	interruptedReplay int            // of those, seen failed/"interrupted" in the next replay
	killedDuring      map[string]int // the operation in flight when the SIGKILL was sent
	ackedPrompts      int
	ackedCompactions  int
	nothingToCompact  int
	lostOps           int // operations cut short by a kill
	violations        int
	lastStats         storeStats
}

type storeStats struct {
	messages, segments, auto, manual, failed, cancelled, nothing int
}

// violate reports one broken invariant.
func (r *crashRun) violate(format string, args ...any) {
	r.t.Helper()
	r.violations++
	if r.violations <= maxReported {
		r.t.Errorf(format, args...)
	} else if r.violations == maxReported+1 {
		r.t.Errorf("more violations follow; only their number is reported")
	}
}

// TestCrashKillAgent kills the ACP agent with SIGKILL at random instants
// while a client drives one session stored in one SQLite file (prompts, some
// with tool calls, manual and automatic compactions, some of them slowed so
// that kills land inside them). After every kill it checks the file directly
// and the session/load replay of a new agent process against everything the
// client had been acknowledged, then goes on driving that process.
func TestCrashKillAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hundreds of agent processes")
	}
	started := time.Now()
	seed := *agentSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -crash.agent.seed=%d)", seed, seed)
	dir := t.TempDir()
	r := &crashRun{
		t:            t,
		rng:          rand.New(rand.NewPCG(seed, 0x5e55)),
		bin:          buildAgent(t),
		store:        filepath.Join(dir, "sessions.db"),
		cwd:          dir,
		sent:         map[string]bool{},
		compacted:    map[string]string{},
		recovered:    map[string]bool{},
		killedDuring: map[string]int{},
	}
	built := time.Now()

	var cur *agentProc
	t.Cleanup(func() {
		if cur != nil {
			cur.reap()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	p, err := startAgent(ctx, r.bin, r.agentArgs())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	cur = p
	ctx, cancel = context.WithTimeout(context.Background(), opTimeout)
	rs, err := p.client.NewSession(ctx, r.cwd)
	cancel()
	if err != nil {
		t.Fatalf("session/new: %v (stderr: %s)", err, p.stderr.tail(2000))
	}
	r.id = rs.ID()

	var driving, checking, reloading time.Duration
	for round := range *agentKills {
		t0 := time.Now()
		if !r.drive(round, cur, rs) {
			return
		}
		cur.reap()
		r.kills++
		t1 := time.Now()
		stored, interrupted, ok := r.checkStore(round)
		if !ok {
			return
		}
		if len(interrupted) > 0 {
			r.killsInCompaction++
			r.interruptedStored += len(interrupted)
		}
		t2 := time.Now()
		if cur, rs, ok = r.reload(round, stored, interrupted); !ok {
			return
		}
		driving, checking, reloading = driving+t1.Sub(t0), checking+t2.Sub(t1), reloading+time.Since(t2)
		if r.violations > 4*maxReported {
			t.Fatalf("round %d: giving up after %d violations", round, r.violations)
		}
	}
	// The last agent takes a prompt and a compaction and ends normally
	// (EOF on its stdin); the file must hold everything.
	r.awaitPrompt(*agentKills, cur, r.sendPrompt(rs, r.nextText(*agentKills, true)))
	r.awaitCompact(*agentKills, cur, r.startCompact(rs))
	if err := cur.stop(); err != nil {
		r.violate("the last agent did not end cleanly: %v", err)
	}
	cur = nil
	if _, inProgress, ok := r.checkStore(*agentKills); ok && len(inProgress) > 0 {
		r.violate("after a clean shutdown the store holds compactions in progress: %v", inProgress)
	}

	var during []string
	for k, n := range r.killedDuring {
		during = append(during, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(during)
	st := r.lastStats
	t.Logf("%d kills (%d with a compaction in progress in the store; %d interrupted compactions recovered, %d of them seen failed/interrupted on replay); killed during: %s",
		r.kills, r.killsInCompaction, r.interruptedStored, r.interruptedReplay, strings.Join(during, ", "))
	t.Logf("%d acknowledged operations: %d prompts, %d manual compactions (%d compacted, %d nothing to compact); %d operations cut short by a kill",
		r.ackedPrompts+r.ackedCompactions, r.ackedPrompts, r.ackedCompactions, r.ackedCompactions-r.nothingToCompact, r.nothingToCompact, r.lostOps)
	t.Logf("store at the end: %d messages, %d segments (%d auto, %d manual), %d failed, %d cancelled, %d nothing-to-compact compaction records",
		st.messages, st.segments, st.auto, st.manual, st.failed, st.cancelled, st.nothing)
	t.Logf("%d violations; %v in all: build %v, driving and killing %v, store checks %v, new agents with load and replay checks %v",
		r.violations, time.Since(started).Round(time.Millisecond), built.Sub(started).Round(time.Millisecond),
		driving.Round(time.Millisecond), checking.Round(time.Millisecond), reloading.Round(time.Millisecond))
}

// agentArgs are the flags of the next agent: one store, a small automatic
// compaction threshold, and now and then a slow summary call so that kills
// land inside compactions.
func (r *crashRun) agentArgs() []string {
	args := []string{"--store", r.store, "--auto-compact-tokens", fmt.Sprint(autoCompactTokens)}
	if r.rng.IntN(2) == 0 {
		args = append(args, "--summary-delay", fmt.Sprintf("%dms", 1+r.rng.IntN(8)))
	}
	return args
}

// nextText returns a new unique prompt text; with echo it names the echo
// tool so that the turn makes a tool call.
func (r *crashRun) nextText(round int, echo bool) string {
	r.prompts++
	tag := fmt.Sprintf("m%d-%d", round, r.prompts)
	if echo {
		return fmt.Sprintf("%s please call echo with text: %s", tag, tag)
	}
	words := []string{"use the flag package", "keep main.go small", "write tests first", "deploy on Tuesday", "prefer tabs"}
	return fmt.Sprintf("%s %s.", tag, words[r.rng.IntN(len(words))])
}

// drive runs random operations on the session of agent p until the kill
// timer, started during operation killAt, has killed it. It reports false
// when the test cannot go on.
func (r *crashRun) drive(round int, p *agentProc, rs *acp.RemoteSession) bool {
	killAt := r.rng.IntN(maxKillAt)
	delay := time.Duration(r.rng.Int64N(int64(maxKillDelay) + 1))
	var current atomic.Value // the operation in flight
	current.Store("idle")
	during := make(chan string, 1)
	var timer *time.Timer
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; !p.dead() && !closed(p.client.Done()); i++ {
		if time.Now().After(deadline) {
			r.violate("round %d: the agent was not killed within 2 minutes", round)
			p.kill()
			break
		}
		if i == killAt {
			timer = time.AfterFunc(delay, func() {
				during <- current.Load().(string)
				p.kill()
			})
		}
		switch k := r.rng.IntN(20); {
		case k < 7:
			current.Store("prompt")
			r.awaitPrompt(round, p, r.sendPrompt(rs, r.nextText(round, false)))
		case k < 12:
			current.Store("prompt+tool")
			r.awaitPrompt(round, p, r.sendPrompt(rs, r.nextText(round, true)))
		case k < 16:
			current.Store("compact")
			r.awaitCompact(round, p, r.startCompact(rs))
		case k < 18:
			// A compaction queued during a turn runs at its next checkpoint.
			current.Store("prompt+compact")
			pp := r.sendPrompt(rs, r.nextText(round, r.rng.IntN(2) == 0))
			pc := r.startCompact(rs)
			r.awaitPrompt(round, p, pp)
			r.awaitCompact(round, p, pc)
		default:
			// Two prompts queued: the second starts when the first ends.
			current.Store("two prompts")
			first := r.sendPrompt(rs, r.nextText(round, false))
			second := r.sendPrompt(rs, r.nextText(round, r.rng.IntN(2) == 0))
			// Their replies are not checked: the client can attribute the
			// second turn's first updates to the first turn (see
			// sentPrompt.queued).
			first.queued, second.queued = true, true
			r.awaitPrompt(round, p, first)
			r.awaitPrompt(round, p, second)
		}
		current.Store("idle")
		if r.rng.IntN(4) == 0 {
			time.Sleep(time.Duration(r.rng.IntN(3000)) * time.Microsecond) // an idle moment of random length, for kills between operations; no order
		}
	}
	if timer != nil && !timer.Stop() { // it fired
		select {
		case op := <-during:
			if !p.killed.Load() {
				break // it had exited by itself
			}
			r.killedDuring[op]++
			return true
		case <-time.After(opTimeout):
		}
	}
	r.violate("round %d: the agent ended before it was killed: %v (args %v, stderr: %s)", round, p.waitErr, p.args, p.stderr.tail(3000))
	return false
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// connectionLost reports whether err is the end of the connection to a
// killed agent.
func connectionLost(err error) bool {
	return errors.Is(err, acp.ErrConnection) || errors.Is(err, session.ErrClosed)
}

// sentPrompt is a prompt sent and not yet waited for.
type sentPrompt struct {
	text string
	h    *session.Handle[session.TurnResult]
	err  error
	// queued: another prompt was in flight with this one. Then
	// TurnResult.Messages cannot be trusted: the agent may write the next
	// turn's updates before the previous prompt's response, and
	// RemoteSession attributes updates to the oldest turn until a goroutine
	// woken by the response removes it, so the first turn's messages can
	// hold (part of) the second turn's reply and the second turn's can lack
	// it. Only the user messages are checked for such prompts.
	queued bool
}

// sendPrompt sends text as a prompt without waiting for the turn.
func (r *crashRun) sendPrompt(rs *acp.RemoteSession, text string) sentPrompt {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r.sent[text] = true // from here on it may be stored
	h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
	return sentPrompt{text: text, h: h, err: err}
}

// awaitPrompt waits for the turn of a sent prompt and records it when it
// is acknowledged (its Handle finished with Err == nil).
func (r *crashRun) awaitPrompt(round int, p *agentProc, sp sentPrompt) {
	if sp.err != nil {
		r.lost(round, p, "prompt", sp.err)
		return
	}
	select {
	case <-sp.h.Finished():
	case <-time.After(opTimeout):
		r.violate("round %d: prompt %q not finished after %v", round, sp.text, opTimeout)
		p.kill()
		<-sp.h.Finished()
	}
	res := sp.h.Result()
	if res.Err != nil {
		r.lost(round, p, "prompt", res.Err)
		return
	}
	reply := ""
	for _, m := range res.Messages {
		if m.Role == history.RoleAssistant && m.Text != "" && !sp.queued {
			reply = m.Text
		}
	}
	r.acked = append(r.acked, ackedPrompt{text: sp.text, reply: reply})
	r.ackedPrompts++
}

// startedCompact is a manual compaction the agent has accepted (or the
// error of the request).
type startedCompact struct {
	h   *session.Handle[session.CompactResult]
	err error
}

// startCompact requests a manual compaction; it returns once the agent has
// queued it.
func (r *crashRun) startCompact(rs *acp.RemoteSession) startedCompact {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h, err := rs.Compact(ctx, session.CompactRequest{})
	return startedCompact{h: h, err: err}
}

// awaitCompact waits for a manual compaction's result and records it when
// it is acknowledged (compacted, or nothing to compact).
func (r *crashRun) awaitCompact(round int, p *agentProc, sc startedCompact) {
	if sc.err != nil {
		r.lost(round, p, "compact", sc.err)
		return
	}
	h := sc.h
	select {
	case <-h.Finished():
	case <-time.After(opTimeout):
		r.violate("round %d: compaction %s not finished after %v", round, h.ID(), opTimeout)
		p.kill()
		<-h.Finished()
	}
	res := h.Result()
	switch {
	case res.Compacted:
		if res.Segment == nil || res.CompactID != h.ID() {
			r.violate("round %d: compaction %s compacted without its segment (%+v)", round, h.ID(), res)
			return
		}
		r.compacted[res.CompactID] = res.Segment.Summary
		r.ackedCompactions++
	case res.Success:
		if res.Reason != session.ReasonNothingToCompact {
			r.violate("round %d: compaction %s succeeded with reason %q", round, h.ID(), res.Reason)
		}
		r.ackedCompactions++
		r.nothingToCompact++
	default:
		r.lost(round, p, "compact", errors.New(res.Error))
	}
}

// lost accounts for an operation that did not succeed: only the connection
// to a killed agent may end one.
func (r *crashRun) lost(round int, p *agentProc, op string, err error) {
	r.t.Helper()
	r.lostOps++
	if p.killed.Load() && (connectionLost(err) || strings.Contains(err.Error(), acp.ErrConnection.Error())) {
		return
	}
	r.violate("round %d: %s failed although the agent was not killed: %v (stderr: %s)", round, op, err, p.stderr.tail(2000))
}

// checkStore opens the store file of the killed agent directly and checks
// it against what was acknowledged. It returns the stored timeline and the
// compactions in progress in it, or false when the file cannot be read.
func (r *crashRun) checkStore(round int) ([]history.Entry, map[string]history.CompactionRecord, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s, err := sqlite.Open(r.store)
	if err != nil {
		r.violate("round %d: open the store: %v", round, err)
		return nil, nil, false
	}
	defer func() {
		if err := s.Close(); err != nil {
			r.violate("round %d: close the store: %v", round, err)
		}
	}()
	snap, err := s.Load(ctx, r.id)
	if err != nil {
		r.violate("round %d: load: %v", round, err)
		return nil, nil, false
	}
	segs, err := s.Segments(ctx, r.id)
	if err != nil {
		r.violate("round %d: segments: %v", round, err)
		return nil, nil, false
	}
	tl, err := s.Timeline(ctx, r.id)
	if err != nil {
		r.violate("round %d: timeline: %v", round, err)
		return nil, nil, false
	}

	// Segments then Active: every message once.
	var all []history.Message
	starts := []int{} // index in all where each span after a boundary starts
	for i, g := range segs {
		if i > 0 {
			starts = append(starts, len(all))
		}
		all = append(all, g.Messages...)
	}
	archived := len(all)
	if len(segs) > 0 {
		starts = append(starts, len(all))
	}
	all = append(all, snap.Active...)
	if int64(archived) != snap.Archived {
		r.violate("round %d: Snapshot.Archived is %d, the segments hold %d messages", round, snap.Archived, archived)
	}
	ids := map[string]int{}
	for i, m := range all {
		if j, dup := ids[m.ID]; dup {
			r.violate("round %d: message ID %s at %d and %d", round, m.ID, j, i)
		}
		ids[m.ID] = i
	}
	// §4.3: a compaction never separates a tool call from its results, so
	// no segment after the first, and not Active after a segment, starts
	// with a tool message.
	for _, i := range starts {
		if i < len(all) && all[i].Role == history.RoleTool {
			r.violate("round %d: message %d (%s) starts a span after a compaction but is a tool result of %s", round, i, all[i].ID, all[i].ToolCallID)
		}
	}

	// The user messages: each acknowledged prompt exactly once, in
	// acknowledgement order, with its assistant reply in its turn; nothing
	// that was never sent; nothing twice.
	userAt := map[string]int{}
	var users []int
	for i, m := range all {
		if m.Role != history.RoleUser {
			continue
		}
		users = append(users, i)
		if !r.sent[m.Text] {
			r.violate("round %d: user message %d %q was never sent", round, i, m.Text)
		}
		if j, dup := userAt[m.Text]; dup {
			r.violate("round %d: user message %q stored twice (at %d and %d)", round, m.Text, j, i)
		}
		userAt[m.Text] = i
	}
	last := -1
	for n, a := range r.acked {
		i, ok := userAt[a.text]
		if !ok {
			r.violate("round %d: acknowledged prompt %d %q is not stored", round, n, a.text)
			continue
		}
		if i <= last {
			r.violate("round %d: acknowledged prompt %d %q is stored at %d, before the one acknowledged earlier (at %d)", round, n, a.text, i, last)
		}
		last = i
		end := len(all) // the turn ends at the next user message
		if k := sort.SearchInts(users, i+1); k < len(users) {
			end = users[k]
		}
		if a.reply != "" && !hasReply(all[i+1:end], a.reply) {
			r.violate("round %d: the acknowledged reply to %q is not stored in its turn: %q", round, a.text, a.reply)
		}
	}

	// Acknowledged compactions are segments with their summary; the
	// retained summary is the last segment's.
	bySegment := map[string]*history.Segment{}
	for i := range segs {
		bySegment[segs[i].CompactID] = &segs[i]
	}
	for cid, summary := range r.compacted {
		g, ok := bySegment[cid]
		switch {
		case !ok:
			r.violate("round %d: acknowledged compaction %s has no segment", round, cid)
		case g.Summary != summary:
			r.violate("round %d: segment of compaction %s has summary %q, acknowledged %q", round, cid, g.Summary, summary)
		}
	}
	want := ""
	if len(segs) > 0 {
		want = segs[len(segs)-1].Summary
	}
	if snap.Summary != want {
		r.violate("round %d: retained summary %q, the last segment's is %q", round, snap.Summary, want)
	}

	// The timeline: positions increase, the same messages, each compaction
	// once; what is in progress is what Load reports interrupted.
	st := storeStats{messages: len(all), segments: len(segs)}
	inProgress := map[string]history.CompactionRecord{}
	records := map[string]bool{}
	mi := 0
	for i, e := range tl {
		if i > 0 && e.Position <= tl[i-1].Position {
			r.violate("round %d: timeline position %d after %d", round, e.Position, tl[i-1].Position)
		}
		if e.Message != nil {
			if mi >= len(all) || e.Message.ID != all[mi].ID || e.Archived != (mi < archived) {
				r.violate("round %d: timeline message %s (archived %v) at message index %d", round, e.Message.ID, e.Archived, mi)
			}
			mi++
			continue
		}
		c := e.Compaction
		if records[c.CompactID] {
			r.violate("round %d: compaction %s twice in the timeline", round, c.CompactID)
		}
		records[c.CompactID] = true
		if r.recovered[c.CompactID] && (c.Status != history.StatusFailed || c.Error != history.InterruptedError) {
			r.violate("round %d: compaction %s, interrupted by an earlier kill, is stored %s %q, not recorded as interrupted (§5.5)", round, c.CompactID, c.Status, c.Error)
		}
		switch c.Status {
		case history.StatusInProgress:
			inProgress[c.CompactID] = *c
		case history.StatusCompleted:
			if bySegment[c.CompactID] == nil {
				r.violate("round %d: completed compaction %s has no segment", round, c.CompactID)
			}
			if c.Trigger == session.TriggerAuto {
				st.auto++
			} else {
				st.manual++
			}
		case history.StatusFailed:
			st.failed++
		case history.StatusCancelled:
			st.cancelled++
		case history.StatusNothingToCompact:
			st.nothing++
		}
	}
	if mi != len(all) {
		r.violate("round %d: the timeline has %d messages, segments and Active %d", round, mi, len(all))
	}
	if len(inProgress) != len(snap.Interrupted) {
		r.violate("round %d: %d compactions in progress in the timeline, Load reports %v", round, len(inProgress), snap.Interrupted)
	}
	for _, cid := range snap.Interrupted {
		if _, ok := inProgress[cid]; !ok {
			r.violate("round %d: Load reports %s interrupted, the timeline does not", round, cid)
		}
	}
	r.lastStats = st
	return tl, inProgress, true
}

// hasReply reports whether the messages of a turn hold an assistant message
// with the given text.
func hasReply(turn []history.Message, text string) bool {
	for _, m := range turn {
		if m.Role == history.RoleAssistant && m.Text == text {
			return true
		}
	}
	return false
}

// reload starts a new agent, loads the session with a client that
// advertises compaction and checks the replay against the stored timeline
// read after the kill (stored) and what was acknowledged. The compactions
// that were in progress (interrupted) must replay as failed, "interrupted";
// the next checkStore finds them recorded so.
func (r *crashRun) reload(round int, stored []history.Entry, interrupted map[string]history.CompactionRecord) (*agentProc, *acp.RemoteSession, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	p, err := startAgent(ctx, r.bin, r.agentArgs())
	if err != nil {
		r.violate("round %d: %v", round, err)
		return nil, nil, false
	}
	rs, err := p.client.LoadSession(ctx, r.id, r.cwd)
	if err != nil {
		r.violate("round %d: session/load: %v (stderr: %s)", round, err, p.stderr.tail(3000))
		p.reap()
		return nil, nil, false
	}
	tl := rs.Timeline()
	for cid := range interrupted {
		r.recovered[cid] = true
	}

	// Compaction entities: one per stored record (nothing_to_compact is
	// agent text), in order, each terminal with its stored outcome.
	var recs []*history.CompactionRecord
	var storedUsers []string
	for _, e := range stored {
		switch {
		case e.Compaction != nil && e.Compaction.Status != history.StatusNothingToCompact:
			recs = append(recs, e.Compaction)
		case e.Message != nil && e.Message.Role == history.RoleUser:
			storedUsers = append(storedUsers, e.Message.Text)
		}
	}
	ents := tl.Compactions()
	if len(ents) != len(recs) {
		r.violate("round %d: the replay has %d compaction entities, the store %d compactions", round, len(ents), len(recs))
	}
	for i, e := range ents {
		if !e.Status.Terminal() {
			r.violate("round %d: replayed compaction %s is %s", round, e.ID, e.Status)
		}
		if i >= len(recs) {
			continue
		}
		c := recs[i]
		errText := ""
		if e.Error != nil {
			errText = *e.Error
		}
		switch {
		case e.ID != c.CompactID:
			r.violate("round %d: replayed compaction %d is %s, stored %s", round, i, e.ID, c.CompactID)
		case c.Status == history.StatusInProgress:
			// Checked below with the interrupted ones.
		case string(e.Status) != string(c.Status):
			r.violate("round %d: replayed compaction %s is %s, stored %s", round, e.ID, e.Status, c.Status)
		case c.Status == history.StatusCompleted && e.SummaryText() != c.Summary:
			r.violate("round %d: replayed compaction %s has summary %q, stored %q", round, e.ID, e.SummaryText(), c.Summary)
		case c.Status == history.StatusFailed && errText != c.Error:
			r.violate("round %d: replayed compaction %s has error %q, stored %q", round, e.ID, errText, c.Error)
		}
	}
	for cid := range interrupted {
		e := tl.Compaction(cid)
		switch {
		case e == nil:
			r.violate("round %d: interrupted compaction %s is not replayed", round, cid)
		case e.Status != schema.CompactionFailed || e.Error == nil || !strings.Contains(*e.Error, "interrupted"):
			r.violate("round %d: interrupted compaction %s replayed as %s (error %v)", round, cid, e.Status, e.Error)
		default:
			r.interruptedReplay++
		}
	}

	// User message chunks: the stored user messages in order, so every
	// acknowledged prompt in acknowledgement order. Chunks without a
	// message ID join into one timeline message; each chunk is one block.
	var replayed []string
	for _, it := range tl.Items {
		if m := it.Message; m != nil && m.Kind == schema.UpdateUserMessageChunk {
			for _, b := range m.Content {
				if b.Text != nil {
					replayed = append(replayed, b.Text.Text)
				}
			}
		}
	}
	if fmt.Sprint(replayed) != fmt.Sprint(storedUsers) {
		r.violate("round %d: the replay has %d user messages, the store %d (or they differ)", round, len(replayed), len(storedUsers))
	}
	at := map[string]int{}
	for i, text := range replayed {
		if _, dup := at[text]; dup {
			r.violate("round %d: user message %q replayed twice", round, text)
		}
		at[text] = i
	}
	last := -1
	for n, a := range r.acked {
		i, ok := at[a.text]
		switch {
		case !ok:
			r.violate("round %d: acknowledged prompt %d %q is not replayed", round, n, a.text)
		case i <= last:
			r.violate("round %d: acknowledged prompt %d %q replayed out of order", round, n, a.text)
		default:
			last = i
		}
	}
	return p, rs, true
}
