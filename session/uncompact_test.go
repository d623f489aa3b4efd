package session_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

func mustUncompact(t *testing.T, s *session.Session) session.UncompactResult {
	t.Helper()
	h, err := s.Uncompact(ctxT(t), session.UncompactRequest{})
	require.NoError(t, err)
	return wait(t, h)
}

// TestUncompact_AfterOneCompaction: the Segment's messages go back to the
// front of Active, the retained summary becomes "" again, the Segment stays
// in the archive marked undone, and a second Uncompact has nothing to undo.
func TestUncompact_AfterOneCompaction(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	before, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	rec := record(t, s)

	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, res.Segment.ID, u.SegmentID)
	assert.Equal(t, 2, u.Restored)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(before), texts(active))
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	sameAsStore(t, s)
	segs := storedSegments(t, s)
	require.Len(t, segs, 1)
	assert.True(t, segs[0].Undone())
	assert.Len(t, segs[0].Messages, 2, "an undone Segment keeps its messages")

	evs := rec.until(t, func(evs []session.Event) bool {
		for _, ev := range evs {
			if _, ok := ev.Payload.(*session.UncompactEvent); ok {
				return true
			}
		}
		return false
	})
	var ue *session.UncompactEvent
	for _, ev := range evs {
		if p, ok := ev.Payload.(*session.UncompactEvent); ok {
			ue = p
		}
	}
	assert.Equal(t, res.Segment.ID, ue.SegmentID)
	assert.Equal(t, 2, ue.Restored)
	assert.NotEqual(t, session.NoPosition, ue.Position)

	again := mustUncompact(t, s)
	require.ErrorIs(t, again.Err, history.ErrNothingToUndo)
	sameAsStore(t, s)

	// The restored messages are Active: they are sent and can be compacted
	// again.
	converse(t, s, fake, 1)
	last := fake.Requests()[len(fake.Requests())-1]
	assert.Equal(t, append(texts(before), "user:prompt a"), texts(last.Messages))
	fake.QueueSummary(providertest.Reply{Text: "S again"})
	res = wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	assert.Len(t, storedSegments(t, s), 2)
}

// TestUncompact_AfterTwoCompactions: undoing the second compaction brings
// back the first one's summary; undoing again brings back everything.
func TestUncompact_AfterTwoCompactions(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	all, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	first := wait(t, mustCompact(t, s, ""))
	require.True(t, first.Compacted)
	converse(t, s, fake, 1)
	afterFirst, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S2"})
	second := wait(t, mustCompact(t, s, ""))
	require.True(t, second.Compacted)

	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, second.Segment.ID, u.SegmentID)
	active, err := s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(afterFirst), texts(active))
	summary, err := s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, "S1", summary, "the summary before it")
	sameAsStore(t, s)

	u = mustUncompact(t, s)
	require.NoError(t, u.Err)
	assert.Equal(t, first.Segment.ID, u.SegmentID)
	active, err = s.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(all), texts(active[:len(all)]))
	assert.Len(t, active, 6)
	summary, err = s.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	segs := storedSegments(t, s)
	require.Len(t, segs, 2)
	assert.True(t, segs[0].Undone())
	assert.True(t, segs[1].Undone())
	sameAsStore(t, s)
}

// TestUncompact_DuringTurnAtCheckpoint: Uncompact is a checkpoint command:
// queued during a turn it runs at the next step checkpoint, and the next
// provider request sees the restored messages.
func TestUncompact_DuringTurnAtCheckpoint(t *testing.T) {
	fake := providertest.New()
	started, release := make(chan struct{}, 1), make(chan struct{})
	s := newSession(t, fake, session.Config{Tools: []session.Tool{blockTool(started, release)}})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("b1", "block", `{}`)}}, providertest.Reply{Text: "done"})
	h := mustPrompt(t, s, "go")
	<-started
	uh, err := s.Uncompact(ctxT(t), session.UncompactRequest{})
	require.NoError(t, err)
	close(release)
	require.NoError(t, wait(t, h).Err)
	require.NoError(t, wait(t, uh).Err)
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	require.Equal(t, provider.PurposeTurn, last.Purpose)
	assert.Empty(t, last.Summary, "the summary is undone")
	assert.Equal(t, "user:prompt a", texts(last.Messages)[0], "the restored messages lead")
}

// TestUncompact_Replay: a Replay yields the undo at its position, after
// the compaction it undid.
func TestUncompact_Replay(t *testing.T) {
	fake := providertest.New()
	s := newSession(t, fake, session.Config{})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted)
	require.NoError(t, mustUncompact(t, s).Err)
	converse(t, s, fake, 1)

	rep, err := s.Replay(ctxT(t), session.ReplayOptions{})
	require.NoError(t, err)
	defer rep.Sub.Close()
	var kinds []string
	var last int64 = -1
	for _, ev := range rep.Events {
		var pos int64
		switch p := ev.Payload.(type) {
		case *session.MessageEvent:
			kinds, pos = append(kinds, "message"), p.Position
		case *session.CompactionEvent:
			kinds, pos = append(kinds, "compaction"), p.Position
		case *session.UncompactEvent:
			kinds, pos = append(kinds, "uncompact"), p.Position
			assert.Equal(t, res.Segment.ID, p.SegmentID)
			assert.Equal(t, res.CompactID, p.CompactID)
			assert.Equal(t, 2, p.Restored)
		case *session.SettingsEvent:
			continue // the title, right after the first message: no position of its own
		}
		assert.Greater(t, pos, last, "in position order")
		last = pos
	}
	assert.Equal(t, []string{"message", "message", "message", "message", "compaction", "uncompact", "message", "message"}, kinds)
}

// TestUncompact_SQLiteReopen: on the SQLite store (through its lease) the
// undo is durable: a session opened again has the restored Active, the
// summary before it and the undone Segment.
func TestUncompact_SQLiteReopen(t *testing.T) {
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := providertest.New()
	s := newSession(t, fake, session.Config{ID: "undo", Store: store})
	converse(t, s, fake, 2)
	all, err := s.Active(ctxT(t))
	require.NoError(t, err)
	fake.QueueSummary(providertest.Reply{Text: "S1"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	u := mustUncompact(t, s)
	require.NoError(t, u.Err)
	require.NoError(t, s.Close())

	s2, err := session.Open(ctxT(t), session.Config{ID: "undo", Store: store, Provider: fake})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s2.Close() })
	active, err := s2.Active(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, texts(all), texts(active))
	summary, err := s2.Summary(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, summary)
	segs := storedSegments(t, s2)
	require.Len(t, segs, 1)
	assert.True(t, segs[0].Undone())
	assert.Equal(t, u.SegmentID, segs[0].ID)
}

// ctxFigure is a context figure a session reports (Session.ContextTokens).
type ctxFigure struct {
	Tokens    int
	Estimated bool
}

// reopener holds a session on a store, to read its context live and
// again after opening it anew.
type reopener struct {
	t     *testing.T
	fake  *providertest.Fake
	store history.Store
	s     *session.Session
}

// live is what the open session reports of its context.
func (r *reopener) live() ctxFigure {
	r.t.Helper()
	n, est, err := r.s.ContextTokens(ctxT(r.t))
	require.NoError(r.t, err)
	return ctxFigure{n, est}
}

// reopen closes the session, opens it again on the same store and
// returns what it reports there, which must be what Replay reports too.
func (r *reopener) reopen() ctxFigure {
	r.t.Helper()
	id := r.s.ID()
	require.NoError(r.t, r.s.Close())
	s, err := session.Open(ctxT(r.t), session.Config{ID: id, Provider: r.fake, Store: r.store})
	require.NoError(r.t, err)
	r.t.Cleanup(func() { _ = s.Close() })
	r.s = s
	got := r.live()
	n, est := contextOf(r.t, s)
	assert.Equal(r.t, got, ctxFigure{n, est}, "Replay reports what ContextTokens does")
	return got
}

// agree asserts that the live session reports want and that the session
// opened again reports the same.
func (r *reopener) agree(want ctxFigure, msg string) {
	r.t.Helper()
	assert.Equal(r.t, want, r.live(), "live: "+msg)
	assert.Equal(r.t, want, r.reopen(), "reopened: "+msg)
}

// turn runs a prompt whose response reports in+out tokens.
func (r *reopener) turn(in, out int) {
	r.t.Helper()
	r.fake.QueueTurn(providertest.Reply{Text: "sized", Usage: provider.Usage{InputTokens: in, OutputTokens: out}})
	require.NoError(r.t, wait(r.t, mustPrompt(r.t, r.s, "how big?")).Err)
}

// compact runs a compaction that must commit.
func (r *reopener) compact(summary string) session.CompactResult {
	r.t.Helper()
	r.fake.QueueSummary(providertest.Reply{Text: summary, Usage: provider.Usage{InputTokens: 5000, OutputTokens: 3}})
	res := wait(r.t, mustCompact(r.t, r.s, ""))
	require.True(r.t, res.Compacted, res.Error)
	require.Positive(r.t, res.ContextAfter)
	return res
}

// uncompact undoes the newest compaction, which must be seg.
func (r *reopener) uncompact(seg *history.Segment) {
	r.t.Helper()
	u := mustUncompact(r.t, r.s)
	require.NoError(r.t, u.Err)
	require.Equal(r.t, seg.ID, u.SegmentID)
}

// forEachStore runs f on a new session with a conversation behind it, in
// every store.
func forEachStore(t *testing.T, f func(r *reopener)) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			fake := providertest.New()
			r := &reopener{t: t, fake: fake, store: newStore()}
			r.s = newSession(t, fake, session.Config{Store: r.store})
			converse(t, r.s, fake, 4)
			f(r)
		})
	}
}

// TestUncompact_ContextIsTheTurnsAgain: an Uncompact of the only
// compaction after a turn response brings back that response's figure,
// not an estimate, live as a reopened session reports it (it was 0 live
// until the next turn response).
func TestUncompact_ContextIsTheTurnsAgain(t *testing.T) {
	forEachStore(t, func(r *reopener) {
		r.turn(700, 42)
		a := r.compact("A")
		r.agree(ctxFigure{a.ContextAfter, true}, "after the compaction")
		r.uncompact(a.Segment)
		r.agree(ctxFigure{742, false}, "after the Uncompact")
	})
}

// TestUncompact_ContextIsTheLatestTurns: turn, compaction A, turn,
// compaction B, Uncompact of B: the second turn's figure, not the first
// one's nor A's estimate (A came before that turn; the session was opened
// again in between, so A is a Segment from the process before).
func TestUncompact_ContextIsTheLatestTurns(t *testing.T) {
	forEachStore(t, func(r *reopener) {
		r.turn(700, 42)
		a := r.compact("A")
		require.Equal(t, ctxFigure{a.ContextAfter, true}, r.reopen())
		r.turn(300, 1)
		b := r.compact("B")
		r.uncompact(b.Segment)
		r.agree(ctxFigure{301, false}, "after undoing B")
	})
}

// TestUncompact_ContextIsTheStandingEstimate: turn, compaction A,
// compaction B, Uncompact of B: A still stands and came after the turn, so
// the figure is A's estimate; undoing A too (in the session opened again,
// whose Segments came from the process before) brings back the turn's.
// Once more with the session opened again before the first Uncompact.
func TestUncompact_ContextIsTheStandingEstimate(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		t.Run(map[bool]string{false: "live", true: "reopened"}[reopen], func(t *testing.T) {
			forEachStore(t, func(r *reopener) {
				r.turn(700, 42)
				a := r.compact("A")
				b := r.compact("B")
				if reopen {
					require.Equal(t, ctxFigure{b.ContextAfter, true}, r.reopen())
				}
				r.uncompact(b.Segment)
				r.agree(ctxFigure{a.ContextAfter, true}, "after undoing B")
				r.uncompact(a.Segment)
				r.agree(ctxFigure{742, false}, "after undoing A")
			})
		})
	}
}
