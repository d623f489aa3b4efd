package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
)

// TestTwoOpensAreTwoHolders: two Stores of one file in one process, with
// default holder names, are two holders: the second cannot take a session
// the first serves, and is told who does.
func TestTwoOpensAreTwoHolders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	a, b := open(t, path), open(t, path)
	require.NotEqual(t, a.holder, b.holder)
	ctx := context.Background()
	la, err := a.Acquire(ctx, "s")
	require.NoError(t, err)
	_, err = b.Acquire(ctx, "s")
	le := historytest.LeaseError(t, err, "s", a.holder)
	assert.True(t, le.Expires.After(time.Now()))
	require.NoError(t, la.Release(ctx))
	lb, err := b.Acquire(ctx, "s")
	require.NoError(t, err)
	assert.Greater(t, lb.Token(), la.Token())
}

// TestLeaseLostOnTakeoverSeenByRenewal: a renewal that finds another token
// declares the lease lost.
func TestLeaseLostOnTakeoverSeenByRenewal(t *testing.T) {
	const ttl = 300 * time.Millisecond
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), WithLeaseTTL(ttl))
	ctx := context.Background()
	l, err := s.Acquire(ctx, "s")
	require.NoError(t, err)
	_, err = s.w.ExecContext(ctx, `UPDATE leases SET token = token + 1, holder = 'intruder' WHERE session_id = ?`, "s")
	require.NoError(t, err)
	require.True(t, historytest.Closed(l.Lost(), 2*ttl), "Lost was not closed")
	_, err = l.Store().Create(ctx, history.NewSession{ID: "s"})
	assert.ErrorIs(t, err, history.ErrFenced)
}

// TestCloseReleasesLeases: closing a store stops the renewals of its leases
// and releases them, so another store takes the sessions at once.
func TestCloseReleasesLeases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	a, err := Open(path, WithHolder("a"))
	require.NoError(t, err)
	ctx := context.Background()
	la, err := a.Acquire(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, la.Store().(*Store).Close(), "closing a lease's view is a no-op")
	require.NoError(t, a.Close())
	assert.True(t, historytest.Closed(la.(*lease).Stopped(), 0), "Close stopped the renewals")
	assert.False(t, historytest.Closed(la.Lost(), 0))
	require.NoError(t, la.Release(ctx))
	b := open(t, path, WithHolder("b"))
	_, err = b.Acquire(ctx, "s")
	require.NoError(t, err)
}

// TestMigrationToLeasesKeepsData: a file of schema version 1 (before
// listing and leases) moves forward on Open; its sessions keep their
// messages and take their times from them.
func TestMigrationToLeasesKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s := openAtVersion(t, path, 1)
	ctx := context.Background()
	_, err := s.w.ExecContext(ctx, `INSERT INTO sessions (id, version) VALUES ('old', 1)`)
	require.NoError(t, err)
	for i, at := range []int64{1000, 2000} {
		_, err = s.w.ExecContext(ctx, `INSERT INTO messages (session_id, pos, seq, id, role, text, created_at) VALUES ('old', ?, ?, ?, 'user', 'Old work', ?)`, i, i, i, at)
		require.NoError(t, err)
	}
	_, err = s.w.ExecContext(ctx, `UPDATE sessions SET next_pos = 2, message_count = 2`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, 1, readSchemaVersion(t, path))

	s = open(t, path)
	assert.Equal(t, len(migrations), readSchemaVersion(t, path))
	loaded, err := s.Load(ctx, "old")
	require.NoError(t, err)
	assert.Len(t, loaded.Active, 2)
	page, err := s.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 1)
	info := page.Sessions[0]
	assert.Equal(t, "Old work", info.Title)
	assert.Equal(t, 2, info.Messages)
	assert.Equal(t, time.Unix(0, 1000).UTC(), info.CreatedAt)
	assert.Equal(t, time.Unix(0, 2000).UTC(), info.UpdatedAt)
	l, err := s.Acquire(ctx, "old")
	require.NoError(t, err)
	_, err = l.Store().Append(ctx, "old", loaded.Version, historytest.Msgs("new", 1))
	require.NoError(t, err)
}

// TestLeaseOfGoneProcessTakenOver: a live lease whose holder is a process
// of this machine that no longer runs (killed before it could release) is
// taken over at once, with a larger token; one whose holder runs is not.
func TestLeaseOfGoneProcessTakenOver(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "sessions.db"), WithHolder("me"))
	ctx := context.Background()
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	far := time.Now().Add(time.Hour).UnixNano()
	for id, pid := range map[string]int{"gone": gone.Process.Pid, "runs": os.Getppid()} {
		_, err := s.w.ExecContext(ctx, `INSERT INTO leases (session_id, holder, host, pid, token, expires_at) VALUES (?, ?, ?, ?, 7, ?)`,
			id, "killed-agent", s.host, pid, far)
		require.NoError(t, err)
	}
	l, err := s.Acquire(ctx, "gone")
	require.NoError(t, err, "the holder's process is gone")
	assert.EqualValues(t, 8, l.Token())
	_, err = s.Acquire(ctx, "runs")
	historytest.LeaseError(t, err, "runs", "killed-agent")

	// Another machine's holder is never judged by this machine's processes.
	_, err = s.w.ExecContext(ctx, `UPDATE leases SET host = 'elsewhere', pid = ? WHERE session_id = 'runs'`, gone.Process.Pid)
	require.NoError(t, err)
	_, err = s.Acquire(ctx, "runs")
	historytest.LeaseError(t, err, "runs", "killed-agent")

	// A holder of this host name whose boot or PID namespace is not this
	// process's (another container sharing the file and the host name, a
	// row from before a reboot), or recorded by a version of sessionkit that
	// recorded the host name only, cannot be judged by its pid here: it
	// keeps its lease until it expires, and is then taken over.
	if runtime.GOOS != "linux" {
		return // elsewhere a holder is recorded by its host name only
	}
	prefix, ns, ok := strings.Cut(s.host, " pidns=") // "<host> boot=<id>", "pid:[<inode>]"
	require.True(t, ok, s.host)
	hostName, _, _ := strings.Cut(prefix, " boot=")
	for name, where := range map[string]string{
		"other boot":   hostName + " boot=another-boot pidns=" + ns,
		"other pid ns": prefix + " pidns=pid:[1]",
		"host only":    hostName,
	} {
		id := "uncheckable " + name
		_, err := s.w.ExecContext(ctx, `INSERT INTO leases (session_id, holder, host, pid, token, expires_at) VALUES (?, 'contained-agent', ?, ?, 7, ?)`,
			id, where, gone.Process.Pid, far)
		require.NoError(t, err)
		_, err = s.Acquire(ctx, id)
		historytest.LeaseError(t, err, id, "contained-agent")
		info, err := s.ReadLease(ctx, id)
		require.NoError(t, err)
		require.NotNil(t, info, "%s: served until it expires", name)
		_, err = s.w.ExecContext(ctx, `UPDATE leases SET expires_at = ? WHERE session_id = ?`, time.Now().UnixNano(), id)
		require.NoError(t, err)
		l, err := s.Acquire(ctx, id)
		require.NoError(t, err, "%s: expired", name)
		assert.EqualValues(t, 8, l.Token())
	}
}

// TestLeaseGoneFencesBeforeTheRow: a lease that is gone in this process
// fences its writes at once, though its row still reads live with its
// token, so that the check inside the write transaction would pass:
// leasing.State.Writes' early check is what fences them. Lost: the
// renewal loop gives the lease up at its deadline, measured from before
// its last request was sent, while the row's expiry was measured inside
// that request's transaction, later. Released: a Release whose update of
// the row never ran (its context ended first) leaves the row as it was.
func TestLeaseGoneFencesBeforeTheRow(t *testing.T) {
	ctx := context.Background()
	for _, end := range []struct {
		name string
		end  func(l history.Lease)
	}{
		{"lost", func(l history.Lease) { l.(*lease).Lose() }},
		{"released", func(l history.Lease) {
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			_ = l.Release(cancelled)
		}},
	} {
		t.Run(end.name, func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "sessions.db"))
			l, err := s.Acquire(ctx, "s")
			require.NoError(t, err)
			_, err = l.Store().Create(ctx, history.NewSession{ID: "s"})
			require.NoError(t, err)
			end.end(l)
			var live bool
			require.NoError(t, s.r.QueryRowContext(ctx, `SELECT expires_at > ? AND holder != '' FROM leases WHERE session_id = ? AND token = ?`,
				time.Now().UnixNano(), "s", int64(l.Token())).Scan(&live))
			require.True(t, live, "the row still reads live with the lease's token")
			_, err = l.Store().Append(ctx, "s", 1, historytest.Msgs("s", 1))
			assert.ErrorIs(t, err, history.ErrFenced)
			snap, err := s.Load(ctx, "s")
			require.NoError(t, err)
			assert.Empty(t, snap.Active, "nothing was written")
		})
	}
}
