package acp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// listed is the session IDs of one session/list page.
func listed(t *testing.T, c *hostileClient) []string {
	t.Helper()
	m := c.call("session/list", `{}`)
	require.Nil(t, m.Error, "session/list")
	var r struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	var ids []string
	for _, s := range r.Sessions {
		ids = append(ids, s.SessionID)
	}
	return ids
}

// v1InitParams initialize a v1 connection without client capabilities.
const v1InitParams = `{"protocolVersion":1,"clientCapabilities":{}}`

// deleteCapability initializes c with params and returns the delete
// capability the agent advertised: v1 sessionCapabilities.delete, v2
// session.delete; nil when absent.
func deleteCapability(t *testing.T, c *hostileClient, params string) any {
	t.Helper()
	m := c.call("initialize", params)
	require.Nil(t, m.Error)
	var r struct {
		V1 struct {
			Session map[string]any `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		V2 struct {
			Session map[string]any `json:"session"`
		} `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &r))
	if r.V2.Session != nil {
		return r.V2.Session["delete"]
	}
	return r.V1.Session["delete"]
}

// longPrompt sends a prompt on sid whose model call never returns (until
// the test ends), waits until the call is made and returns the request's
// ID.
func longPrompt(t *testing.T, c *hostileClient, fake *providertest.Fake, sid string) json.RawMessage {
	t.Helper()
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	calls := len(fake.Requests())
	prompt := c.request("session/prompt", promptParams(sid, "a long one"))
	require.NoError(t, fake.WaitCalls(t.Context(), calls+1))
	return prompt
}

// deleteParams are the params of session/delete for sid.
func deleteParams(sid string) string { return `{"sessionId":"` + sid + `"}` }

// session/delete (v1) on a SQLite store: advertised; a session served on
// this connection is closed first (its prompt in flight answered cancelled
// before the delete is answered) and then gone from the store, the list
// and the connection; another stays; deleting again, or an unknown
// session, is the unknown-session error.
func TestServe_SessionDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	fake := hostileFake()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	assert.Equal(t, map[string]any{}, deleteCapability(t, c, v1InitParams))

	keep := c.newSession()
	c.works(keep)
	sid := c.newSession()
	c.works(sid)
	prompt := longPrompt(t, c, fake, sid)

	deleted := c.response(c.request("session/delete", deleteParams(sid)))
	require.Nil(t, deleted.Error, "session/delete")
	assert.JSONEq(t, `{}`, string(deleted.Result))
	p := c.response(prompt)
	assert.Equal(t, "cancelled", stopReason(p), "the prompt in flight is answered cancelled")
	assert.Less(t, p.seq, deleted.seq, "before session/delete is answered")

	assert.Equal(t, []string{keep}, listed(t, c))
	_, err = store.Load(t.Context(), sid)
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = store.Search(t.Context(), sid, history.SearchQuery{Text: "long"})
	assert.ErrorIs(t, err, history.ErrNotFound)
	wantError(t, c.call("session/prompt", promptParams(sid, "again")), jsonrpc.ResourceNotFound, "a deleted session is not served")
	wantError(t, c.call("session/load", `{"sessionId":"`+sid+`","cwd":"/project","mcpServers":[]}`), jsonrpc.ResourceNotFound, "a deleted session cannot be loaded")
	wantError(t, c.call("session/delete", deleteParams(sid)), jsonrpc.ResourceNotFound, "deleting twice")
	wantError(t, c.call("session/delete", deleteParams("no-such-session")), jsonrpc.ResourceNotFound, "an unknown session")
	c.works(keep)

	// A stored session not open here is deleted from the store.
	require.Nil(t, c.call("session/close", deleteParams(keep)).Error)
	require.Nil(t, c.call("session/delete", deleteParams(keep)).Error)
	assert.Empty(t, listed(t, c))
}

// A session another agent process serves is refused, naming that process
// in the message and the data, and nothing of it is deleted; once that
// process releases it, it is deleted.
func TestServe_SessionDeleteServedElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	c.works(sid)
	require.Nil(t, c.call("session/close", deleteParams(sid)).Error)

	other, err := sqlite.Open(path, sqlite.WithHolder("agent-in-another-window"))
	require.NoError(t, err)
	defer other.Close()
	lease, err := other.Acquire(t.Context(), sid)
	require.NoError(t, err)

	m := c.call("session/delete", deleteParams(sid))
	wantError(t, m, jsonrpc.InternalError, "served elsewhere")
	require.NotNil(t, m.Error)
	assert.Contains(t, m.Error.Message, "agent-in-another-window")
	var data struct {
		SessionID  string `json:"sessionId"`
		Sessionkit struct {
			LeasedBy string `json:"leasedBy"`
		} `json:"sessionkit"`
	}
	require.NoError(t, json.Unmarshal(m.Error.Data, &data))
	assert.Equal(t, sid, data.SessionID)
	assert.Equal(t, "agent-in-another-window", data.Sessionkit.LeasedBy)
	assert.Equal(t, []string{sid}, listed(t, c), "nothing was deleted")
	snap, err := store.Load(t.Context(), sid)
	require.NoError(t, err)
	assert.NotEmpty(t, snap.Active)

	require.NoError(t, lease.Release(t.Context()))
	require.Nil(t, c.call("session/delete", deleteParams(sid)).Error)
	assert.Empty(t, listed(t, c))
}

// session/delete on v2: advertised under session.delete; a session served
// here is closed and deleted.
func TestServe_SessionDeleteV2(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	assert.Equal(t, map[string]any{}, deleteCapability(t, c, v2InitParams))

	r := c.call("session/new", `{"cwd":"/project","mcpServers":[]}`)
	require.Nil(t, r.Error)
	var created struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(r.Result, &created))
	sid := created.SessionID
	c.worksV2(sid)
	require.Nil(t, c.call("session/delete", deleteParams(sid)).Error)
	assert.Empty(t, listed(t, c))
	_, err := store.Load(t.Context(), sid)
	assert.ErrorIs(t, err, history.ErrNotFound)
	wantError(t, c.call("session/delete", deleteParams(sid)), jsonrpc.ResourceNotFound, "deleting twice")
}

// Malformed session/delete params are invalid params and delete nothing.
func TestServe_SessionDeleteMalformed(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	for _, params := range []string{`{}`, `{"sessionId":""}`, `{"sessionId":5}`, `{"sessionId":null}`, `[]`, `{"sessionId":["` + sid + `"]}`} {
		wantError(t, c.call("session/delete", params), jsonrpc.InvalidParams, params)
	}
	wantError(t, c.call("session/delete", `"`+sid+`"`), jsonrpc.InvalidRequest, "params neither object nor array")
	c.works(sid)
	assert.Equal(t, []string{sid}, listed(t, c))
}

// watchedDeleter is a memstore whose first Delete closes deleting.
type watchedDeleter struct {
	*memstore.Store
	once     sync.Once
	deleting chan struct{}
}

func (w *watchedDeleter) Delete(ctx context.Context, id string) error {
	w.once.Do(func() { close(w.deleting) })
	return w.Store.Delete(ctx, id)
}

// The store deletes a session served here only once everything the
// session had to send is on the wire: while the client reads nothing, the
// session's last updates and its prompt's response cannot be written, and
// nothing is deleted; once it reads again, they come before the delete's
// response.
func TestServe_SessionDeleteAfterItsUpdates(t *testing.T) {
	store := &watchedDeleter{Store: memstore.New(), deleting: make(chan struct{})}
	fake := hostileFake()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	prompt := longPrompt(t, c, fake, sid)

	// The client's reader, idle, is reading a line already: the answer to
	// an unknown method is that line, and the reader then reads nothing
	// more until resume.
	c.pause()
	ping := c.request("_no/such_method", `{}`)
	del := c.request("session/delete", deleteParams(sid))
	early := poll.Within(500*time.Millisecond, func() bool {
		select {
		case <-store.deleting:
			return true
		default:
			return false
		}
	})
	c.resume()
	assert.False(t, early, "deleted while the session's last updates were not written")
	wantError(t, c.response(ping), jsonrpc.MethodNotFound, "the unknown method")
	deleted := c.response(del)
	require.Nil(t, deleted.Error)
	p := c.response(prompt)
	assert.Equal(t, "cancelled", stopReason(p))
	assert.Less(t, p.seq, deleted.seq, "the prompt's response comes before the delete's")
	_, err := store.Load(t.Context(), sid)
	assert.ErrorIs(t, err, history.ErrNotFound)
}
