package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// TestLoad_ConcurrentReaders: Loads in many goroutines at once, while one
// writer appends, each read one snapshot through a raw reader of its own:
// every snapshot's Active holds exactly the messages of its version, in
// order, with their bodies whole. Run with -race: a reader shared by two
// goroutines (a pool that hands one out twice) corrupts SQLite's
// connection, which has no mutex of its own.
func TestLoad_ConcurrentReaders(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), WithReadConns(3))
	snap, err := s.Create(ctx, history.NewSession{ID: "a", Config: []byte(`{"k":1}`)})
	require.NoError(t, err)
	base := snap.Version
	text := func(i int) string { return fmt.Sprintf("message %d %0300d", i, i) }

	const appends, readers = 60, 8
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			for loads := 0; ; loads++ {
				select {
				case <-done:
					if loads > 0 {
						return
					}
				default:
				}
				got, err := s.Load(ctx, "a")
				if err != nil {
					errs <- err
					return
				}
				if n := int(got.Version - base); len(got.Active) != n {
					errs <- fmt.Errorf("version %d holds %d messages, want %d", got.Version, len(got.Active), n)
					return
				}
				for i, m := range got.Active {
					if m.Text != text(i) || m.ID != fmt.Sprint("m", i) {
						errs <- fmt.Errorf("message %d of version %d: %q %q", i, got.Version, m.ID, m.Text)
						return
					}
				}
				if string(got.Config) != `{"k":1}` {
					errs <- fmt.Errorf("config %q", got.Config)
					return
				}
			}
		})
	}
	v := base
	for i := range appends {
		v, err = s.Append(ctx, "a", v, []history.Message{{ID: fmt.Sprint("m", i), Role: history.RoleUser, Text: text(i), CreatedAt: time.Now()}})
		require.NoError(t, err)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLoad_RawReaderErrors: a Load whose context is done, before it starts
// or while it reads the rows, fails with the context's error, one of a session that is not there with ErrNotFound, one
// after Close with ErrClosed; the readers stay usable after each failure.
func TestLoad_RawReaderErrors(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	msgs := make([]history.Message, 3000)
	for i := range msgs {
		msgs[i] = history.Message{ID: fmt.Sprint("m", i), Role: history.RoleUser, Text: "x", CreatedAt: time.Now()}
	}
	_, err = s.Append(ctx, "a", snap.Version, msgs)
	require.NoError(t, err)

	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Load(done, "a")
	assert.ErrorIs(t, err, context.Canceled)

	// A context that ends while the rows are read: Load stops between
	// them and returns no snapshot.
	mid := &endsAfter{Context: ctx}
	mid.left.Store(1) // admit's check passes, the one between rows does not
	got, err := s.Load(mid, "a")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, got)

	_, err = s.Load(ctx, "nobody")
	assert.ErrorIs(t, err, history.ErrNotFound)

	got, err = s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Len(t, got.Active, 3000)

	require.NoError(t, s.Close())
	_, err = s.Load(ctx, "a")
	assert.True(t, errors.Is(err, history.ErrClosed), "%v", err)
}

// endsAfter is a context whose Err is nil for its first left calls and
// context.Canceled after.
type endsAfter struct {
	context.Context
	left atomic.Int32
}

func (c *endsAfter) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestRawStatementsStayPrepared: searches (with neighbours, over indexed
// messages, a tail and standing Segments), windows and loads, each run
// again with other values, prepare each statement of the raw readers
// once. A statement SQLite marks to be prepared again after a new binding
// (a plan that looked at a bound value: see openRawReader) would pay the
// parse on every use.
func TestRawStatementsStayPrepared(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), WithReadConns(1), withIndexBound(20), withoutIdleIndex())
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	msgs := historytest.SearchCorpus(60, 1)
	v, err := s.Append(ctx, "a", snap.Version, msgs)
	require.NoError(t, err)
	v, err = s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "c", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(t, err)
	_, _, err = s.CommitCompaction(ctx, "a", v, history.Commit{CompactID: "c", SegmentID: "seg", Archive: 20, Summary: "S", At: time.Now()})
	require.NoError(t, err)
	reads := func(i int, q string) {
		p, err := s.Search(ctx, "a", history.SearchQuery{Text: q, Neighbors: 1 + i%2, Limit: 3 + i})
		require.NoError(t, err)
		require.NotEmpty(t, p.Hits, q)
		_, err = s.Window(ctx, "a", history.WindowQuery{Around: msgs[10*i+5].ID, Before: 1 + i, After: 2 + i})
		require.NoError(t, err)
		_, err = s.Load(ctx, "a")
		require.NoError(t, err)
	}
	reprepared := func() map[string]int32 {
		s.raw.mu.Lock()
		defer s.raw.mu.Unlock()
		require.Len(t, s.raw.idle, 1, "one reader did every read")
		r := s.raw.idle[0]
		out := map[string]int32{}
		for query, p := range r.stmts {
			out[query] = sqlite3.Xsqlite3_stmt_status(r.tls, p, sqlite3.SQLITE_STMTSTATUS_REPREPARE, 0)
		}
		return out
	}
	queries := historytest.SearchQueries(msgs, 4, 7)
	reads(0, queries[0]) // a first use may prepare again once, as the connection reads the schema
	before := reprepared()
	for i := 1; i < len(queries); i++ {
		reads(i, queries[i])
	}
	after := reprepared()
	require.Len(t, after, len(before), "the later reads ran the first one's statements")
	for query, n := range after {
		assert.Equal(t, before[query], n, "prepared again: %s", query)
	}
}
