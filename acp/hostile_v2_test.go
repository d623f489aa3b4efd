package acp_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// worksV2 checks that a normal v2 prompt on sid is inserted, streams text
// and ends idle end_turn.
func (c *hostileClient) worksV2(sid string) {
	c.t.Helper()
	seq := c.lastSeq()
	m := c.call("session/prompt", promptParams(sid, "a normal prompt after the storm"))
	require.Nil(c.t, m.Error, "normal prompt on %s", sid)
	assert.Contains(c.t, string(m.Result), `"messageId"`)
	idle := c.waitNote(seq, "idle", isIdle)
	assert.Contains(c.t, string(idle.update), `"stopReason":"end_turn"`)
	chunks := 0
	for _, n := range c.notesSince(seq) {
		if n.kind == "agent_message_chunk" {
			chunks++
		}
	}
	assert.Positive(c.t, chunks, "the prompt streamed no agent_message_chunk")
}

// Malformed lines on a v2 connection get the same answers as on v1, and
// the connection keeps working.
func TestHostileV2_MalformedMessages(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	for _, tc := range []struct {
		line string
		id   string // "" = id null
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"x"`, "", jsonrpc.ParseError},
		{`not json`, "", jsonrpc.ParseError},
		{`[{"jsonrpc":"2.0","id":2,"method":"session/list"}]`, "", jsonrpc.InvalidRequest},
		{`[]`, "", jsonrpc.InvalidRequest},
		{`null`, "", jsonrpc.InvalidRequest},
		{`{}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":null,"method":"session/prompt","params":{}}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"1.0","id":4,"method":"session/new","params":{}}`, "4", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"session/new"}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":10,"method":"session/new","params":"cwd"}`, "10", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":12,"method":"session/new","params":[]}`, "12", jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":13,"method":"session/new"}`, "13", jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":14,"method":"session/load","params":{}}`, "14", jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":"s","method":"session/fly"}`, `"s"`, jsonrpc.MethodNotFound},
	} {
		c.send(tc.line)
		var m hostileMsg
		if tc.id == "" {
			m = c.nullResponse()
		} else {
			m = c.response(json.RawMessage(tc.id))
		}
		wantError(t, m, tc.code, tc.line)
	}
	c.worksV2(sid)
}

// Every member of every v2 request sessionkit reads, with values of every
// JSON type: a typed error or an acceptance, never a crash, and the
// connection and the session keep working.
func TestHostileV2_WrongParamTypes(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	resumable := c.newSessionV2()
	type method struct {
		name   string
		valid  map[string]string
		fields []hostileField
	}
	methods := []method{
		{"initialize", map[string]string{"protocolVersion": `2`, "info": `{"name":"x","version":"1"}`}, []hostileField{
			{"info", "object", false}, {"capabilities", "lenient", true}, {"_meta", "lenient", true},
		}},
		{"session/new", map[string]string{"cwd": `"/w"`}, []hostileField{
			{"cwd", "string", false}, {"additionalDirectories", "array", true}, {"_meta", "lenient", true},
		}},
		{"session/resume", map[string]string{"sessionId": `"` + resumable + `"`, "cwd": `"/w"`}, []hostileField{
			{"sessionId", "string", false}, {"cwd", "string", false}, {"replayFrom", "object", true}, {"_meta", "lenient", true},
		}},
		{"session/prompt", map[string]string{"sessionId": `"` + sid + `"`, "prompt": `[{"type":"text","text":"typed"}]`}, []hostileField{
			{"sessionId", "string", false}, {"prompt", "array", false}, {"_meta", "lenient", true},
		}},
		{"session/list", map[string]string{}, []hostileField{
			{"cwd", "lenient", true}, {"cursor", "lenient", true}, {"_meta", "lenient", true},
		}},
		{"_sessionkit/compact", map[string]string{"sessionId": `"` + sid + `"`}, []hostileField{
			{"sessionId", "string", false}, {"instructions", "string", true},
		}},
	}
	params := withMember
	for _, m := range methods {
		require.Nil(t, c.call(m.name, params(m.valid, "", "", true)).Error, "%s with valid params", m.name)
		for _, f := range m.fields {
			for _, v := range hostileValues {
				if v == m.valid[f.name] {
					continue
				}
				what := fmt.Sprintf("%s %s=%s", m.name, f.name, v)
				got := c.call(m.name, params(m.valid, f.name, v, false))
				switch {
				case fits(f.typ, v) || v == "null" && f.null:
					if got.Error != nil {
						assert.Contains(t, []int{jsonrpc.InvalidParams, jsonrpc.ResourceNotFound}, got.Error.Code, "%s: %s", what, got.Error.Message)
					}
				default:
					wantError(t, got, jsonrpc.InvalidParams, what)
				}
			}
			if !f.null && f.typ != "lenient" {
				wantError(t, c.call(m.name, params(m.valid, f.name, "", true)), jsonrpc.InvalidParams, m.name+" without "+f.name)
			}
		}
		wantError(t, c.call(m.name, `[]`), jsonrpc.InvalidParams, m.name+" with array params")
	}
	c.worksV2(sid)
}
