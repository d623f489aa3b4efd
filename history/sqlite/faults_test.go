package sqlite

// A real full disk (issue "Reliability", item 3): SQLite's max_page_count
// limit makes every write that needs a new page fail with SQLITE_FULL, the
// error SQLite also reports when the file system is out of space. The limit
// is a property of a connection (of its pager), so it is set on the store's
// one writer connection; a second connection to the file would not limit
// the store.

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// fillDisk caps the file at its current size: the next write that needs a
// new page fails with SQLITE_FULL. The returned function frees the disk.
func fillDisk(t *testing.T, s *Store) (free func()) {
	t.Helper()
	var pages, limit int64
	require.NoError(t, s.w.QueryRow(`PRAGMA page_count`).Scan(&pages))
	require.NoError(t, s.w.QueryRow(`PRAGMA max_page_count = `+strconv.FormatInt(pages, 10)).Scan(&limit))
	require.Equal(t, pages, limit)
	return func() {
		require.NoError(t, s.w.QueryRow(`PRAGMA max_page_count = 1073741823`).Scan(&limit))
	}
}

func isFull(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_FULL
}

// bigText is larger than many pages, so writing it needs new ones.
var bigText = strings.Repeat("all work and no play ", 1<<13) // 168 KiB

// TestFault_DiskFull: on a full disk, Append and CommitCompaction fail with
// SQLITE_FULL and write nothing: the version, Active, the summary and the
// compaction record are as before. Once the disk frees, the same writes
// succeed.
func TestFault_DiskFull(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	snap, err := s.Create(ctx, history.NewSession{ID: "a"})
	require.NoError(t, err)
	v, err := s.Append(ctx, "a", snap.Version, historytest.Msgs("m", 4))
	require.NoError(t, err)
	v, err = s.BeginCompaction(ctx, "a", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
	require.NoError(t, err)
	before, err := s.Load(ctx, "a")
	require.NoError(t, err)

	free := fillDisk(t, s)
	bigMsg := []history.Message{{ID: "big", Role: history.RoleUser, Text: bigText, CreatedAt: time.Now()}}
	_, err = s.Append(ctx, "a", v, bigMsg)
	require.Error(t, err)
	assert.True(t, isFull(err), "SQLITE_FULL: %v", err)
	assert.Contains(t, err.Error(), "sqlite: append")

	commit := history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 2, Summary: bigText, At: time.Now()}
	_, _, err = s.CommitCompaction(ctx, "a", v, commit)
	require.Error(t, err)
	assert.True(t, isFull(err), "SQLITE_FULL: %v", err)

	after, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing of the failed writes landed")
	assert.Equal(t, []string{"c1"}, after.Interrupted, "the attempt is still in progress")
	segs, err := s.Segments(ctx, "a")
	require.NoError(t, err)
	assert.Empty(t, segs)

	free()
	v2, err := s.Append(ctx, "a", v, bigMsg)
	require.NoError(t, err)
	_, seg, err := s.CommitCompaction(ctx, "a", v2, commit)
	require.NoError(t, err)
	assert.Equal(t, bigText, seg.Summary)
	final, err := s.Load(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, bigText, final.Summary)
	assert.Len(t, final.Active, 3)
	assert.Empty(t, final.Interrupted)
}

// TestFault_DiskFullSession: a session on a full SQLite disk. A prompt
// whose message does not fit fails with SQLITE_FULL; a compaction whose
// summary does not fit is compact_failed; Active and the summary stay as
// they were and equal to the store. Once the disk frees both work.
func TestFault_DiskFullSession(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "sessions.db"))
	fake := providertest.New()
	s, err := session.New(ctx, session.Config{Provider: fake, Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	for _, p := range []string{"one", "two"} {
		fake.QueueTurn(providertest.Reply{Text: "re " + p})
		h, err := s.Prompt(ctx, session.PromptRequest{Text: p})
		require.NoError(t, err)
		require.NoError(t, waitFor(t, h).Err)
	}
	before := activeOf(t, s)
	require.Len(t, before, 4)
	same := func() {
		t.Helper()
		snap, err := st.Load(ctx, s.ID())
		require.NoError(t, err)
		mem := activeOf(t, s)
		assert.Equal(t, ids(snap.Active), ids(mem), "memory equals the store")
		sum, err := s.Summary(ctx)
		require.NoError(t, err)
		assert.Equal(t, snap.Summary, sum)
	}

	free := fillDisk(t, st)
	h, err := s.Prompt(ctx, session.PromptRequest{Text: bigText})
	require.NoError(t, err)
	tr := waitFor(t, h)
	require.Error(t, tr.Err)
	assert.True(t, isFull(tr.Err), "SQLITE_FULL: %v", tr.Err)
	assert.Equal(t, ids(before), ids(activeOf(t, s)))
	same()

	fake.QueueSummary(providertest.Reply{Text: bigText})
	ch, err := s.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	res := waitFor(t, ch)
	assert.Equal(t, session.ReasonCompactFailed, res.Reason)
	// The in-progress record fits in the empty root pages of the
	// compactions table; the summary does not.
	assert.Contains(t, res.Error, "commit compaction")
	assert.Contains(t, res.Error, "database or disk is full")
	assert.Equal(t, ids(before), ids(activeOf(t, s)))
	same()
	segs, err := st.Segments(ctx, s.ID())
	require.NoError(t, err)
	assert.Empty(t, segs)

	free()
	fake.QueueTurn(providertest.Reply{Text: "fits now"})
	h, err = s.Prompt(ctx, session.PromptRequest{Text: bigText})
	require.NoError(t, err)
	require.NoError(t, waitFor(t, h).Err)
	fake.QueueSummary(providertest.Reply{Text: bigText})
	ch, err = s.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	res = waitFor(t, ch)
	require.True(t, res.Compacted, res.Error)
	assert.Len(t, activeOf(t, s), 3)
	same()
}

func waitFor[R any](t *testing.T, h *session.Handle[R]) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := h.Wait(ctx)
	require.NoError(t, err)
	return r
}

func activeOf(t *testing.T, s *session.Session) []history.Message {
	t.Helper()
	a, err := s.Active(context.Background())
	require.NoError(t, err)
	return a
}
