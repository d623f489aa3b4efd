package session_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// Sizes of TestLoad. The default keeps `go test -race ./session/` short;
// `make soak` runs 1,000 sessions.
var (
	loadSessions = flag.Int("load.sessions", 100, "TestLoad: number of concurrent sessions on one SQLite file")
	loadOps      = flag.Int("load.ops", 8, "TestLoad: operations per session")
	loadSeed     = flag.Uint64("load.seed", 0, "TestLoad: random seed; 0 picks one (it is logged)")
	loadWait     = flag.Duration("load.wait", 3*time.Minute, "TestLoad: how long one operation's handles may take before they count as unfinished")
)

// Settings of the sessions of TestLoad. The offline provider counts about
// 40 to 60 tokens per operation, so automatic compactions happen every few
// operations; summaries are kept short so that they do not trigger one
// after every turn by themselves.
const (
	loadAutoCompactTokens = 300
	loadSummaryChars      = 400
)

// loadText is one user text a session was given: a prompt or a steer.
type loadText struct {
	text      string
	steer     bool
	committed bool // its handle reported it committed to history
}

// loadStats are the figures of one session (and, summed, of the run).
type loadStats struct {
	ops            int // operations whose handles all finished
	prompts        int
	steers         int
	compacts       int // manual
	compacted      int // manual compactions that compacted
	nothing        int // manual compactions with nothing to compact
	handles        int // handles returned
	unfinished     int // handles not finished in time or after Close
	failures       int // results with an unexpected error
	inFlightClose  int // commands still pending when their session was closed
	closedCommands int // of those, commands that finished with ErrClosed/cancelled
}

func (s *loadStats) add(o loadStats) {
	s.ops += o.ops
	s.prompts += o.prompts
	s.steers += o.steers
	s.compacts += o.compacts
	s.compacted += o.compacted
	s.nothing += o.nothing
	s.handles += o.handles
	s.unfinished += o.unfinished
	s.failures += o.failures
	s.inFlightClose += o.inFlightClose
	s.closedCommands += o.closedCommands
}

// loadSession drives one session; only its goroutine touches it.
type loadSession struct {
	idx    int
	s      *session.Session
	rng    *rand.Rand
	texts  []*loadText // in the order history must hold them
	stats  loadStats
	errs   []string // unexpected results, for the report
	closed bool     // closed with commands in flight
}

// pendingCmd is one accepted command: its Finished channel and the check of
// its result, run once it finished.
type pendingCmd struct {
	finished <-chan struct{}
	check    func(closing bool)
}

func (ls *loadSession) failf(format string, args ...any) {
	ls.stats.failures++
	if len(ls.errs) < 5 {
		ls.errs = append(ls.errs, fmt.Sprintf("session %d: ", ls.idx)+fmt.Sprintf(format, args...))
	}
}

// prompt queues a prompt; text is added to the expected history at slot.
func (ls *loadSession) prompt(text string, slot *loadText) pendingCmd {
	h, err := ls.s.Prompt(context.Background(), session.PromptRequest{Text: text})
	if err != nil {
		ls.failf("prompt refused: %v", err)
		return pendingCmd{}
	}
	ls.stats.prompts++
	ls.stats.handles++
	*slot = loadText{text: text}
	return pendingCmd{finished: h.Finished(), check: func(closing bool) {
		res := h.Result()
		for _, m := range res.Messages {
			if m.Role == history.RoleUser && !m.Steer && m.Text == text {
				slot.committed = true
			}
		}
		switch {
		case res.Err == nil && slot.committed:
		case closing && (errors.Is(res.Err, session.ErrClosed) || errors.Is(res.Err, session.ErrCancelled)):
			ls.stats.closedCommands++
		default:
			ls.failf("prompt %q: err %v, committed %v", text, res.Err, slot.committed)
		}
	}}
}

func (ls *loadSession) steer(text string, slot *loadText) pendingCmd {
	h, err := ls.s.Steer(context.Background(), session.SteerRequest{Text: text})
	if err != nil {
		ls.failf("steer refused: %v", err)
		return pendingCmd{}
	}
	ls.stats.steers++
	ls.stats.handles++
	*slot = loadText{text: text, steer: true}
	return pendingCmd{finished: h.Finished(), check: func(closing bool) {
		res := h.Result()
		slot.committed = res.Err == nil && res.Message.ID != "" && res.Message.Text == text && res.Message.Steer
		switch {
		case slot.committed:
		case closing && errors.Is(res.Err, session.ErrClosed):
			ls.stats.closedCommands++
		default:
			ls.failf("steer %q: err %v, message %+v", text, res.Err, res.Message)
		}
	}}
}

func (ls *loadSession) compact() pendingCmd {
	h, err := ls.s.Compact(context.Background(), session.CompactRequest{Instructions: "keep the request names"})
	if err != nil {
		ls.failf("compact refused: %v", err)
		return pendingCmd{}
	}
	ls.stats.compacts++
	ls.stats.handles++
	return pendingCmd{finished: h.Finished(), check: func(closing bool) {
		res := h.Result()
		switch {
		case res.Reason == session.ReasonCompacted && res.Success && res.Compacted && res.Segment != nil && res.Segment.Summary != "":
			ls.stats.compacted++
		case res.Reason == session.ReasonNothingToCompact && res.Success && !res.Compacted:
			ls.stats.nothing++
		case closing && res.Reason == session.ReasonCompactFailed && res.Cancelled:
			ls.stats.closedCommands++
		default:
			ls.failf("compact: %+v", res)
		}
		if res.CompactID != h.ID() {
			ls.failf("compact ID %q, handle %q", res.CompactID, h.ID())
		}
	}}
}

// slots reserves n places at the end of the expected history.
func (ls *loadSession) slots(n int) []*loadText {
	out := make([]*loadText, n)
	for i := range out {
		out[i] = &loadText{}
	}
	ls.texts = append(ls.texts, out...)
	return out
}

// next issues one operation chosen at random and returns its commands.
// Each operation lists the places its user texts take in history, in the
// order docs/design.md §2 gives them.
func (ls *loadSession) next(op int) []pendingCmd {
	tag := fmt.Sprintf("s%d o%d", ls.idx, op)
	tool := func(what string) string {
		return tag + " " + what + ": please call echo with text: " + tag + "-" + what
	}
	plain := func(what string) string { return tag + " " + what + ": the build uses " + what + " flags." }
	steer := func(what string) string { return tag + " " + what + ": keep the answer short." }
	switch ls.rng.IntN(8) {
	case 0: // a plain one-step turn
		sl := ls.slots(1)
		return []pendingCmd{ls.prompt(plain("p"), sl[0])}
	case 1: // a turn with a tool call
		sl := ls.slots(1)
		return []pendingCmd{ls.prompt(tool("p"), sl[0])}
	case 2: // a steer queued while a tool turn runs
		sl := ls.slots(2)
		return []pendingCmd{ls.prompt(tool("p"), sl[0]), ls.steer(steer("st"), sl[1])}
	case 3: // a steer and a compaction queued while a tool turn runs
		sl := ls.slots(2)
		return []pendingCmd{ls.prompt(tool("p"), sl[0]), ls.steer(steer("st"), sl[1]), ls.compact()}
	case 4: // a manual compaction on an idle session
		return []pendingCmd{ls.compact()}
	case 5: // a steer on an idle session
		sl := ls.slots(1)
		return []pendingCmd{ls.steer(steer("st"), sl[0])}
	case 6: // two prompts queued back to back with a compaction between
		sl := ls.slots(2)
		return []pendingCmd{ls.prompt(tool("pa"), sl[0]), ls.compact(), ls.prompt(plain("pb"), sl[1])}
	default: // a steer queued behind a waiting prompt runs before it (§2.5)
		sl := ls.slots(3)
		a := ls.prompt(tool("pa"), sl[0])
		b := ls.prompt(plain("pb"), sl[2])
		s := ls.steer(steer("st"), sl[1])
		return []pendingCmd{a, b, s}
	}
}

// await waits for every command concurrently and then checks the results.
func (ls *loadSession) await(cmds []pendingCmd) bool {
	ctx, cancel := context.WithTimeout(context.Background(), *loadWait)
	defer cancel()
	var wg sync.WaitGroup
	late := make([]bool, len(cmds))
	for i, c := range cmds {
		if c.finished == nil {
			continue
		}
		wg.Go(func() {
			select {
			case <-c.finished:
			case <-ctx.Done():
				late[i] = true
			}
		})
	}
	wg.Wait()
	ok := true
	for i, c := range cmds {
		switch {
		case c.finished == nil:
			ok = false
		case late[i]:
			ls.stats.unfinished++
			ls.failf("a handle did not finish within %v", *loadWait)
			ok = false
		default:
			c.check(false)
		}
	}
	return ok
}

// run performs the session's operations, then closes it; with closeBusy it
// closes it while a turn, a steer and a compaction are pending.
func (ls *loadSession) run(ops int, closeBusy bool) {
	for op := range ops {
		if ls.await(ls.next(op)) {
			ls.stats.ops++
		}
	}
	if !closeBusy {
		ls.sameAsStore()
		if err := ls.s.Close(); err != nil {
			ls.failf("Close: %v", err)
		}
		return
	}
	// §2.7: Close finishes every pending handle.
	sl := ls.slots(2)
	tag := fmt.Sprintf("s%d close", ls.idx)
	cmds := []pendingCmd{
		ls.prompt(tag+": please call echo with text: bye", sl[0]),
		ls.steer(tag+": one more thing.", sl[1]),
		ls.compact(),
	}
	if err := ls.s.Close(); err != nil {
		ls.failf("Close: %v", err)
	}
	ls.closed = true
	for _, c := range cmds {
		if c.finished == nil {
			continue
		}
		ls.stats.inFlightClose++
		select {
		case <-c.finished:
			c.check(true)
		default:
			ls.stats.unfinished++
			ls.failf("a handle was left unfinished by Close")
		}
	}
}

// sameAsStore compares the session's Active with what the store holds.
func (ls *loadSession) sameAsStore() {
	ctx := context.Background()
	active, err := ls.s.Active(ctx)
	if err != nil {
		ls.failf("Active: %v", err)
		return
	}
	snap, err := ls.s.Store().Load(ctx, ls.s.ID())
	if err != nil {
		ls.failf("Load: %v", err)
		return
	}
	if len(active) != len(snap.Active) {
		ls.failf("memory holds %d active messages, the store %d", len(active), len(snap.Active))
		return
	}
	for i := range active {
		if active[i].ID != snap.Active[i].ID {
			ls.failf("active message %d differs from the store", i)
			return
		}
	}
}

// loadVerify are the figures read back from the reopened store.
type loadVerify struct {
	lost        int // committed texts missing, duplicated or out of order
	phantoms    int // texts not reported committed but found in history
	dupIDs      int
	unanswered  int // tool calls without a result
	inProgress  int // compactions still in progress
	segments    int
	autoSegs    int
	messages    int
	midTurn     int // steers taken at a step checkpoint (right after a tool result)
	timelineBad int // sessions whose timeline differs from Segments+Active
}

// verify reads session id back from store and checks its history against
// the texts ls recorded.
func (v *loadVerify) verify(t *testing.T, store history.Store, ls *loadSession) {
	ctx := context.Background()
	id := ls.s.ID()
	snap, err := store.Load(ctx, id)
	require.NoError(t, err)
	segs, err := store.Segments(ctx, id)
	require.NoError(t, err)
	tl, err := store.Timeline(ctx, id)
	require.NoError(t, err)

	var all []history.Message
	for _, s := range segs {
		all = append(all, s.Messages...)
		v.segments++
		if s.Trigger == session.TriggerAuto {
			v.autoSegs++
		}
	}
	all = append(all, snap.Active...)
	v.messages += len(all)

	var fromTimeline []history.Message
	for _, e := range tl {
		switch {
		case e.Message != nil:
			fromTimeline = append(fromTimeline, *e.Message)
		case e.Compaction.Status == history.StatusInProgress:
			v.inProgress++
		}
	}
	if len(fromTimeline) != len(all) {
		v.timelineBad++
	} else {
		for i := range all {
			if all[i].ID != fromTimeline[i].ID {
				v.timelineBad++
				break
			}
		}
	}

	seen := map[string]bool{}
	answered := map[string]bool{}
	var calls []string
	var users []history.Message
	for i, m := range all {
		if seen[m.ID] {
			v.dupIDs++
		}
		seen[m.ID] = true
		switch m.Role {
		case history.RoleUser:
			users = append(users, m)
			if m.Steer && i > 0 && all[i-1].Role == history.RoleTool {
				v.midTurn++
			}
		case history.RoleAssistant:
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
		case history.RoleTool:
			answered[m.ToolCallID] = true
		}
	}
	for _, c := range calls {
		if !answered[c] {
			v.unanswered++
		}
	}

	// Every committed text, in order, exactly once; nothing else.
	var want []*loadText
	notCommitted := map[string]bool{}
	for _, lt := range ls.texts {
		switch {
		case lt.text == "":
		case lt.committed:
			want = append(want, lt)
		default:
			notCommitted[lt.text] = true
		}
	}
	j := 0
	for _, m := range users {
		if notCommitted[m.Text] {
			v.phantoms++
			continue
		}
		if j < len(want) && want[j].text == m.Text && want[j].steer == m.Steer {
			j++
			continue
		}
		v.lost++ // out of order, duplicated or unknown
	}
	v.lost += len(want) - j
}

func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestLoad runs many sessions on a SQLite file")
	}
	seed := *loadSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	n, ops := *loadSessions, *loadOps
	t.Logf("TestLoad: %d sessions x %d operations, seed %d (-load.seed to repeat)", n, ops, seed)

	goroutinesBefore := runtime.NumGoroutine()
	path := filepath.Join(t.TempDir(), "load.db")
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	storeOpen := true
	defer func() {
		if storeOpen {
			_ = store.Close()
		}
	}()
	prov := offline.New(offline.WithMaxSummaryChars(loadSummaryChars))

	start := time.Now()
	runs := make([]*loadSession, n)
	for i := range runs {
		s, err := session.New(context.Background(), session.Config{
			Provider:          prov,
			Store:             store,
			Tools:             []session.Tool{echoTool()},
			AutoCompactTokens: loadAutoCompactTokens,
		})
		require.NoError(t, err)
		runs[i] = &loadSession{idx: i, s: s, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
	}
	opened := time.Since(start)

	var wg sync.WaitGroup
	var peakMu sync.Mutex
	peak := runtime.NumGoroutine()
	stopPeak := make(chan struct{})
	var peakWG sync.WaitGroup
	peakWG.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopPeak:
				return
			case <-tick.C:
				g := runtime.NumGoroutine()
				peakMu.Lock()
				peak = max(peak, g)
				peakMu.Unlock()
			}
		}
	})
	for _, ls := range runs {
		closeBusy := ls.rng.IntN(4) == 0
		wg.Go(func() {
			defer func() { _ = ls.s.Close() }() // also if run panics
			ls.run(ops, closeBusy)
		})
	}
	wg.Wait()
	close(stopPeak)
	peakWG.Wait()
	elapsed := time.Since(start)

	var total loadStats
	var errs []string
	closedBusy := 0
	for _, ls := range runs {
		total.add(ls.stats)
		errs = append(errs, ls.errs...)
		if ls.closed {
			closedBusy++
		}
	}

	require.NoError(t, store.Close())
	storeOpen = false

	// Read everything back from a fresh store on the same file.
	reopened, err := sqlite.Open(path)
	require.NoError(t, err)
	var v loadVerify
	for _, ls := range runs {
		v.verify(t, reopened, ls)
	}
	require.NoError(t, reopened.Close())

	var goroutinesAfter int
	poll.Within(10*time.Second, func() bool {
		goroutinesAfter = runtime.NumGoroutine()
		return goroutinesAfter <= goroutinesBefore
	})

	t.Logf("wall time %v (opening %v); %.0f operations/s", elapsed.Round(time.Millisecond), opened.Round(time.Millisecond), float64(total.ops)/elapsed.Seconds())
	t.Logf("operations completed %d of %d; handles %d (prompts %d, steers %d, manual compactions %d: %d compacted, %d nothing to compact)",
		total.ops, n*ops, total.handles, total.prompts, total.steers, total.compacts, total.compacted, total.nothing)
	t.Logf("closed with work in flight: %d sessions, %d commands (%d ended as closed/cancelled)", closedBusy, total.inFlightClose, total.closedCommands)
	t.Logf("messages in store %d; segments %d (%d automatic); steers taken at a step checkpoint %d", v.messages, v.segments, v.autoSegs, v.midTurn)
	t.Logf("messages lost %d, phantom messages %d, duplicate IDs %d, unanswered tool calls %d, compactions left in progress %d, timelines differing %d",
		v.lost, v.phantoms, v.dupIDs, v.unanswered, v.inProgress, v.timelineBad)
	t.Logf("handles unfinished %d, unexpected results %d", total.unfinished, total.failures)
	t.Logf("goroutines before %d, peak %d, after Close %d", goroutinesBefore, peak, goroutinesAfter)
	for _, e := range errs {
		t.Log(e)
	}

	assert.Equal(t, n*ops, total.ops, "operations completed")
	assert.Zero(t, v.lost, "messages lost")
	assert.Zero(t, v.phantoms, "messages in history that their handle did not report")
	assert.Zero(t, v.dupIDs, "duplicate message IDs")
	assert.Zero(t, v.unanswered, "tool calls without results")
	assert.Zero(t, v.inProgress, "compactions left in progress")
	assert.Zero(t, v.timelineBad, "timelines that differ from Segments+Active")
	assert.Zero(t, total.unfinished, "handles unfinished")
	assert.Zero(t, total.failures, "unexpected results")
	assert.LessOrEqual(t, goroutinesAfter, goroutinesBefore, "goroutines after Close")
	if n*ops >= 100 {
		// With this many operations the random mix must have exercised
		// every path; a zero means the test lost its teeth.
		assert.Positive(t, v.autoSegs, "automatic compactions")
		assert.Positive(t, total.compacted, "manual compactions that compacted")
		assert.Positive(t, v.midTurn, "steers taken mid-turn")
	}
}
