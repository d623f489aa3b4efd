package acp_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// servedThenClosed serves a SQLite store at a new path (opened with
// storeOpts) with opts, and returns the client, the provider, the path and
// a session that had one turn and was closed.
func servedThenClosed(t *testing.T, opts acp.ServerOptions, storeOpts ...sqlite.Option) (*client, *providertest.Fake, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	store, err := sqlite.Open(path, storeOpts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := providertest.New()
	c := serve(t, fake, store, opts)
	c.initialize(`{}`)
	sid := c.newSession()
	fake.QueueTurn(providertest.Reply{Text: "one"})
	assert.Equal(t, "end_turn", c.prompt(sid, "first"))
	c.mustCall("session/close", map[string]any{"sessionId": sid}, nil)
	return c, fake, path, sid
}

// leaseElsewhere takes the lease of sid in the store at path as another
// agent process ("agent-in-another-window") would.
func leaseElsewhere(t *testing.T, path, sid string) history.Lease {
	t.Helper()
	other, err := sqlite.Open(path, sqlite.WithHolder("agent-in-another-window"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	lease, err := other.Acquire(t.Context(), sid)
	require.NoError(t, err)
	return lease
}

// A session/resume that waits for the store (here for another agent's
// lease, with Config.WaitForLease) keeps no other request of the
// connection waiting: a new session is opened and prompted, the sessions
// are listed, while requests naming the session being resumed are refused
// saying so; once the other agent lets go, the resume is answered and the
// session works.
func TestServe_SlowResumeDoesNotStallConnection(t *testing.T) {
	opts := acp.ServerOptions{}
	opts.Session.WaitForLease = true
	c, fake, path, sid := servedThenClosed(t, opts)
	lease := leaseElsewhere(t, path, sid)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resumed, err := c.conn.Go(ctx, "session/resume", map[string]any{"sessionId": sid, "cwd": "/project"})
	require.NoError(t, err)

	// Sent after the resume, answered before it.
	sid2 := c.newSession()
	fake.QueueTurn(providertest.Reply{Text: "two"})
	assert.Equal(t, "end_turn", c.prompt(sid2, "second"))
	var list struct{ Sessions []struct{ SessionID string } }
	c.mustCall("session/list", map[string]any{}, &list)
	assert.Len(t, list.Sessions, 2)
	err = c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "too early"}}}, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.ResourceNotFound, je.Code)
	assert.Contains(t, je.Message, "still being opened")
	select {
	case <-resumed.Done():
		t.Fatal("the resume was answered while another agent held the session")
	default:
	}

	require.NoError(t, lease.Release(t.Context()))
	require.NoError(t, resumed.Wait(ctx, nil))
	fake.QueueTurn(providertest.Reply{Text: "three"})
	assert.Equal(t, "end_turn", c.prompt(sid, "third"))
}

// A session/resume whose store gives up waiting for a lock (here another
// agent holds the SQLite file's write lock, and the session's lease) is
// refused at once, the error naming the session, the holder of its lease
// and saying to try again; once the lock is gone the refusal is the
// lease's, and once the lease is released the session resumes.
func TestServe_BusyStoreRefusalNamesHolder(t *testing.T) {
	c, fake, path, sid := servedThenClosed(t, acp.ServerOptions{}, sqlite.WithBusyTimeout(200*time.Millisecond))
	lease := leaseElsewhere(t, path, sid)
	// The lock's holder waits for the lock as a store's writer does: the
	// served store's committer may be indexing what the session wrote in
	// its idle time (a short write transaction of its own).
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	require.NoError(t, err)
	defer db.Close()
	tx, err := db.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	_, err = tx.Exec(`UPDATE sessions SET version = version`)
	require.NoError(t, err)

	resume := map[string]any{"sessionId": sid, "cwd": "/project"}
	err = c.call("session/resume", resume, nil)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, jsonrpc.InternalError, je.Code)
	assert.Contains(t, je.Message, "busy")
	assert.Contains(t, je.Message, "agent-in-another-window")
	var data struct {
		SessionID  string `json:"sessionId"`
		Sessionkit struct {
			Busy     bool   `json:"busy"`
			LeasedBy string `json:"leasedBy"`
		} `json:"sessionkit"`
	}
	require.NoError(t, json.Unmarshal(je.Data, &data))
	assert.Equal(t, sid, data.SessionID)
	assert.True(t, data.Sessionkit.Busy)
	assert.Equal(t, "agent-in-another-window", data.Sessionkit.LeasedBy)

	require.NoError(t, tx.Rollback())
	err = c.call("session/resume", resume, nil)
	require.ErrorAs(t, err, &je)
	assert.Contains(t, je.Message, "served by another agent process")
	require.NoError(t, lease.Release(t.Context()))
	c.mustCall("session/resume", resume, nil)
	fake.QueueTurn(providertest.Reply{Text: "two"})
	assert.Equal(t, "end_turn", c.prompt(sid, "second"))
}
