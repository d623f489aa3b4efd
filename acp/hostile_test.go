package acp_test

// Hostile input against acp.Serve (docs/design.md §7.8): a raw client over pipes
// writes bytes a well-behaved client never would and checks that every
// request gets a result or the proper JSON-RPC error, that nothing is sent
// for notifications, and that the connection and every session stay up.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// hostileLimit is the MaxLineBytes of the agents in these tests.
const hostileLimit = 64 << 10

// hostileWait bounds every wait for the agent.
const hostileWait = 30 * time.Second

// hostileMsg is one line the agent wrote.
type hostileMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
	seq    int             // position among the lines the agent wrote
}

// hostileNote is a notification the agent sent, reduced to what the tests
// look at (chunks can be many).
type hostileNote struct {
	seq    int // position among the lines the agent wrote
	method string
	sid    string
	kind   string          // sessionUpdate
	text   string          // content text, first 64 bytes
	update json.RawMessage // the whole update (the v2 tests look at it)
	id     json.RawMessage // a request's ID (a request of the agent's)
	params json.RawMessage // the params, when short
}

// hostileClient writes raw lines to an agent and reads its output. Its
// reader can be paused, so that the agent's writes block.
type hostileClient struct {
	t         *testing.T
	in        *io.PipeWriter // to the agent
	out       *io.PipeReader // from the agent
	serveErr  chan error
	readDone  chan struct{}
	gate      sync.Mutex // held while the client does not read
	paused    bool       // the test goroutine's view of gate
	closeOnce sync.Once

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every line
	resps     map[string][]hostileMsg
	nullResps []hostileMsg // responses with id null
	notes     []hostileNote
	lines     int
	bad       []string // lines that are not valid UTF-8 JSON-RPC 2.0
	nextID    int
}

// hostileServe starts acp.Serve over pipes with MaxLineBytes = hostileLimit
// (unless opts says otherwise) and connects a raw client.
func hostileServe(t *testing.T, prov provider.Provider, store history.Store, opts acp.ServerOptions) *hostileClient {
	t.Helper()
	return hostileServeCtx(t, context.Background(), prov, store, opts)
}

// hostileServeCtx is hostileServe with the ctx Serve runs with.
func hostileServeCtx(t *testing.T, ctx context.Context, prov provider.Provider, store history.Store, opts acp.ServerOptions) *hostileClient {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	opts.Session.Provider = prov
	opts.Session.Store = store
	if opts.MaxLineBytes == 0 {
		opts.MaxLineBytes = hostileLimit
	}
	opts.Logger = zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	c := &hostileClient{
		t: t, in: clientOut, out: clientIn,
		serveErr: make(chan error, 1), readDone: make(chan struct{}),
		changed: make(chan struct{}), resps: map[string][]hostileMsg{},
		nextID: 1000,
	}
	go func() {
		c.serveErr <- acp.Serve(ctx, agentIn, agentOut, opts)
		_ = agentOut.Close()
	}()
	go c.read()
	t.Cleanup(c.close)
	return c
}

// close ends the connection from the client side and checks that Serve
// returned nil and that the agent wrote nothing malformed.
func (c *hostileClient) close() {
	c.closeOnce.Do(c.doClose)
}

func (c *hostileClient) doClose() {
	if c.paused {
		c.resume()
	}
	_ = c.in.Close()
	select {
	case err := <-c.serveErr:
		assert.NoError(c.t, err, "Serve")
	case <-time.After(hostileWait):
		c.t.Error("Serve did not return after the client closed its end")
	}
	<-c.readDone
	_ = c.out.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(c.t, c.bad, "lines the agent wrote that are not valid UTF-8 JSON-RPC 2.0")
}

func (c *hostileClient) read() {
	defer close(c.readDone)
	br := bufio.NewReaderSize(c.out, 64<<10)
	for {
		c.gate.Lock()
		c.gate.Unlock() //nolint:staticcheck // an empty critical section: wait while paused
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.record(line)
		}
		if err != nil {
			return
		}
	}
}

func (c *hostileClient) record(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var m hostileMsg
	var version struct {
		JSONRPC string `json:"jsonrpc"`
	}
	valid := utf8.Valid(line) && json.Unmarshal(line, &m) == nil && json.Unmarshal(line, &version) == nil && version.JSONRPC == "2.0"
	var n hostileNote
	if valid && m.Method != "" {
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				Kind    string `json:"sessionUpdate"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		_ = json.Unmarshal(hostileParams(line), &p)
		n = hostileNote{method: m.Method, sid: p.SessionID, kind: p.Update.Kind, text: p.Update.Content.Text, id: m.ID}
		if raw := hostileParams(line); len(raw) < 4096 {
			n.params = raw
		}
		var u struct {
			Update json.RawMessage `json:"update"`
		}
		if json.Unmarshal(hostileParams(line), &u) == nil && len(u.Update) < 4096 {
			n.update = u.Update
		}
		if len(n.text) > 64 {
			n.text = strings.Clone(n.text[:64])
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines++
	m.seq, n.seq = c.lines, c.lines
	switch {
	case !valid:
		c.bad = append(c.bad, string(line[:min(len(line), 200)]))
	case m.Method != "":
		c.notes = append(c.notes, n)
	case m.ID == nil || string(m.ID) == "null":
		c.nullResps = append(c.nullResps, m)
	default:
		k := hostileKey(m.ID)
		c.resps[k] = append(c.resps[k], m)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// hostileParams returns the raw params member of a line.
func hostileParams(line []byte) json.RawMessage {
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(line, &p)
	return p.Params
}

func hostileKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// pause stops reading the agent's output; resume reads again.
func (c *hostileClient) pause() {
	c.gate.Lock()
	c.paused = true
}

func (c *hostileClient) resume() {
	c.paused = false
	c.gate.Unlock()
}

// send writes one raw line (a newline is added).
func (c *hostileClient) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(c.t, err)
}

// request sends a request with a fresh numeric id and raw params ("" for
// none) and returns the id.
func (c *hostileClient) request(method, params string) json.RawMessage {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(strconv.Itoa(c.nextID))
	c.mu.Unlock()
	c.send(hostileLine(id, method, params))
	return id
}

func hostileLine(id json.RawMessage, method, params string) string {
	m, _ := json.Marshal(method)
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0"`)
	if id != nil {
		b.WriteString(`,"id":`)
		b.Write(id)
	}
	b.WriteString(`,"method":`)
	b.Write(m)
	if params != "" {
		b.WriteString(`,"params":`)
		b.WriteString(params)
	}
	b.WriteString("}")
	return b.String()
}

// notify sends a notification with raw params.
func (c *hostileClient) notify(method, params string) {
	c.t.Helper()
	c.send(hostileLine(nil, method, params))
}

// response waits for the response with the given id.
func (c *hostileClient) response(id json.RawMessage) hostileMsg {
	c.t.Helper()
	m, ok := c.tryResponse(id, hostileWait)
	if !ok {
		c.t.Fatalf("no response to id %s within %v", id, hostileWait)
	}
	return m
}

func (c *hostileClient) tryResponse(id json.RawMessage, d time.Duration) (hostileMsg, bool) {
	k := hostileKey(id)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if rs := c.resps[k]; len(rs) > 0 {
			c.resps[k] = rs[1:]
			c.mu.Unlock()
			return rs[0], true
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return hostileMsg{}, false
		}
	}
}

// nullResponse waits for the next response with id null.
func (c *hostileClient) nullResponse() hostileMsg {
	c.t.Helper()
	timer := time.NewTimer(hostileWait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if len(c.nullResps) > 0 {
			m := c.nullResps[0]
			c.nullResps = c.nullResps[1:]
			c.mu.Unlock()
			return m
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			c.t.Fatalf("no response with id null within %v", hostileWait)
		}
	}
}

// call sends a request and waits for its response.
func (c *hostileClient) call(method, params string) hostileMsg {
	c.t.Helper()
	return c.response(c.request(method, params))
}

// code returns the error code of m, 0 for a result.
func hostileCode(m hostileMsg) int {
	if m.Error != nil {
		return m.Error.Code
	}
	return 0
}

// wantError asserts that m is an error with the given code.
func wantError(t *testing.T, m hostileMsg, code int, what string) {
	t.Helper()
	if assert.NotNil(t, m.Error, "%s: want error %d, got result %s", what, code, m.Result) {
		assert.Equal(t, code, m.Error.Code, "%s: %s", what, m.Error.Message)
	}
}

// stopReason returns the stopReason of a session/prompt result, "" for an error.
func stopReason(m hostileMsg) string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(m.Result, &r)
	return r.StopReason
}

func (c *hostileClient) initialize() {
	c.t.Helper()
	m := c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`)
	require.Nil(c.t, m.Error)
}

func (c *hostileClient) newSession() string {
	c.t.Helper()
	m := c.call("session/new", `{"cwd":"/project","mcpServers":[]}`)
	require.Nil(c.t, m.Error, "session/new")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(c.t, json.Unmarshal(m.Result, &r))
	require.NotEmpty(c.t, r.SessionID)
	return r.SessionID
}

func promptParams(sid, text string) string {
	b, _ := json.Marshal(map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}})
	return string(b)
}

// chunks counts the agent_message_chunk updates received for sid.
func (c *hostileClient) chunks(sid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.notes {
		if u.sid == sid && u.kind == "agent_message_chunk" {
			n++
		}
	}
	return n
}

// works checks that a normal prompt on sid ends the turn and streams text.
func (c *hostileClient) works(sid string) {
	c.t.Helper()
	before := c.chunks(sid)
	m := c.call("session/prompt", promptParams(sid, "a normal prompt after the storm"))
	require.Nil(c.t, m.Error, "normal prompt on %s", sid)
	assert.Equal(c.t, "end_turn", stopReason(m), "normal prompt on %s", sid)
	assert.Greater(c.t, c.chunks(sid), before, "the normal prompt on %s streamed no agent_message_chunk", sid)
}

// hostileFake answers every request: turns with "ok" in two deltas,
// summaries with a short summary.
func hostileFake() *providertest.Fake {
	fake := providertest.New()
	fake.SetDefault(func(r *provider.Request) providertest.Reply {
		if r.Purpose == provider.PurposeSummary {
			return providertest.Reply{Text: "## Summary\n- earlier turns", Usage: provider.Usage{InputTokens: 20, OutputTokens: 5}}
		}
		return providertest.Reply{Deltas: []string{"o", "k"}, Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}}
	})
	return fake
}

func TestHostile_OversizedLines(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	big := strings.Repeat("A", hostileLimit+1)

	// A request whose id comes first: answered with its id.
	c.send(`{"jsonrpc":"2.0","id":"big-1","method":"session/prompt","params":` + promptParams(sid, big) + `}`)
	wantError(t, c.response(json.RawMessage(`"big-1"`)), jsonrpc.InvalidRequest, "oversized request, id first")

	// The id comes after the oversized part: it cannot be found, id null.
	c.send(`{"jsonrpc":"2.0","method":"session/prompt","params":` + promptParams(sid, big) + `,"id":"big-2"}`)
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "oversized request, id last")

	// Not JSON at all, and far larger than the limit (8 MiB).
	c.send(strings.Repeat("x", 8<<20))
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "oversized garbage")

	// An oversized notification: answered with id null (it may have been a
	// request), never acted upon.
	c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `","_meta":{"pad":"` + big + `"}}}`)
	wantError(t, c.nullResponse(), jsonrpc.InvalidRequest, "oversized notification")

	// Exactly at the limit is accepted: pad a prompt to MaxLineBytes.
	line := `{"jsonrpc":"2.0","id":"at-limit","method":"session/prompt","params":` + promptParams(sid, "PAD") + `}`
	line = strings.Replace(line, "PAD", strings.Repeat("p", hostileLimit-len(line)+3), 1)
	require.Len(t, line, hostileLimit)
	c.send(line)
	assert.Equal(t, "end_turn", stopReason(c.response(json.RawMessage(`"at-limit"`))), "a line of exactly MaxLineBytes")
	// One byte more is refused.
	c.send(strings.Replace(line, `"at-limit"`, `"at-limit+1"`, 1))
	wantError(t, c.response(json.RawMessage(`"at-limit+1"`)), jsonrpc.InvalidRequest, "a line of MaxLineBytes+1")

	c.works(sid)
	// Only the prompt at the limit and the normal one reached the session.
	snap, err := store.Load(context.Background(), sid)
	require.NoError(t, err)
	var users []int
	for _, m := range snap.Active {
		if m.Role == history.RoleUser {
			users = append(users, len(m.Text))
		}
	}
	assert.Len(t, users, 2, "user messages in the session: %v bytes", users)
}

func TestHostile_InvalidUTF8(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()

	// Inside a string: replaced by U+FFFD, the prompt runs.
	m := c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"caf`+"\xe9 \xff\xfe"+` bad"}]}`)
	assert.Equal(t, "end_turn", stopReason(m), "invalid UTF-8 inside a string")
	snap, err := store.Load(context.Background(), sid)
	require.NoError(t, err)
	require.NotEmpty(t, snap.Active)
	assert.Equal(t, "caf\uFFFD \uFFFD\uFFFD bad", snap.Active[0].Text)

	// Outside a string: a parse error, id unknown.
	c.send("{\"jsonrpc\":\"2.0\",\"id\":7,\xff\"method\":\"session/prompt\"}")
	wantError(t, c.nullResponse(), jsonrpc.ParseError, "invalid UTF-8 between members")

	// In the method name: a method nobody has.
	c.send("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"session/pro\xffmpt\",\"params\":{}}")
	wantError(t, c.response(json.RawMessage(`8`)), jsonrpc.MethodNotFound, "invalid UTF-8 in the method")

	// In a string id: echoed with U+FFFD (the output stays valid UTF-8).
	c.send("{\"jsonrpc\":\"2.0\",\"id\":\"x\xffy\",\"method\":\"session/fly\"}")
	wantError(t, c.response(json.RawMessage(`"x`+"\uFFFD"+`y"`)), jsonrpc.MethodNotFound, "invalid UTF-8 in the id")

	// In a session ID: no such session.
	c.send(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"` + sid[:8] + "\xff" + `","prompt":[{"type":"text","text":"x"}]}}`)
	wantError(t, c.response(json.RawMessage(`9`)), jsonrpc.ResourceNotFound, "invalid UTF-8 in the session ID")

	// A lone UTF-16 surrogate escape is valid JSON; it decodes to U+FFFD.
	m = c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"half \ud800 a pair"}]}`)
	assert.Equal(t, "end_turn", stopReason(m), "lone surrogate escape")

	c.works(sid)
}

func TestHostile_DeepNesting(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	nest := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }

	// 100,000 nested arrays: 200 KB, above MaxLineBytes (64 KiB).
	c.send(`{"jsonrpc":"2.0","id":"deep-1","method":"session/prompt","params":` + nest(100000, "[", "]") + `}`)
	wantError(t, c.response(json.RawMessage(`"deep-1"`)), jsonrpc.InvalidRequest, "100,000 nested arrays")

	// 30,000 nested arrays fit in a line but exceed encoding/json's depth
	// limit (10,000): a parse error; the id is not trusted.
	c.send(`{"jsonrpc":"2.0","id":"deep-2","method":"session/prompt","params":` + nest(30000, "[", "]") + `}`)
	wantError(t, c.nullResponse(), jsonrpc.ParseError, "30,000 nested arrays")

	// 10,000 nested objects in _meta: past the depth limit too.
	c.send(`{"jsonrpc":"2.0","id":"deep-3","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[],"_meta":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000) + `}}`)
	wantError(t, c.nullResponse(), jsonrpc.ParseError, "10,000 nested objects in _meta")

	// Just below the depth limit, in a lenient field: the prompt runs.
	depth := 9000
	m := c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"deep meta"}],"_meta":`+strings.Repeat(`{"a":`, depth)+`1`+strings.Repeat(`}`, depth)+`}`)
	assert.Equal(t, "end_turn", stopReason(m), "9,000 nested objects in _meta (lenient)")

	// Just below the depth limit where a content block belongs.
	m = c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[`+nest(depth, "[", "]")+`]}`)
	wantError(t, m, jsonrpc.InvalidParams, "9,000 nested arrays as a content block")

	// Deeply nested mcpServers and capabilities.
	m = c.call("session/new", `{"cwd":"/w","mcpServers":`+nest(depth, "[", "]")+`}`)
	wantError(t, m, jsonrpc.InvalidParams, "9,000 nested arrays as mcpServers")
	m = c.call("initialize", `{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}},"fs":`+nest(depth, "[", "]")+`}}`)
	assert.Nil(t, m.Error, "9,000 nested arrays in a lenient capability")

	c.works(sid)
}

func TestHostile_MalformedMessages(t *testing.T) {
	c := hostileServe(t, hostileFake(), memstore.New(), acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	for _, tc := range []struct {
		line string
		id   string // "" = id null
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"x"`, "", jsonrpc.ParseError},
		{`not json`, "", jsonrpc.ParseError},
		{`[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, "", jsonrpc.InvalidRequest},
		{`null`, "", jsonrpc.InvalidRequest},
		{`42`, "", jsonrpc.InvalidRequest},
		{`"a string"`, "", jsonrpc.InvalidRequest},
		{`{}`, "", jsonrpc.InvalidRequest},
		// Responses, even malformed ones, are never answered (code 0).
		{`{"jsonrpc":"2.0","id":3}`, "", 0},
		{`{"jsonrpc":"2.0","id":99,"result":{}}`, "", 0},
		{`{"jsonrpc":"2.0","id":98,"error":"no"}`, "", 0},
		{`{"jsonrpc":"2.0","id":97,"result":1,"error":{"code":1,"message":"m"}}`, "", 0},
		{`{"jsonrpc":"1.0","id":4,"method":"session/new","params":{}}`, "4", jsonrpc.InvalidRequest},
		{`{"id":5,"method":"session/new","params":{}}`, "5", jsonrpc.InvalidRequest},
		{`{"jsonrpc":2.0,"id":6,"method":"session/new","params":{}}`, "6", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"session/new"}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":[7],"method":"session/new"}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":true,"method":"session/new"}`, "", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":8,"method":42}`, "8", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":9,"method":null}`, "9", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":10,"method":"session/new","params":"cwd"}`, "10", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":11,"method":"session/new","params":42}`, "11", jsonrpc.InvalidRequest},
		{`{"jsonrpc":"2.0","id":12,"method":"session/new","params":[]}`, "12", jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":13,"method":"session/new"}`, "13", jsonrpc.InvalidParams},
		{`{"jsonrpc":"2.0","id":1.5,"method":"session/fly"}`, "1.5", jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":-7,"method":"session/fly"}`, "-7", jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":1e400,"method":"session/fly"}`, "1e400", jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":"","method":"session/fly"}`, `""`, jsonrpc.MethodNotFound},
		{`{"jsonrpc":"2.0","id":14,"id":15,"method":"session/fly"}`, "15", jsonrpc.MethodNotFound},
	} {
		c.send(tc.line)
		if tc.code == 0 {
			// A probe request is answered next: nothing came for the line.
			wantError(t, c.call("session/fly", `{}`), jsonrpc.MethodNotFound, "probe after "+tc.line)
			c.mu.Lock()
			assert.Empty(t, c.nullResps, "answer to %s", tc.line)
			c.mu.Unlock()
			continue
		}
		var m hostileMsg
		if tc.id == "" {
			m = c.nullResponse()
		} else {
			m = c.response(json.RawMessage(tc.id))
		}
		wantError(t, m, tc.code, tc.line)
	}
	// Blank lines and CRLF are fine.
	c.send("")
	c.send("   ")
	c.send(hostileLine(json.RawMessage(`"crlf"`), "session/fly", `{}`) + "\r")
	wantError(t, c.response(json.RawMessage(`"crlf"`)), jsonrpc.MethodNotFound, "CRLF")
	c.works(sid)
}

func TestHostile_UnknownMethodsAndSessions(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})

	// Before initialize, everything but initialize is refused.
	wantError(t, c.call("session/new", `{"cwd":"/","mcpServers":[]}`), jsonrpc.InvalidRequest, "before initialize")
	wantError(t, c.call("session/fly", `{}`), jsonrpc.InvalidRequest, "unknown method before initialize")
	c.initialize()
	sid := c.newSession()

	for _, method := range []string{"session/fly", "", "SESSION/NEW", "session/new ", "_sessionkit/unknown", "fs/read_text_file", "session/update", "$/cancel_request", "rpc.discover", strings.Repeat("m", 10000)} {
		wantError(t, c.call(method, `{}`), jsonrpc.MethodNotFound, "method "+method[:min(len(method), 30)])
	}
	// Unknown notifications are dropped silently.
	c.notify("session/fly", `{}`)
	c.notify("_sessionkit/unknown", `{"sessionId":"`+sid+`"}`)

	unknown := func(m hostileMsg, what string) {
		t.Helper()
		wantError(t, m, jsonrpc.ResourceNotFound, what)
		if m.Error != nil {
			assert.JSONEq(t, `{"sessionId":"no-such-session"}`, string(m.Error.Data), what)
		}
	}
	unknown(c.call("session/prompt", promptParams("no-such-session", "hi")), "prompt")
	unknown(c.call("session/prompt", promptParams("no-such-session", "/compact")), "/compact")
	unknown(c.call("session/load", `{"sessionId":"no-such-session","cwd":"/","mcpServers":[]}`), "load")
	unknown(c.call("session/cancel", `{"sessionId":"no-such-session"}`), "cancel as a request")
	unknown(c.call("_sessionkit/compact", `{"sessionId":"no-such-session"}`), "extension compact")
	c.notify("session/cancel", `{"sessionId":"no-such-session"}`)
	c.notify("session/prompt", promptParams("no-such-session", "hi"))
	// A session stored by nobody else but not open here is not a prompt
	// target until it is loaded.
	other, err := store.Create(context.Background(), history.NewSession{ID: "stored-not-open"})
	require.NoError(t, err)
	wantError(t, c.call("session/prompt", promptParams(other.ID, "hi")), jsonrpc.ResourceNotFound, "stored, not loaded")
	assert.Nil(t, c.call("session/load", `{"sessionId":"stored-not-open","cwd":"/","mcpServers":[]}`).Error)
	assert.Equal(t, "end_turn", stopReason(c.call("session/prompt", promptParams(other.ID, "hi"))))
	c.works(sid)
}

func TestHostile_IDsAndNotifications(t *testing.T) {
	store := memstore.New()
	c := hostileServe(t, hostileFake(), store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	idle := c.newSession()

	// A notification method sent with an id is a request and is answered.
	m := c.call("session/cancel", `{"sessionId":"`+sid+`"}`)
	assert.Nil(t, m.Error, "session/cancel with an id")
	assert.Equal(t, "null", string(m.Result))
	wantError(t, c.call("$/cancel_request", `{"requestId":1}`), jsonrpc.MethodNotFound, "$/cancel_request with an id")

	// id null is a request with id null.
	c.send(hostileLine(json.RawMessage("null"), "session/fly", `{}`))
	wantError(t, c.nullResponse(), jsonrpc.MethodNotFound, "id null")

	// Requests without ids are notifications: nothing is answered, the
	// handler still runs. A prompt without an id runs its turn.
	before := c.chunks(sid)
	c.notify("session/prompt", promptParams(sid, "prompt sent as a notification"))
	poll.Within(hostileWait, func() bool { return c.chunks(sid) != before })
	assert.Greater(t, c.chunks(sid), before, "the prompt sent as a notification ran")
	c.notify("initialize", `{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{}}}}`)
	c.notify("session/new", `{"cwd":"/","mcpServers":[]}`)
	c.notify("session/new", `{"cwd":5}`)
	c.notify("_sessionkit/compact", `{"sessionId":"`+sid+`"}`)
	// (A load of sid now, while its turn may stream, would race: see
	// TestHostile_LoadOfBusySession.)
	c.notify("session/load", `{"sessionId":"`+idle+`","cwd":"/","mcpServers":[]}`)
	c.notify("authenticate", `{"methodId":"x"}`)

	// Two requests with the same id are both answered.
	c.send(hostileLine(json.RawMessage(`"dup"`), "session/fly", `{}`))
	c.send(hostileLine(json.RawMessage(`"dup"`), "session/fly", `{}`))
	wantError(t, c.response(json.RawMessage(`"dup"`)), jsonrpc.MethodNotFound, "first duplicate id")
	wantError(t, c.response(json.RawMessage(`"dup"`)), jsonrpc.MethodNotFound, "second duplicate id")

	// Nothing was ever answered that was not asked: every response so far
	// belongs to a request.
	c.mu.Lock()
	nulls := len(c.nullResps)
	c.mu.Unlock()
	assert.Zero(t, nulls, "responses with id null nobody waited for")
	c.works(sid)
	c.works(idle)
}

// TestHostile_LoadOfBusySession: session/load of a session that is open on
// the connection and streaming. The replay must not interleave with the live
// updates (§7.6: the whole timeline, in order, before the response) and must
// not race with the session's forwarder.
func TestHostile_LoadOfBusySession(t *testing.T) {
	fake := providertest.New()
	live := make([]string, 3000)
	for i := range live {
		live[i] = "live "
	}
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "earlier reply"} })
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	const earlier = 40 // a replay long enough to overlap the live stream
	for i := range earlier {
		assert.Equal(t, "end_turn", stopReason(c.call("session/prompt", promptParams(sid, fmt.Sprintf("earlier prompt %d", i)))))
	}

	fake.QueueTurn(providertest.Reply{Text: "streaming reply", Deltas: live})
	streaming := c.request("session/prompt", promptParams(sid, "stream now"))
	require.NoError(t, fake.WaitCalls(context.Background(), earlier+1))
	load := c.response(c.request("session/load", `{"sessionId":"`+sid+`","cwd":"/","mcpServers":[]}`))
	require.Nil(t, load.Error)
	assert.Equal(t, "end_turn", stopReason(c.response(streaming)))

	// Between the first replayed update and the load response, only the
	// replay: no live delta. The replay ends with the message being
	// streamed, its text so far as one chunk (which is "live " when one
	// delta had been streamed at the cut).
	c.mu.Lock()
	defer c.mu.Unlock()
	first := 0
	for _, n := range c.notes {
		if n.kind == "user_message_chunk" {
			first = n.seq
			break
		}
	}
	require.NotZero(t, first, "no replay")
	interleaved := 0
	for _, n := range c.notes {
		if n.seq > first && n.seq < load.seq-1 && strings.HasPrefix(n.text, "live ") {
			interleaved++
		}
	}
	assert.Zero(t, interleaved, "live deltas between the replay's first update and the load response")
}

// hostileField is one params member of a method, with what the agent must
// do with a value of the wrong type.
type hostileField struct {
	name string
	typ  string // "string", "uint16", "array", "object"; "lenient" accepts anything
	null bool   // null is accepted
}

var hostileValues = []string{`42`, `-1`, `1.5`, `70000`, `"s"`, `""`, `true`, `[]`, `[1]`, `{}`, `{"a":1}`, `null`}

// fits reports whether the raw value v has the JSON type typ (for the
// decoder, which may accept it).
func fits(typ, v string) bool {
	switch typ {
	case "lenient":
		return true
	case "uint16":
		return v == "42"
	case "string":
		return v[0] == '"'
	case "array":
		return v[0] == '['
	case "object":
		return v[0] == '{'
	}
	return false
}

// withMember returns the params valid with member field set to the raw
// value, or left out when drop is set.
func withMember(valid map[string]string, field, value string, drop bool) string {
	var parts []string
	for k, v := range valid {
		if k != field {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	if !drop {
		parts = append(parts, fmt.Sprintf("%q:%s", field, value))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func TestHostile_WrongParamTypes(t *testing.T) {
	fake := hostileFake()
	store := memstore.New()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()
	loadable := c.newSession()

	type method struct {
		name   string
		valid  map[string]string // raw member values of valid params
		fields []hostileField
	}
	methods := []method{
		{"initialize", map[string]string{"protocolVersion": `1`, "clientCapabilities": `{"session":{"compaction":{}}}`}, []hostileField{
			{"protocolVersion", "uint16", false}, {"clientCapabilities", "lenient", true}, {"clientInfo", "lenient", true}, {"_meta", "lenient", true},
		}},
		{"authenticate", map[string]string{"methodId": `"m"`}, []hostileField{
			{"methodId", "string", false}, {"_meta", "lenient", true},
		}},
		{"session/new", map[string]string{"cwd": `"/w"`, "mcpServers": `[]`}, []hostileField{
			{"cwd", "string", false}, {"mcpServers", "array", true}, {"additionalDirectories", "array", true}, {"_meta", "lenient", true},
		}},
		{"session/load", map[string]string{"sessionId": `"` + loadable + `"`, "cwd": `"/w"`, "mcpServers": `[]`}, []hostileField{
			{"sessionId", "string", false}, {"cwd", "string", false}, {"mcpServers", "array", true}, {"additionalDirectories", "array", true}, {"_meta", "lenient", true},
		}},
		{"session/prompt", map[string]string{"sessionId": `"` + sid + `"`, "prompt": `[{"type":"text","text":"typed"}]`}, []hostileField{
			{"sessionId", "string", false}, {"prompt", "array", false}, {"_meta", "lenient", true},
		}},
		{"session/cancel", map[string]string{"sessionId": `"` + sid + `"`}, []hostileField{
			{"sessionId", "string", false}, {"_meta", "lenient", true},
		}},
		{"_sessionkit/compact", map[string]string{"sessionId": `"` + sid + `"`}, []hostileField{
			{"sessionId", "string", false}, {"instructions", "string", true},
		}},
	}
	params := withMember
	cases, refused := 0, 0
	for _, m := range methods {
		// The valid params are accepted.
		require.Nil(t, c.call(m.name, params(m.valid, "", "", true)).Error, "%s with valid params", m.name)
		for _, f := range m.fields {
			for _, v := range hostileValues {
				if v == m.valid[f.name] {
					continue
				}
				what := fmt.Sprintf("%s %s=%s", m.name, f.name, v)
				got := c.call(m.name, params(m.valid, f.name, v, false))
				cases++
				switch {
				case fits(f.typ, v) || v == "null" && f.null:
					// Right type (the value may still be refused, as
					// an empty cwd or an unknown session) or an
					// accepted null: anything but a crash.
					if got.Error != nil {
						refused++
						assert.Contains(t, []int{jsonrpc.InvalidParams, jsonrpc.ResourceNotFound}, got.Error.Code, "%s: %s", what, got.Error.Message)
					} else if testing.Verbose() {
						t.Logf("accepted: %s", what)
					}
				default:
					refused++
					wantError(t, got, jsonrpc.InvalidParams, what)
					if got.Error != nil {
						assert.Contains(t, got.Error.Message, f.name, "%s: the error names the field", what)
					}
				}
			}
			// A missing required field.
			if !f.null && f.typ != "lenient" {
				got := c.call(m.name, params(m.valid, f.name, "", true))
				cases++
				refused++
				wantError(t, got, jsonrpc.InvalidParams, m.name+" without "+f.name)
			}
		}
		// Params that are an array, and no params at all.
		wantError(t, c.call(m.name, `[]`), jsonrpc.InvalidParams, m.name+" with array params")
		wantError(t, c.call(m.name, `[1,"x"]`), jsonrpc.InvalidParams, m.name+" with array params")
		cases += 2
		refused += 2
	}

	// Inside the prompt: content blocks of the wrong shape.
	for _, block := range []string{
		`42`, `"text"`, `null`, `[]`, `{}`, `{"type":42}`, `{"type":null,"text":"x"}`, `{"type":"text"}`, `{"type":"text","text":42}`,
		`{"type":"text","text":null}`, `{"type":"text","text":["a"]}`, `{"type":"image","data":"AA==","mimeType":"image/png"}`,
		`{"type":"audio","data":"AA==","mimeType":"audio/wav"}`, `{"type":"resource_link","name":5,"uri":"file:///x"}`,
		`{"type":"resource_link","uri":"file:///x"}`, `{"type":"resource","resource":42}`, `{"type":"resource","resource":{"uri":"file:///x","blob":"AA=="}}`,
		`{"type":"no-such-type","text":"x"}`, `{"type":"text","text":"   "}`,
	} {
		got := c.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[`+block+`]}`)
		cases++
		refused++
		wantError(t, got, jsonrpc.InvalidParams, "content block "+block)
	}
	// Inside session/new: MCP servers of the wrong shape.
	for _, srv := range []string{`42`, `"x"`, `[]`, `{}`, `{"name":5,"command":"x","args":[],"env":[]}`, `{"type":"http","name":"h","url":5,"headers":[]}`, `{"type":"sse","name":"s"}`} {
		got := c.call("session/new", `{"cwd":"/w","mcpServers":[`+srv+`]}`)
		cases++
		refused++
		wantError(t, got, jsonrpc.InvalidParams, "mcp server "+srv)
	}
	t.Logf("%d wrong-typed params cases, %d refused with an error, %d accepted", cases, refused, cases-refused)

	// The connection and the sessions still work; the capability is intact.
	c.initialize()
	c.works(sid)
	c.works(loadable)
}

// TestHostile_Floods sends prompts, session/cancel, /compact and
// $/cancel_request on several sessions at once, without waiting, at random
// points. Every request gets a result or an error; afterwards every session
// still works.
func TestHostile_Floods(t *testing.T) {
	const sessions, perSession = 4, 60
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	fake := providertest.New()
	fake.SetDefault(func(r *provider.Request) providertest.Reply {
		if r.Purpose == provider.PurposeSummary {
			return providertest.Reply{Text: "## Summary\n- earlier", Delay: time.Millisecond}
		}
		return providertest.Reply{Deltas: []string{"a ", "b ", "c"}, Delay: time.Millisecond, Usage: provider.Usage{InputTokens: 50, OutputTokens: 5}}
	})
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{Session: sessionConfigAuto(50)})
	c.initialize()
	sids := make([]string, sessions)
	for i := range sids {
		sids[i] = c.newSession()
	}

	type sent struct {
		id     json.RawMessage
		method string
	}
	var all []sent
	left := make([]int, sessions)
	for i := range left {
		left[i] = perSession
	}
	cancels, requestCancels := 0, 0
	for remaining := sessions * perSession; remaining > 0; {
		i := rng.IntN(sessions)
		if left[i] == 0 {
			continue
		}
		left[i]--
		remaining--
		sid := sids[i]
		switch r := rng.IntN(20); {
		case r == 0:
			all = append(all, sent{c.request("session/prompt", promptParams(sid, "/compact keep it short")), "/compact"})
		case r == 1:
			all = append(all, sent{c.request("_sessionkit/compact", `{"sessionId":"`+sid+`"}`), "_sessionkit/compact"})
		default:
			all = append(all, sent{c.request("session/prompt", promptParams(sid, fmt.Sprintf("flood %d on %d", remaining, i))), "session/prompt"})
		}
		switch r := rng.IntN(10); {
		case r < 2:
			c.notify("session/cancel", `{"sessionId":"`+sids[rng.IntN(sessions)]+`"}`)
			cancels++
		case r == 2:
			victim := all[rng.IntN(len(all))]
			c.notify("$/cancel_request", `{"requestId":`+string(victim.id)+`}`)
			requestCancels++
		}
	}
	reasons := map[string]int{}
	for _, s := range all {
		m := c.response(s.id)
		switch {
		case m.Error != nil:
			reasons[fmt.Sprintf("%s error %d", s.method, m.Error.Code)]++
			assert.Equal(t, jsonrpc.RequestCancelled, m.Error.Code, "%s: %s", s.method, m.Error.Message)
		case s.method == "_sessionkit/compact":
			reasons[s.method+" accepted"]++
		default:
			r := stopReason(m)
			reasons[s.method+" "+r]++
			assert.Contains(t, []string{"end_turn", "cancelled"}, r, s.method)
		}
	}
	t.Logf("%d requests, %d session/cancel, %d $/cancel_request: %v", len(all), cancels, requestCancels, reasons)
	for _, sid := range sids {
		c.works(sid)
	}
}

// TestHostile_CancelRequestOfQueuedPrompt: $/cancel_request for a prompt
// that waits behind another turn of its session must cancel that prompt,
// not the turn that runs.
func TestHostile_CancelRequestOfQueuedPrompt(t *testing.T) {
	fake := providertest.New()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Text: "first", Gate: gate})
	fake.SetDefault(func(*provider.Request) providertest.Reply { return providertest.Reply{Text: "later"} })
	store := memstore.New()
	c := hostileServe(t, fake, store, acp.ServerOptions{})
	c.initialize()
	sid := c.newSession()

	running := c.request("session/prompt", promptParams(sid, "the running one"))
	require.NoError(t, fake.WaitCalls(context.Background(), 1))
	queued := c.request("session/prompt", promptParams(sid, "the queued one"))
	// Requests are dispatched in order: once the probe is answered, the
	// queued prompt has been admitted (its handler detached).
	wantError(t, c.call("session/fly", `{}`), jsonrpc.MethodNotFound, "probe")
	c.notify("$/cancel_request", `{"requestId":`+string(queued)+`}`)
	wantError(t, c.response(queued), jsonrpc.RequestCancelled, "the cancelled prompt")
	close(gate)
	assert.Equal(t, "end_turn", stopReason(c.response(running)), "the running prompt was not cancelled by the client")
	snap, err := store.Load(context.Background(), sid)
	require.NoError(t, err)
	for _, m := range snap.Active {
		assert.NotEqual(t, "the queued one", m.Text, "the cancelled prompt must not run")
	}
}

// streamingProvider answers a turn whose last user message contains "LONG"
// with n deltas of size bytes, each a fresh allocation (as a real provider's
// would be), and the message "LONG REPLY"; everything else goes to the Fake.
type streamingProvider struct {
	*providertest.Fake
	n, size  int
	started  chan struct{} // closed when the long reply starts
	once     sync.Once
	produced atomic.Int64 // deltas delivered
}

func (p *streamingProvider) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	msgs := req.Messages
	if req.Purpose != provider.PurposeTurn || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Text, "LONG") {
		return p.Fake.Complete(ctx, req, onDelta)
	}
	p.once.Do(func() { close(p.started) })
	for i := range p.n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := bytes.Repeat([]byte{byte('a' + i%26)}, p.size)
		b[len(b)-1] = ' '
		onDelta(string(b))
		p.produced.Add(1)
	}
	return &provider.Response{Message: history.Message{Role: history.RoleAssistant, Text: "LONG REPLY"}, Usage: provider.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

// TestHostile_ClientStopsReading: a client that stops reading while a turn
// streams a lot of output. The agent's memory stays bounded and other
// sessions are still admitted; once the client reads again, everything is
// answered.
func TestHostile_ClientStopsReading(t *testing.T) {
	const deltas, deltaBytes = 80000, 1024 // 80 MB of agent text
	prov := &streamingProvider{Fake: hostileFake(), n: deltas, size: deltaBytes, started: make(chan struct{})}
	store := memstore.New()
	c := hostileServe(t, prov, store, acp.ServerOptions{})
	c.initialize()
	a, b := c.newSession(), c.newSession()

	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	committed := func(sid, reply string) bool {
		snap, err := store.Load(context.Background(), sid)
		require.NoError(t, err)
		for _, m := range snap.Active {
			if m.Role == history.RoleAssistant && m.Text == reply {
				return true
			}
		}
		return false
	}
	before := heap()
	goroutinesBefore := runtime.NumGoroutine()
	start := time.Now()

	c.pause()
	longID := c.request("session/prompt", promptParams(a, "stream a LONG answer"))
	select {
	case <-prov.started:
	case <-time.After(hostileWait):
		t.Fatal("the long turn did not start")
	}

	// While the agent is blocked writing a's output, b is admitted and its
	// turn runs (the response waits for the client, which does not read).
	bID := c.request("session/prompt", promptParams(b, "short question while the client is stuck"))
	deadline, cancel := context.WithTimeout(context.Background(), hostileWait)
	defer cancel()
	poll.Context(deadline, func() bool { return committed(b, "ok") })
	assert.True(t, committed(b, "ok"), "session b's prompt was not admitted and run while session a's output was blocked")
	admittedB := prov.produced.Load()

	// a's turn produces all its output while nobody reads it.
	peak := heap()
	samples := 1
	for !committed(a, "LONG REPLY") && deadline.Err() == nil {
		time.Sleep(20 * time.Millisecond) // the heap's sampling period, not a wait for an order
		peak = max(peak, heap())
		samples++
	}
	require.True(t, committed(a, "LONG REPLY"), "session a's long turn did not finish while the client was not reading")
	retained := heap() // nothing allocates now: what back-pressure holds
	peak = max(peak, retained)
	goroutinesDuring := runtime.NumGoroutine()
	// Session a takes more work.
	moreID := c.request("session/prompt", promptParams(a, "and one more"))
	poll.Context(deadline, func() bool { return committed(a, "ok") })
	assert.True(t, committed(a, "ok"), "a later prompt on session a did not run while the client was not reading")
	peak = max(peak, heap())
	paused := time.Since(start)
	c.mu.Lock()
	readWhilePaused := c.lines
	c.mu.Unlock()
	c.resume()

	assert.Equal(t, "end_turn", stopReason(c.response(longID)), "the long prompt")
	assert.Equal(t, "end_turn", stopReason(c.response(bID)), "b's prompt")
	assert.Equal(t, "end_turn", stopReason(c.response(moreID)), "a's later prompt")
	after := heap()
	growth := int64(peak) - int64(before)
	t.Logf("heap before %.1f MiB; while the client did not read: peak %.1f MiB (growth %.1f MiB, %d samples taken while streaming, floating garbage included), retained once the turn was done %.1f MiB (growth %.1f MiB); %d MB of agent text produced in %v; after the client read again %.1f MiB",
		mib(before), mib(peak), float64(growth)/(1<<20), samples, mib(retained), float64(int64(retained)-int64(before))/(1<<20), deltas*deltaBytes/1000000, paused.Round(time.Millisecond), mib(after))
	t.Logf("b admitted and answered by its provider after %d of a's %d deltas; goroutines %d -> %d; a's chunks received %d of %d; lines the client had read when it resumed %d",
		admittedB, deltas, goroutinesBefore, goroutinesDuring, c.chunks(a), deltas, readWhilePaused)
	assert.Less(t, growth, int64(64<<20), "heap growth under back-pressure (peak)")
	// What stays is the forwarder's bounded buffer (1<<14 events of 1 KiB).
	assert.Less(t, int64(retained)-int64(before), int64(32<<20), "heap growth under back-pressure (retained)")
	c.works(a)
	c.works(b)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// sessionConfigAuto is a session template with automatic compaction at
// tokens (0 = off).
func sessionConfigAuto(tokens int) session.Config {
	return session.Config{AutoCompactTokens: tokens}
}

// TestHostile_ForwarderSurvivesTrimmedHistory: a client that stops reading
// long enough for its session's event history to be trimmed must still get
// the session's updates once it reads again.
func TestHostile_ForwarderSurvivesTrimmedHistory(t *testing.T) {
	const deltas = 20000 // more than the forwarder's buffer (1<<14)
	long := make([]string, deltas)
	for i := range long {
		long[i] = "x "
	}
	fake := hostileFake()
	fake.QueueTurn(providertest.Reply{Text: "LONG REPLY", Deltas: long})
	cfg := sessionConfigAuto(0)
	cfg.EventHistory = 16 // trimmed after 32 durable events
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{Session: cfg})
	c.initialize()
	sid := c.newSession()

	c.pause()
	ids := []json.RawMessage{c.request("session/prompt", promptParams(sid, "stream a LONG answer"))}
	for i := range 20 { // about 5 durable events each
		ids = append(ids, c.request("session/prompt", promptParams(sid, fmt.Sprintf("more %d", i))))
	}
	require.NoError(t, fake.WaitCalls(context.Background(), len(ids)))
	c.resume()
	for _, id := range ids {
		assert.Equal(t, "end_turn", stopReason(c.response(id)))
	}
	c.works(sid)
}
