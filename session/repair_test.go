package session_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// readCounter is a store that records how much each read returns and
// each LogEvents writes, and which whole-session reads were made.
type readCounter struct {
	*memstore.Store
	mu         sync.Mutex
	maxEntries int // the most entries one Entries call returned
	maxBatch   int // the most events one LogEvents call wrote
	batches    int // LogEvents calls
	whole      []string
}

func (c *readCounter) Entries(ctx context.Context, id string, q history.EntryQuery) ([]history.Entry, error) {
	es, err := c.Store.Entries(ctx, id, q)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !q.Records {
		c.maxEntries = max(c.maxEntries, len(es))
	}
	return es, err
}

func (c *readCounter) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	c.mu.Lock()
	c.maxBatch, c.batches = max(c.maxBatch, len(b.Events)), c.batches+1
	c.mu.Unlock()
	return c.Store.LogEvents(ctx, id, b)
}

func (c *readCounter) Timeline(ctx context.Context, id string) ([]history.Entry, error) {
	c.note("Timeline")
	return c.Store.Timeline(ctx, id)
}

func (c *readCounter) Segments(ctx context.Context, id string) ([]history.Segment, error) {
	c.note("Segments")
	return c.Store.Segments(ctx, id)
}

func (c *readCounter) note(read string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.whole = append(c.whole, read)
}

// TestOpen_LogsUnloggedEntriesInBatches: the first open of a session
// filled through the store (no event in its log) logs the events of its
// entries in batches of at most session.RepairBatch positions, reading
// the timeline by those ranges, never whole, nor the archive with its
// messages; the replay then has every entry once, the title right after
// the first message and the compaction with its Segment.
func TestOpen_LogsUnloggedEntriesInBatches(t *testing.T) {
	ctx := ctxT(t)
	n := 2*session.RepairBatch + 10
	st := &readCounter{Store: memstore.New()}
	first := history.Message{ID: "m0", Role: history.RoleUser, Text: "first question"}
	snap, err := st.Create(ctx, history.NewSession{ID: "s", Title: history.DefaultTitle(first.Text)})
	require.NoError(t, err)
	msgs := []history.Message{first}
	for j := 1; j < n; j++ {
		role := history.RoleUser
		if j%2 == 1 {
			role = history.RoleAssistant
		}
		msgs = append(msgs, history.Message{ID: fmt.Sprintf("m%d", j), Role: role, Text: fmt.Sprintf("message %d", j)})
	}
	v, err := st.Append(ctx, "s", snap.Version, msgs)
	require.NoError(t, err)
	v, err = st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c", Trigger: history.TriggerManual, Status: history.StatusInProgress})
	require.NoError(t, err)
	_, _, err = st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c", SegmentID: "g", Archive: n / 2, Summary: "S"})
	require.NoError(t, err)

	s, err := session.Open(ctx, session.Config{ID: "s", Provider: providertest.New(), Store: st})
	require.NoError(t, err)
	defer s.Close()
	st.mu.Lock()
	assert.Empty(t, st.whole, "no read of the whole timeline or archive")
	assert.LessOrEqual(t, st.maxEntries, session.RepairBatch, "entries read at a time")
	assert.LessOrEqual(t, st.maxBatch, session.RepairBatch+1, "events logged at a time (a batch's entries and the title)")
	assert.Equal(t, 3, st.batches, "one batch per %d positions", session.RepairBatch)
	st.mu.Unlock()
	loaded, err := st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, loaded.NextPosition, loaded.LogCovers, "the log covers the timeline")

	rep, err := s.Replay(ctx, session.ReplayOptions{})
	require.NoError(t, err)
	rep.Sub.Close()
	require.Len(t, rep.Events, n+2, "every message, the title and the compaction")
	for i, ev := range rep.Events {
		switch p := ev.Payload.(type) {
		case *session.MessageEvent:
			want := int64(i)
			if i > 1 {
				want-- // after the title
			}
			assert.Equal(t, want, p.Position, "event %d", i)
		case *session.SettingsEvent:
			assert.Equal(t, 1, i, "the title right after the first message")
			assert.Equal(t, []string{"Title"}, p.Changed)
		case *session.CompactionEvent:
			assert.Equal(t, n+1, i, "the compaction last")
			require.NotNil(t, p.Result.Segment)
			assert.Equal(t, "g", p.Result.Segment.ID, "with its Segment as stored")
			assert.Empty(t, p.Result.Segment.Messages)
		default:
			t.Fatalf("event %d: %T", i, p)
		}
	}
}

// TestReplay_ReadsTheEntriesItsEventsName: a replay after a sequence
// number near the end reads from the store the entries its logged events
// name, not the timeline.
func TestReplay_ReadsTheEntriesItsEventsName(t *testing.T) {
	ctx := ctxT(t)
	st := &readCounter{Store: memstore.New()}
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: st})
	converse(t, s, fake, 10)
	id := s.ID()
	require.NoError(t, s.Close())

	s, err := session.Open(ctx, session.Config{ID: id, Provider: fake, Store: st})
	require.NoError(t, err)
	defer s.Close()
	all, err := s.Replay(ctx, session.ReplayOptions{})
	require.NoError(t, err)
	all.Sub.Close()
	require.Equal(t, 20, countMessages(all.Events))
	st.mu.Lock()
	st.maxEntries, st.whole = 0, nil
	st.mu.Unlock()

	after := all.Events[len(all.Events)-3].Seq
	rep, err := s.Replay(ctx, session.ReplayOptions{After: after})
	require.NoError(t, err)
	rep.Sub.Close()
	assert.Equal(t, all.Events[len(all.Events)-2:], rep.Events)
	st.mu.Lock()
	defer st.mu.Unlock()
	assert.Empty(t, st.whole, "no read of the whole timeline")
	assert.LessOrEqual(t, st.maxEntries, 2, "the entries of the two messages replayed")
}
