package session_test

// Storage faults (issue "Reliability", item 3): a store that fails at each
// write point of a session (append, the compaction's begin record, the
// middle of the commit transaction, the end of the commit) and a full disk.
// After every fault the session reports the failure (or, for a write that
// landed, success), its memory equals the store, and it keeps working once
// the fault is gone.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// Write points of a store.
const (
	opAppend = "append"
	opConfig = "config"
	opBegin  = "begin"
	opFinish = "finish"
	opCommit = "commit"
)

var allWrites = []string{opAppend, opConfig, opBegin, opFinish, opCommit}

// writeFault makes writes of one kind fail.
type writeFault struct {
	err   error
	after bool // the write lands first, then err is reported
	skip  int  // let this many writes through first
	times int  // fail this many writes; 0 = every one
}

// flakyStore wraps a store and fails chosen writes, and optionally the next
// Loads. Unlike faultStore it covers every write and can target the n-th.
type flakyStore struct {
	history.Store
	mu        sync.Mutex
	faults    map[string]*writeFault
	calls     map[string]int
	failLoads int // the next failLoads Loads fail
}

func newFlaky(inner history.Store) *flakyStore {
	return &flakyStore{Store: inner, faults: map[string]*writeFault{}, calls: map[string]int{}}
}

func (f *flakyStore) fail(ops []string, wf writeFault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, op := range ops {
		c := wf
		f.faults[op] = &c
	}
}

// heal removes every fault.
func (f *flakyStore) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.faults)
	f.failLoads = 0
}

func (f *flakyStore) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// fault decides the fate of one write of op.
func (f *flakyStore) fault(op string) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	wf := f.faults[op]
	if wf == nil {
		return nil, false
	}
	if wf.skip > 0 {
		wf.skip--
		return nil, false
	}
	if wf.times > 0 {
		wf.times--
		if wf.times == 0 {
			delete(f.faults, op)
		}
	}
	return wf.err, wf.after
}

// do runs a write under the fault of op.
func do[T any](f *flakyStore, op string, write func() (T, error)) (T, error) {
	err, after := f.fault(op)
	var zero T
	if err != nil && !after {
		return zero, err
	}
	v, ierr := write()
	if err != nil && ierr == nil {
		return zero, err
	}
	return v, ierr
}

func (f *flakyStore) Load(ctx context.Context, id string) (*history.Snapshot, error) {
	f.mu.Lock()
	fail := f.failLoads > 0
	if fail {
		f.failLoads--
	}
	f.mu.Unlock()
	if fail {
		return nil, errDisk
	}
	return f.Store.Load(ctx, id)
}

func (f *flakyStore) Append(ctx context.Context, id string, v uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	return do(f, opAppend, func() (uint64, error) { return f.Store.Append(ctx, id, v, msgs, usage...) })
}

func (f *flakyStore) SetConfig(ctx context.Context, id string, v uint64, cfg json.RawMessage) (uint64, error) {
	return do(f, opConfig, func() (uint64, error) { return f.Store.SetConfig(ctx, id, v, cfg) })
}

func (f *flakyStore) RecordConfig(ctx context.Context, id string, v uint64, c history.ConfigChange) (uint64, *history.ConfigRecord, error) {
	type out struct {
		v   uint64
		rec *history.ConfigRecord
	}
	r, err := do(f, opConfig, func() (out, error) {
		nv, rec, err := f.Store.RecordConfig(ctx, id, v, c)
		return out{nv, rec}, err
	})
	return r.v, r.rec, err
}

func (f *flakyStore) BeginCompaction(ctx context.Context, id string, v uint64, rec history.CompactionRecord) (uint64, error) {
	return do(f, opBegin, func() (uint64, error) { return f.Store.BeginCompaction(ctx, id, v, rec) })
}

func (f *flakyStore) FinishCompaction(ctx context.Context, id string, v uint64, compactID string, status history.CompactionStatus, errText string, at time.Time) (uint64, error) {
	return do(f, opFinish, func() (uint64, error) {
		return f.Store.FinishCompaction(ctx, id, v, compactID, status, errText, at)
	})
}

func (f *flakyStore) CommitCompaction(ctx context.Context, id string, v uint64, c history.Commit) (uint64, *history.Segment, error) {
	type out struct {
		v   uint64
		seg *history.Segment
	}
	r, err := do(f, opCommit, func() (out, error) {
		nv, seg, err := f.Store.CommitCompaction(ctx, id, v, c)
		return out{nv, seg}, err
	})
	return r.v, r.seg, err
}

// errNoSpace is a full disk as the OS reports it.
var errNoSpace = fmt.Errorf("store: write: %w", &fs.PathError{Op: "write", Path: "/var/lib/sessionkit/sessions.db-wal", Err: syscall.ENOSPC})

// assertSame checks that the session's Active equals want and its memory
// equals its store.
func assertSame(t *testing.T, s *session.Session, want []string) {
	t.Helper()
	assert.Equal(t, want, activeTexts(t, s))
	sameAsStore(t, s)
}

func messageRoles(evs []session.Event) []string {
	var out []string
	for _, ev := range evs {
		if m, ok := ev.Payload.(*session.MessageEvent); ok {
			out = append(out, string(m.Message.Role))
		}
	}
	return out
}

// TestStoreFault_Append: each append of a turn fails before it lands (the
// user message, the assistant reply, a tool result) or after it landed. A
// failure ends the turn with the store's error; what landed is in memory
// and nothing else; no event reports a message the store does not hold.
func TestStoreFault_Append(t *testing.T) {
	cases := []struct {
		name    string
		fault   writeFault
		wantErr string   // "" = the turn succeeds
		added   []string // what the turn added to Active
		calls   int      // turn requests made
	}{
		{"user message", writeFault{err: errDisk, times: 1}, "store prompt", nil, 0},
		{"assistant reply", writeFault{err: errDisk, skip: 1, times: 1}, "store reply",
			[]string{"user:go"}, 1},
		{"tool result", writeFault{err: errDisk, skip: 2, times: 1}, "store tool result",
			// The turn ends; the call is answered so history stays valid.
			[]string{"user:go", "assistant:calling", "tool:error: tool echo did not run: the turn ended first"}, 1},
		{"reply landed, error reported", writeFault{err: errDisk, after: true, skip: 1, times: 1}, "",
			[]string{"user:go", "assistant:calling", "tool:echo {}", "assistant:done"}, 2},
		{"every write landed, errors reported", writeFault{err: errDisk, after: true}, "",
			[]string{"user:go", "assistant:calling", "tool:echo {}", "assistant:done"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := providertest.New()
			store := newFlaky(memstore.New())
			s := newSession(t, fake, session.Config{Store: store, Tools: []session.Tool{echoTool()}})
			converse(t, s, fake, 1)
			before := activeTexts(t, s)
			rec := record(t, s)
			// "go" calls the tool and its result ends the turn; anything
			// else is answered "ok".
			fake.SetDefault(func(r *provider.Request) providertest.Reply {
				last := r.Messages[len(r.Messages)-1]
				switch {
				case last.Role == history.RoleUser && last.Text == "go":
					return providertest.Reply{Text: "calling", ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}}
				case last.Role == history.RoleTool:
					return providertest.Reply{Text: "done"}
				}
				return providertest.Reply{Text: "ok"}
			})
			store.fail([]string{opAppend}, tc.fault)
			turns := fake.Calls(provider.PurposeTurn)
			res := wait(t, mustPrompt(t, s, "go"))
			if tc.wantErr == "" {
				require.NoError(t, res.Err)
			} else {
				require.ErrorIs(t, res.Err, errDisk)
				assert.Contains(t, res.Err.Error(), tc.wantErr)
			}
			assert.Equal(t, tc.calls, fake.Calls(provider.PurposeTurn)-turns)
			assertSame(t, s, plus(before, tc.added...))
			evs := rec.until(t, turnFinished)
			assert.Len(t, messageRoles(evs), len(tc.added), "one event per committed message")

			// The fault is gone: the session works again.
			store.heal()
			require.NoError(t, wait(t, mustPrompt(t, s, "again")).Err)
			assertSame(t, s, plus(before, append(tc.added, "user:again", "assistant:ok")...))
		})
	}
}

// TestStoreFault_CommitBegin: the in-progress record of a compaction cannot
// be written. compact_failed before any summary call; no action; history
// unchanged. When the record landed and the error was reported late, the
// compaction goes on and commits.
func TestStoreFault_CommitBegin(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("landed=%v", after), func(t *testing.T) {
			fake := providertest.New()
			store := newFlaky(memstore.New())
			s := newSession(t, fake, session.Config{Store: store})
			converse(t, s, fake, 2)
			before := activeTexts(t, s)
			rec := record(t, s)
			store.fail([]string{opBegin}, writeFault{err: errDisk, after: after, times: 1})
			fake.QueueSummary(providertest.Reply{Text: "S"})
			h := mustCompact(t, s, "")
			res := wait(t, h)
			if after {
				require.True(t, res.Compacted, res.Error)
				assertSame(t, s, before[2:])
				return
			}
			assertCompactFailedUnchanged(t, s, rec, h, res, before)
			assert.Contains(t, res.Error, "record compaction")
			assert.Contains(t, res.Error, errDisk.Error())
			assert.Zero(t, fake.Calls(provider.PurposeSummary), "no summary call without the in-progress record")
			// Commit, then emit: without its record the compaction is never
			// reported as started.
			evs := rec.until(t, func(evs []session.Event) bool {
				p := phases(evs, h.ID())
				return len(p) > 0 && p[len(p)-1] == session.PhaseFinished
			})
			assert.Equal(t, []session.Phase{session.PhaseQueued, session.PhaseFinished}, phases(evs, h.ID()))

			fake.QueueSummary(providertest.Reply{Text: "S"})
			require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
			assertSame(t, s, before[2:])
		})
	}
}

// openSQLite opens a real SQLite store in a temporary directory and returns
// it with its path. It is closed after the sessions on it.
func openSQLite(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}

// rawDB opens a second database/sql connection to the SQLite file at path.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.Ping())
	return db
}

// TestStoreFault_CommitMiddle: the commit transaction of the real SQLite
// store fails half-way. A trigger installed through a second connection
// aborts the transaction's update of the sessions row (its Active boundary
// and summary), after the compactions row was already marked completed in
// the same transaction; that update must roll back with it. The session
// reports compact_failed with running then failed actions; Active, the
// summary and the archive are unchanged and equal to the store; the attempt
// is recorded as failed; the session works again once the trigger is gone.
func TestStoreFault_CommitMiddle(t *testing.T) {
	st, path := openSQLite(t)
	db := rawDB(t, path)
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: st})
	converse(t, s, fake, 3)
	before := activeTexts(t, s)

	_, err := db.Exec(`CREATE TRIGGER fault_commit BEFORE UPDATE OF active_from ON sessions
		BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
	require.NoError(t, err)

	rec := record(t, s)
	fake.QueueSummary(providertest.Reply{Text: "a summary that never lands"})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.False(t, res.Success)
	assert.False(t, res.Compacted)
	assert.False(t, res.Cancelled)
	assert.Nil(t, res.Segment)
	assert.Contains(t, res.Error, "disk on fire")
	evs := rec.until(t, func(evs []session.Event) bool {
		p := phases(evs, h.ID())
		return len(p) > 0 && p[len(p)-1] == session.PhaseFinished
	})
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionFailed}, actions(evs))
	assert.Equal(t, []session.Phase{session.PhaseQueued, session.PhaseStarted, session.PhaseDelta, session.PhaseCommitting, session.PhaseFinished}, phases(evs, h.ID()))

	assertSame(t, s, before)
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, sum)
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, segs, "no segment")
	// The compactions row was rolled back with the rest of the
	// transaction: the later FinishCompaction found it in progress and
	// recorded the failure.
	var status, summary string
	var noSegment bool
	require.NoError(t, db.QueryRow(`SELECT status, summary, segment_id IS NULL FROM compactions WHERE compact_id = ?`, h.ID()).
		Scan(&status, &summary, &noSegment))
	assert.Equal(t, string(history.StatusFailed), status)
	assert.Empty(t, summary)
	assert.True(t, noSegment)
	rc := lastCompaction(t, s)
	assert.Equal(t, history.StatusFailed, rc.Status)
	assert.Contains(t, rc.Error, "disk on fire")

	// Appends do not touch the Active boundary: the session goes on working
	// while the trigger is installed...
	fake.QueueTurn(providertest.Reply{Text: "still here"})
	require.NoError(t, wait(t, mustPrompt(t, s, "hello")).Err)
	before = plus(before, "user:hello", "assistant:still here")
	assertSame(t, s, before)

	// ...and compacts again once it is dropped.
	_, err = db.Exec(`DROP TRIGGER fault_commit`)
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "second try"})
	res = wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assertSame(t, s, before[4:])
	sum, err = s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "second try", sum)
}

// TestStoreFault_CommitEnd: the commit transaction lands, then an error is
// reported (a lost acknowledgement). The session reads the store back, sees
// the commit, and reports compacted; memory equals the store, on the real
// SQLite store.
func TestStoreFault_CommitEnd(t *testing.T) {
	st, _ := openSQLite(t)
	store := newFlaky(st)
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 2)
	before := activeTexts(t, s)
	rec := record(t, s)
	store.fail([]string{opCommit}, writeFault{err: errDisk, after: true, times: 1})
	fake.QueueSummary(providertest.Reply{Text: "landed"})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	require.True(t, res.Compacted, res.Error)
	assert.True(t, res.Success)
	assert.Equal(t, session.ReasonCompacted, res.Reason)
	require.NotNil(t, res.Segment)
	assert.Equal(t, "landed", res.Segment.Summary)
	assert.Equal(t, before[:2], texts(res.Segment.Messages))
	evs := rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionCompleted}, actions(evs))
	assertSame(t, s, before[2:])
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "landed", sum)
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	assert.Equal(t, res.Segment.ID, segs[0].ID)
	// The result's Segment is the one the store holds (one builder,
	// storekit.CommittedSegment), messages aside.
	stored := segs[0]
	stored.Messages = res.Segment.Messages
	assert.Equal(t, stored.Position, res.Segment.Position, "position")
	assert.WithinDuration(t, stored.CreatedAt, res.Segment.CreatedAt, time.Millisecond, "created at")
	assert.Zero(t, store.count(opFinish), "a landed commit is not finished again")
	assert.Equal(t, history.StatusCompleted, lastCompaction(t, s).Status)

	fake.QueueTurn(providertest.Reply{Text: "after"})
	require.NoError(t, wait(t, mustPrompt(t, s, "next")).Err)
	assertSame(t, s, plus(before[2:], "user:next", "assistant:after"))
}

// TestStoreFault_DiskFull: every write fails with ENOSPC before it lands.
// Each command reports the failure (errors.Is ENOSPC for turns, steers and
// configures; compact_failed for compactions) and the session stays equal
// to the store; when the disk frees it works again.
func TestStoreFault_DiskFull(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 2)
	before := activeTexts(t, s)
	calls := len(fake.Requests())

	store.fail(allWrites, writeFault{err: errNoSpace})

	tr := wait(t, mustPrompt(t, s, "full?"))
	require.ErrorIs(t, tr.Err, syscall.ENOSPC)
	assertSame(t, s, before)

	sh, err := s.Steer(context.Background(), session.SteerRequest{Text: "steer"})
	require.NoError(t, err)
	assert.ErrorIs(t, wait(t, sh).Err, syscall.ENOSPC)
	assertSame(t, s, before)

	sys := "new system prompt"
	ch, err := s.Configure(context.Background(), session.ConfigureRequest{SystemPrompt: &sys})
	require.NoError(t, err)
	assert.ErrorIs(t, wait(t, ch).Err, syscall.ENOSPC)

	res := wait(t, mustCompact(t, s, ""))
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.Contains(t, res.Error, syscall.ENOSPC.Error())
	assertSame(t, s, before)
	assert.Len(t, fake.Requests(), calls, "no provider call on a full disk")

	// The disk frees: everything works, and the configure that failed did
	// not apply.
	store.heal()
	fake.QueueTurn(providertest.Reply{Text: "room again"})
	require.NoError(t, wait(t, mustPrompt(t, s, "free?")).Err)
	reqs := fake.Requests()
	assert.Empty(t, reqs[len(reqs)-1].System, "the failed configure did not apply")
	fake.QueueSummary(providertest.Reply{Text: "S"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	assertSame(t, s, plus(before, "user:free?", "assistant:room again")[3:])
}

// TestStoreFault_DiskFullMidTurn: the disk fills after the user message
// landed. The reply cannot be stored: the turn fails with ENOSPC and Active
// holds the user message only; no assistant message event.
func TestStoreFault_DiskFullMidTurn(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 1)
	before := activeTexts(t, s)
	rec := record(t, s)
	store.fail([]string{opAppend}, writeFault{err: errNoSpace, skip: 1})
	fake.QueueTurn(providertest.Reply{Text: "lost to the full disk"})
	res := wait(t, mustPrompt(t, s, "write this"))
	require.ErrorIs(t, res.Err, syscall.ENOSPC)
	assertTurnFailedKeepingPrompt(t, s, rec, res, before, "write this")

	store.heal()
	fake.QueueTurn(providertest.Reply{Text: "stored"})
	require.NoError(t, wait(t, mustPrompt(t, s, "again")).Err)
	assertSame(t, s, plus(before, "user:write this", "user:again", "assistant:stored"))
}

// TestStoreFault_DiskFullAtCommit: the disk fills between the in-progress
// record and the commit, so the commit and the record of its failure both
// fail. compact_failed with running then failed actions; history
// unchanged and equal to the store; the attempt stays in progress in the
// store and a reopened session records it as interrupted.
func TestStoreFault_DiskFullAtCommit(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{ID: "full", Store: store})
	converse(t, s, fake, 2)
	before := activeTexts(t, s)
	rec := record(t, s)
	store.fail([]string{opCommit, opFinish, opAppend}, writeFault{err: errNoSpace})
	fake.QueueSummary(providertest.Reply{Text: "no room for me"})
	h := mustCompact(t, s, "")
	res := wait(t, h)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	assert.False(t, res.Cancelled)
	assert.Contains(t, res.Error, "commit compaction")
	assert.Contains(t, res.Error, syscall.ENOSPC.Error())
	evs := rec.until(t, func(evs []session.Event) bool { return len(actions(evs)) == 2 })
	assert.Equal(t, []session.ActionStatus{session.ActionRunning, session.ActionFailed}, actions(evs))
	assertSame(t, s, before)
	sum, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, sum)
	snap, err := store.Load(ctxT(t), s.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{h.ID()}, snap.Interrupted, "its failure could not be recorded")

	// The disk frees: the session compacts again.
	store.heal()
	fake.QueueSummary(providertest.Reply{Text: "S"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	assertSame(t, s, before[2:])
	require.NoError(t, s.Close())

	// Reopened, the attempt left in progress is recorded as failed.
	newSession(t, fake, session.Config{ID: "full", Store: store})
	tl, err := store.Timeline(ctxT(t), "full")
	require.NoError(t, err)
	var found bool
	for _, e := range tl {
		if e.Compaction != nil && e.Compaction.CompactID == h.ID() {
			found = true
			assert.Equal(t, history.StatusFailed, e.Compaction.Status)
			assert.Equal(t, history.InterruptedError, e.Compaction.Error)
		}
	}
	assert.True(t, found)
}

// TestStoreFault_ToolResultDiskFull: the disk fills when a tool result is to
// be written and stays full until the turn has ended, so neither the result
// nor endTurn's "did not run" answer can be stored. Once the disk frees, no
// provider request may carry a tool call without its result (docs/design.md §1,
// docs/session.md: history never holds a tool call without its answer;
// OpenAI-compatible servers reject such a request with 400).
func TestStoreFault_ToolResultDiskFull(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{Store: store, Tools: []session.Tool{echoTool()}})
	converse(t, s, fake, 1)
	fake.QueueTurn(providertest.Reply{Text: "calling", ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}})
	store.fail([]string{opAppend}, writeFault{err: errNoSpace, skip: 2}) // user and reply land, then full
	res := wait(t, mustPrompt(t, s, "go"))
	require.ErrorIs(t, res.Err, syscall.ENOSPC)
	sameAsStore(t, s)

	store.heal()
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	require.NoError(t, wait(t, mustPrompt(t, s, "next")).Err)
	sameAsStore(t, s)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	answered := map[string]bool{}
	for _, m := range last.Messages {
		if m.Role == history.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	for _, m := range last.Messages {
		for _, tc := range m.ToolCalls {
			assert.True(t, answered[tc.ID], "tool call %s is sent without its result: %v", tc.ID, texts(last.Messages))
		}
	}
}

// TestStoreFault_CommitLandedReadBackFails: the commit lands, an error is
// reported, and the read-back right after it fails too (one failed Load).
// Whatever the result, memory must equal the store afterwards, and the next
// provider request must be built from the compacted history (docs/design.md
// §4.7, writer.go: a write that landed counts as done).
func TestStoreFault_CommitLandedReadBackFails(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 2)
	before := activeTexts(t, s)
	store.fail([]string{opCommit}, writeFault{err: errDisk, after: true, times: 1})
	store.mu.Lock()
	store.failLoads = 1
	store.mu.Unlock()
	fake.QueueSummary(providertest.Reply{Text: "landed"})
	res := wait(t, mustCompact(t, s, ""))
	segs, err := s.Segments(ctxT(t))
	require.NoError(t, err)
	require.Len(t, segs, 1, "the commit landed")
	sameAsStore(t, s)
	assert.True(t, res.Compacted, "the commit landed, yet the result is %s: %s", res.Reason, res.Error)

	fake.QueueTurn(providertest.Reply{Text: "after"})
	require.NoError(t, wait(t, mustPrompt(t, s, "next")).Err)
	sameAsStore(t, s)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, "landed", last.Summary)
	assert.Equal(t, plus(before[2:], "user:next"), texts(last.Messages), "archived messages are not sent again")
}

// TestStoreFault_AppendLandedReadBackFails: the reply lands, an error is
// reported, and the read-back fails too, so the session cannot know. The
// turn fails; as writer.go documents, the next write then meets a conflict
// (or succeeds) and the session adopts the store. Nothing is lost or
// duplicated and the session works again.
func TestStoreFault_AppendLandedReadBackFails(t *testing.T) {
	fake := providertest.New()
	store := newFlaky(memstore.New())
	s := newSession(t, fake, session.Config{Store: store})
	converse(t, s, fake, 1)
	before := activeTexts(t, s)
	store.fail([]string{opAppend}, writeFault{err: errDisk, after: true, skip: 1, times: 1})
	store.mu.Lock()
	store.failLoads = 1
	store.mu.Unlock()
	fake.QueueTurn(providertest.Reply{Text: "landed reply"})
	res := wait(t, mustPrompt(t, s, "p"))
	require.ErrorIs(t, res.Err, errDisk)

	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	res = wait(t, mustPrompt(t, s, "p2"))
	want := plus(before, "user:p", "assistant:landed reply")
	if res.Err != nil {
		require.ErrorIs(t, res.Err, history.ErrConflict)
	} else {
		want = plus(want, "user:p2", "assistant:ok")
	}
	assertSame(t, s, want)
	require.NoError(t, wait(t, mustPrompt(t, s, "p3")).Err)
	assertSame(t, s, plus(want, "user:p3", "assistant:ok"))
}
