package acp_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// toolClients records the ToolClient of every session opened, by cwd.
type toolClients struct {
	mu    sync.Mutex
	byCwd map[string]*acp.ToolClient
}

func (r *toolClients) sessionTools(s acp.ToolSession) (acp.Toolset, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byCwd[s.Cwd] = s.Client
	return acp.Toolset{}, nil
}

func (r *toolClients) get(cwd string) *acp.ToolClient {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byCwd[cwd]
}

// compacts runs a turn and then /compact on sid and reports whether the
// compaction went out as compaction_update entities (the client's
// compaction capability) rather than as the fallback text.
func (c *hostileClient) compacts(sid string) (entities bool) {
	c.t.Helper()
	c.works(sid) // two messages: something to compact
	seq := c.lastSeq()
	m := c.call("session/prompt", promptParams(sid, "/compact"))
	require.Nil(c.t, m.Error, "/compact on %s", sid)
	updates, texts := 0, 0
	for _, n := range c.notesSince(seq) {
		switch {
		case n.sid != sid:
		case n.kind == "compaction_update":
			updates++
		case n.kind == "agent_message_chunk" && strings.HasPrefix(n.text, "Compact"):
			texts++
		}
	}
	require.True(c.t, (updates > 0) != (texts > 0), "/compact on %s: %d compaction_update and %d fallback texts", sid, updates, texts)
	return updates > 0
}

// A second initialize on a v1 connection is answered as the first was and
// changes nothing (docs/acp.md, "One initialize per connection"): the
// sessions open before it and those opened after it keep the client
// capabilities and the compaction capability of the first, whether the
// second adds them or takes them away, and the connection stays v1 when the
// second asks for v2.
func TestServe_SecondInitializeChangesNothing(t *testing.T) {
	const (
		capable   = `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"session":{"compaction":{}}}`
		incapable = `{}`
	)
	for _, tc := range []struct {
		name          string
		first, second string
	}{
		{"capabilities taken away", capable, incapable},
		{"capabilities added", incapable, capable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clients := &toolClients{byCwd: map[string]*acp.ToolClient{}}
			c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{SessionTools: clients.sessionTools})
			m := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":`+tc.first+`}`)
			require.Nil(t, m.Error, "the first initialize")
			first := string(m.Result)
			before := c.newSessionAt("/before")

			for _, params := range []string{
				`{"protocolVersion":1,"clientCapabilities":` + tc.second + `}`,
				`{"protocolVersion":2,"clientCapabilities":` + tc.second + `}`,
			} {
				m := c.call("initialize", params)
				require.Nil(t, m.Error, "a second initialize %s", params)
				assert.JSONEq(t, first, string(m.Result), "a second initialize %s is answered as the first", params)
			}
			after := c.newSessionAt("/after")

			want := tc.first == capable
			for cwd, sid := range map[string]string{"/before": before, "/after": after} {
				tc := clients.get(cwd)
				require.NotNil(t, tc, "the ToolClient of the session at %s", cwd)
				assert.Equal(t, want, tc.CanReadFiles(), "%s: reads files", cwd)
				assert.Equal(t, want, tc.CanWriteFiles(), "%s: writes files", cwd)
				assert.Equal(t, want, tc.CanRunTerminals(), "%s: runs terminals", cwd)
				assert.Equal(t, want, c.compacts(sid), "%s: compaction entities", cwd) // works also checks the v1 answer
			}
		})
	}
}

// newSessionAt opens a v1 session at cwd.
func (c *hostileClient) newSessionAt(cwd string) string {
	c.t.Helper()
	m := c.call("session/new", `{"cwd":"`+cwd+`","mcpServers":[]}`)
	require.Nil(c.t, m.Error, "session/new at %s", cwd)
	var r struct{ SessionID string }
	require.NoError(c.t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(c.t, r.SessionID)
	return r.SessionID
}

// A second initialize on a v2 connection changes nothing either: a request
// for v1 is refused with InvalidRequest, one for v2 or later is answered as
// the first was, and the sessions open before and after it speak v2.
func TestV2_SecondInitializeChangesNothing(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	m := c.call("initialize", v2InitParams)
	require.Nil(t, m.Error, "the first initialize")
	first := string(m.Result)
	before := c.newSessionV2()

	wantError(t, c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}`), jsonrpc.InvalidRequest, "v1 initialize on a v2 connection")
	for _, params := range []string{v2InitParams, `{"protocolVersion":3,"info":{"name":"later","version":"9"},"capabilities":{}}`} {
		m := c.call("initialize", params)
		require.Nil(t, m.Error, "a second initialize %s", params)
		assert.JSONEq(t, first, string(m.Result), "a second initialize %s is answered as the first", params)
	}
	after := c.newSessionV2()
	c.worksV2(before)
	c.worksV2(after)
}
