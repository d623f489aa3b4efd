package session_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// openFork opens session id of store on fake.
func openFork(t *testing.T, store history.Store, fake *providertest.Fake, id string, cfg session.Config) *session.Session {
	t.Helper()
	cfg.ID, cfg.Store, cfg.Provider, cfg.Logger = id, store, fake, zaptest.NewLogger(t)
	s, err := session.Open(ctxT(t), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// forkStores are the stores the fork tests run on.
func forkStores(t *testing.T) map[string]func(t *testing.T) history.Store {
	return map[string]func(t *testing.T) history.Store{
		"memstore": func(t *testing.T) history.Store { return memstore.New() },
		"sqlite": func(t *testing.T) history.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
}

// TestFork_SeesTheSourceAtTheForkPoint: a fork made through the public API
// of a live source (open, leased on SQLite) is opened with Open and reads
// the source's history up to the fork point: at the newest entry it has the
// source's compaction (summary, Segment, recall into the archive), Uncompact
// undoes that inherited Segment in the fork only, Replay replays the
// inherited timeline; a message the source got later is never found by
// Search, Messages or recall in the fork; at an archived message the fork
// has that message Active and no compaction.
func TestFork_SeesTheSourceAtTheForkPoint(t *testing.T) {
	for name, open := range forkStores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			fake := providertest.New()
			src := newSession(t, fake, session.Config{Store: store, Recall: true})
			for _, turn := range [][2]string{
				{"We use the standard flag package, never cobra.", "Noted: flag, no cobra."},
				{"The release binary is built with -trimpath.", "Noted: -trimpath."},
				{"Add a -version flag.", "Added it."},
			} {
				fake.QueueTurn(providertest.Reply{Text: turn[1]})
				require.NoError(t, wait(t, mustPrompt(t, src, turn[0])).Err)
			}
			fake.QueueSummary(providertest.Reply{Text: "- building falcon"})
			res := wait(t, mustCompact(t, src, ""))
			require.True(t, res.Compacted, res.Error)
			srcActive, err := src.Active(ctxT(t))
			require.NoError(t, err)
			archived := res.Segment.Messages[0].ID

			// At the newest entry: the compaction is the fork's.
			f, err := session.Fork(ctxT(t), store, session.ForkRequest{From: src.ID(), Title: "try zebra"})
			require.NoError(t, err)
			require.NotEmpty(t, f.ID)
			// The source goes on: a message the fork must never see.
			fake.QueueTurn(providertest.Reply{Text: "Zebra stripes chosen."})
			require.NoError(t, wait(t, mustPrompt(t, src, "Use the zebra theme.")).Err)
			later, err := src.Active(ctxT(t))
			require.NoError(t, err)
			laterID := later[len(later)-1].ID

			fs := openFork(t, store, fake, f.ID, session.Config{Recall: true})
			active, err := fs.Active(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, texts(srcActive), texts(active))
			summary, err := fs.Summary(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, "- building falcon", summary)
			segs := storedSegments(t, fs)
			require.Len(t, segs, 1)
			assert.Equal(t, res.Segment.ID, segs[0].ID)
			assert.Equal(t, "try zebra", fs.Settings().Title)

			hits, err := fs.Search(ctxT(t), session.SearchRequest{Query: "zebra"})
			require.NoError(t, err)
			assert.Empty(t, hits, "the source's later messages are not the fork's")
			_, err = fs.Messages(ctxT(t), session.MessagesRequest{Around: laterID})
			assert.ErrorIs(t, err, session.ErrUnknownMessage)
			hits, err = fs.Search(ctxT(t), session.SearchRequest{Query: "cobra"})
			require.NoError(t, err)
			var found bool
			for _, h := range hits {
				if h.MessageID == archived {
					found = true
					assert.Equal(t, res.Segment.ID, h.SegmentID)
				}
			}
			assert.True(t, found, "the archived message is found in the fork")

			// recall in the fork reads the inherited archive.
			fake.QueueTurn(
				providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, fmt.Sprintf(`{"message_id":%q}`, archived))}},
				providertest.Reply{Text: "flag it is."},
			)
			turn := wait(t, mustPrompt(t, fs, "Which flag package?"))
			require.NoError(t, turn.Err)
			out := toolResults(turn.Messages)
			require.Len(t, out, 1)
			assert.Contains(t, out[0], "never cobra")

			// Replay: the inherited timeline, then the fork's turn.
			rep, err := fs.Replay(ctxT(t), session.ReplayOptions{})
			require.NoError(t, err)
			rep.Sub.Close()
			var kinds []string
			for _, ev := range rep.Events {
				switch ev.Payload.(type) {
				case *session.MessageEvent:
					kinds = append(kinds, "message")
				case *session.CompactionEvent:
					kinds = append(kinds, "compaction")
				}
			}
			assert.Equal(t, []string{"message", "message", "message", "message", "message", "message", "compaction",
				"message", "message", "message", "message"}, kinds)

			// Uncompact in the fork undoes the inherited Segment there only.
			u := mustUncompact(t, fs)
			require.NoError(t, u.Err)
			assert.Equal(t, res.Segment.ID, u.SegmentID)
			summary, err = fs.Summary(ctxT(t))
			require.NoError(t, err)
			assert.Empty(t, summary)
			summary, err = src.Summary(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, "- building falcon", summary, "the source keeps its compaction")
			assert.False(t, storedSegments(t, src)[0].Undone())
			srcHits, err := src.Search(ctxT(t), session.SearchRequest{Query: "flag package"})
			require.NoError(t, err)
			for _, h := range srcHits {
				assert.NotEqual(t, turn.Messages[0].ID, h.MessageID, "the fork's messages are not the source's")
			}

			// At an archived message: Active up to it, no compaction.
			g, err := session.Fork(ctxT(t), store, session.ForkRequest{From: src.ID(), At: archived, ID: "g-" + name})
			require.NoError(t, err)
			assert.Equal(t, "g-"+name, g.ID)
			gs := openFork(t, store, fake, g.ID, session.Config{})
			active, err = gs.Active(ctxT(t))
			require.NoError(t, err)
			require.Len(t, active, 1)
			assert.Equal(t, archived, active[0].ID)
			assert.Empty(t, storedSegments(t, gs))
		})
	}
}

// TestFork_BadInput: each bad request fails with its error and makes no
// session.
func TestFork_BadInput(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	src := newSession(t, fake, session.Config{Store: store})
	converse(t, src, fake, 1)
	other := newSession(t, fake, session.Config{Store: store})
	converse(t, other, fake, 1)
	otherActive, err := other.Active(ctxT(t))
	require.NoError(t, err)
	count := func() int {
		p, err := store.ListSessions(ctxT(t), history.ListOptions{})
		require.NoError(t, err)
		return len(p.Sessions)
	}
	n := count()
	for _, c := range []struct {
		name  string
		store history.Store
		req   session.ForkRequest
		is    []error
	}{
		{"no store", nil, session.ForkRequest{From: src.ID()}, []error{session.ErrInvalid}},
		{"no From", store, session.ForkRequest{}, []error{session.ErrInvalid}},
		{"unknown source", store, session.ForkRequest{From: "nobody"}, []error{history.ErrNotFound}},
		{"unknown message", store, session.ForkRequest{From: src.ID(), At: "nope"}, []error{history.ErrInvalid, history.ErrUnknownMessage}},
		{"message of another session", store, session.ForkRequest{From: src.ID(), At: otherActive[0].ID}, []error{history.ErrUnknownMessage}},
		{"ID exists", store, session.ForkRequest{From: src.ID(), ID: other.ID()}, []error{history.ErrExists}},
		{"ID is From", store, session.ForkRequest{From: src.ID(), ID: src.ID()}, []error{history.ErrInvalid}},
	} {
		_, err := session.Fork(ctxT(t), c.store, c.req)
		require.Error(t, err, c.name)
		for _, want := range c.is {
			assert.True(t, errors.Is(err, want), "%s: %v is not %v", c.name, err, want)
		}
	}
	// A compaction running in the source (recorded, not finished).
	snap, err := store.Load(ctxT(t), other.ID())
	require.NoError(t, err)
	require.NoError(t, other.Close())
	_, err = store.BeginCompaction(ctxT(t), other.ID(), snap.Version, history.CompactionRecord{CompactID: "run", Trigger: history.TriggerManual, Status: history.StatusInProgress})
	require.NoError(t, err)
	_, err = session.Fork(ctxT(t), store, session.ForkRequest{From: other.ID()})
	assert.ErrorIs(t, err, history.ErrForkInCompaction)
	assert.Equal(t, n, count(), "no failed fork made a session")
	// Before the running compaction's record the fork is fine.
	_, err = session.Fork(ctxT(t), store, session.ForkRequest{From: other.ID(), At: otherActive[1].ID})
	assert.NoError(t, err)
}
