package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/session/agenttest"
)

// pipeAgent runs acp.Serve in this process and dials it over pipes.
type pipeAgent struct {
	client  *acp.Client
	served  chan error
	toAgent *io.PipeWriter
}

func startPipeAgent(t *testing.T, p provider.Provider, store history.Store, opts acp.ServerOptions) *pipeAgent {
	t.Helper()
	return startPipeAgentWith(t, p, store, opts, acp.ClientOptions{})
}

// versions are the client options of a connection of each version.
var versions = []struct {
	name    string
	opts    acp.ClientOptions
	version schema.ProtocolVersion
}{
	{"v1", acp.ClientOptions{V1Only: true}, schema.ProtocolVersion1},
	{"v2", acp.ClientOptions{}, schema.ProtocolVersion2},
}

// startPipeAgentWith is startPipeAgent with the client's options.
func startPipeAgentWith(t *testing.T, p provider.Provider, store history.Store, opts acp.ServerOptions, copts acp.ClientOptions) *pipeAgent {
	t.Helper()
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	opts.Session.Provider = p
	opts.Session.Store = store
	opts.Logger = zaptest.NewLogger(t)
	pa := &pipeAgent{served: make(chan error, 1), toAgent: toAgent}
	go func() {
		pa.served <- acp.Serve(context.Background(), agentIn, agentOut, opts)
		_ = agentOut.Close()
	}()
	copts.Logger = zaptest.NewLogger(t)
	c, err := acp.Dial(context.Background(), fromAgent, toAgent, copts)
	require.NoError(t, err)
	pa.client = c
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		select {
		case err := <-pa.served:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return pa
}

func TestRemote_AgentSuite(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			agenttest.Run(t, agenttest.Harness{New: func(t *testing.T, p provider.Provider) session.Agent {
				pa := startPipeAgentWith(t, p, memstore.New(), acp.ServerOptions{}, v.opts)
				require.Equal(t, v.version, pa.client.Protocol())
				rs, err := pa.client.NewSession(context.Background(), "/project")
				require.NoError(t, err)
				t.Cleanup(func() { _ = rs.Close() })
				return rs
			}})
		})
	}
}

// rawAgent is an agent played by the test, line by line.
type rawAgent struct {
	t    *testing.T
	msgs chan map[string]any // what the client sent, read as it arrives
	out  *io.PipeWriter      // to the client
}

func dialRaw(t *testing.T, opts acp.ClientOptions, initResult string) (*acp.Client, *rawAgent, chan error) {
	t.Helper()
	fromClient, toAgent := io.Pipe()
	fromAgent, toClient := io.Pipe()
	ra := &rawAgent{t: t, msgs: make(chan map[string]any, 100), out: toClient}
	go func() {
		defer close(ra.msgs)
		in := bufio.NewReader(fromClient)
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil {
				ra.msgs <- m
			}
		}
	}()
	type dialed struct {
		c   *acp.Client
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		c, err := acp.Dial(context.Background(), fromAgent, toAgent, opts)
		ch <- dialed{c, err}
	}()
	req := ra.read()
	require.Equal(t, "initialize", req["method"])
	ra.respond(req, initResult)
	d := <-ch
	require.NoError(t, d.err)
	t.Cleanup(func() {
		_ = toClient.Close()
		_ = d.c.Close()
		_ = fromClient.Close()
		for range ra.msgs {
		}
	})
	return d.c, ra, nil
}

func (ra *rawAgent) read() map[string]any {
	ra.t.Helper()
	select {
	case m, ok := <-ra.msgs:
		require.True(ra.t, ok, "the client closed its end")
		return m
	case <-time.After(10 * time.Second):
		ra.t.Fatal("the client sent nothing")
		return nil
	}
}

func (ra *rawAgent) write(line string) {
	ra.t.Helper()
	_, err := io.WriteString(ra.out, line+"\n")
	require.NoError(ra.t, err)
}

func (ra *rawAgent) respond(req map[string]any, result string) {
	id, _ := json.Marshal(req["id"])
	ra.write(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func (ra *rawAgent) newSession(c *acp.Client, commands string) *acp.RemoteSession {
	ra.t.Helper()
	return ra.newSessionUpdated(c, commands, false)
}

// newSessionUpdated is newSession with the available_commands_update
// written before the session/new response that names the session when
// early is set.
func (ra *rawAgent) newSessionUpdated(c *acp.Client, commands string, early bool) *acp.RemoteSession {
	ra.t.Helper()
	ch := make(chan *acp.RemoteSession, 1)
	go func() {
		rs, err := c.NewSession(context.Background(), "/w")
		assert.NoError(ra.t, err)
		ch <- rs
	}()
	req := ra.read()
	require.Equal(ra.t, "session/new", req["method"])
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"available_commands_update","availableCommands":` + commands + `}}}`
	if early {
		ra.write(update)
	}
	ra.respond(req, `{"sessionId":"s1"}`)
	if commands != "" && !early {
		// Right after the response, as agents do: NewSession may not have
		// registered the session yet, and the update must not be lost.
		ra.write(update)
	}
	return <-ch
}

const plainInit = `{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}`

func TestRemote_AgentExitFinishesEveryHandle(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, `{"protocolVersion":1,"agentCapabilities":{"_meta":{"sessionkit":{"compact":"_sessionkit/compact"}}}}`)
	rs := ra.newSession(c, "")
	sub, err := rs.Subscribe(context.Background(), session.SubscribeOptions{})
	require.NoError(t, err)
	turn, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "session/prompt", ra.read()["method"])
	done := make(chan *session.Handle[session.CompactResult], 1)
	go func() {
		h, err := rs.Compact(context.Background(), session.CompactRequest{})
		assert.NoError(t, err)
		done <- h
	}()
	req := ra.read()
	require.Equal(t, "_sessionkit/compact", req["method"])
	ra.respond(req, `{"compactId":"c9"}`)
	comp := <-done
	require.Equal(t, "c9", comp.ID())

	require.NoError(t, ra.out.Close()) // the agent process is gone
	res := wait(t, turn)
	assert.ErrorIs(t, res.Err, acp.ErrConnection)
	cres := wait(t, comp)
	assert.Equal(t, session.ReasonCompactFailed, cres.Reason)
	assert.Contains(t, cres.Error, "connection to the agent lost")
	for range sub.Events() {
	}
	assert.ErrorIs(t, sub.Err(), acp.ErrConnection)
	_, err = rs.Prompt(context.Background(), session.PromptRequest{Text: "again"})
	assert.ErrorIs(t, err, acp.ErrConnection)
}

func TestRemote_MalformedMessageFinishesEveryHandle(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
	rs := ra.newSession(c, "")
	turn, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "session/prompt", ra.read()["method"])
	ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{`) // cut short
	res := wait(t, turn)
	assert.ErrorIs(t, res.Err, acp.ErrConnection)
	assert.Contains(t, res.Err.Error(), "malformed message from the agent")
}

func TestRemote_TimeoutFinishesHandle(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{RequestTimeout: 50 * time.Millisecond}, plainInit)
	rs := ra.newSession(c, "")
	turn, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, "session/prompt", ra.read()["method"])
	res := wait(t, turn)
	assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
}

func TestRemote_CompactFallbackAndUnsupported(t *testing.T) {
	t.Run("neither: error, nothing sent", func(t *testing.T) {
		c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
		rs := ra.newSession(c, "")
		_, err := rs.Compact(context.Background(), session.CompactRequest{})
		assert.ErrorIs(t, err, acp.ErrUnsupported)
		select {
		case m := <-ra.msgs:
			t.Fatalf("Compact sent %v", m)
		case <-time.After(50 * time.Millisecond):
		}
	})
	for _, tc := range []struct {
		name, terminal string
		want           session.CompactResult
	}{
		{"completed", `{"sessionUpdate":"compaction_update","compactionId":"x1","status":"completed","summary":[{"type":"text","text":"SUM"}]}`,
			session.CompactResult{Success: true, Compacted: true, Reason: session.ReasonCompacted}},
		{"failed", `{"sessionUpdate":"compaction_update","compactionId":"x1","status":"failed","summary":null,"error":"boom"}`,
			session.CompactResult{Reason: session.ReasonCompactFailed, Error: "boom"}},
		{"cancelled", `{"sessionUpdate":"compaction_update","compactionId":"x1","status":"cancelled","summary":null}`,
			session.CompactResult{Reason: session.ReasonCompactFailed, Error: session.ErrCancelled.Error(), Cancelled: true}},
	} {
		t.Run("only /compact: "+tc.name, func(t *testing.T) {
			c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
			rs := ra.newSession(c, `[{"name":"compact","description":"compact"}]`)
			poll.Until(t, 5*time.Second, func() bool { return len(rs.Commands()) == 1 }, "the available commands")
			h, err := rs.Compact(context.Background(), session.CompactRequest{Instructions: "keep it"})
			require.NoError(t, err)
			req := ra.read()
			require.Equal(t, "session/prompt", req["method"])
			params := req["params"].(map[string]any)
			assert.Equal(t, "/compact keep it", params["prompt"].([]any)[0].(map[string]any)["text"])
			ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"compaction_update","compactionId":"x1","status":"in_progress"}}}`)
			ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + tc.terminal + `}}`)
			ra.respond(req, `{"stopReason":"end_turn"}`)
			res := wait(t, h)
			want := tc.want
			want.CompactID, want.Trigger = h.ID(), session.TriggerManual
			if res.Segment != nil {
				assert.Equal(t, "SUM", res.Segment.Summary)
				res.Segment = nil
			}
			assert.Equal(t, want, res)
		})
	}
	t.Run("only /compact: no entity means nothing to compact", func(t *testing.T) {
		c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
		rs := ra.newSession(c, `[{"name":"compact","description":"compact"}]`)
		poll.Until(t, 5*time.Second, func() bool { return len(rs.Commands()) == 1 }, "the available commands")
		h, err := rs.Compact(context.Background(), session.CompactRequest{})
		require.NoError(t, err)
		req := ra.read()
		ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Nothing to compact."}}}}`)
		ra.respond(req, `{"stopReason":"end_turn"}`)
		res := wait(t, h)
		assert.Equal(t, session.ReasonNothingToCompact, res.Reason)
		assert.True(t, res.Success)
	})
}

func wait[R any](t *testing.T, h *session.Handle[R]) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := h.Wait(ctx)
	require.NoError(t, err)
	return r
}

// TestRemote_QueuedPromptsKeepTheirUpdates: two prompts sent back to back on
// one session; the agent answers the first before it sends any update of the
// second, and each TurnResult holds only its own turn's messages.
func TestRemote_QueuedPromptsKeepTheirUpdates(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) { testQueuedPromptsKeepTheirUpdates(t, v.opts) })
	}
}

func testQueuedPromptsKeepTheirUpdates(t *testing.T, copts acp.ClientOptions) {
	pa := startPipeAgentWith(t, offline.New(offline.WithDeltaSize(1)), memstore.New(), acp.ServerOptions{}, copts)
	rs, err := pa.client.NewSession(context.Background(), "/w")
	require.NoError(t, err)
	defer rs.Close()
	for i := range 30 {
		a, err := rs.Prompt(context.Background(), session.PromptRequest{Text: fmt.Sprintf("A%d first.", i)})
		require.NoError(t, err)
		b, err := rs.Prompt(context.Background(), session.PromptRequest{Text: fmt.Sprintf("B%d second.", i)})
		require.NoError(t, err)
		ra, rb := wait(t, a), wait(t, b)
		require.NoError(t, ra.Err)
		require.NoError(t, rb.Err)
		require.Len(t, ra.Messages, 2)
		require.Len(t, rb.Messages, 2)
		assert.Contains(t, ra.Messages[1].Text, fmt.Sprintf("Noted: A%d first.", i))
		assert.NotContains(t, ra.Messages[1].Text, "B")
		assert.Contains(t, rb.Messages[1].Text, fmt.Sprintf("Noted: B%d second.", i))
	}
}

// An assistant message streamed under one messageId and interrupted by a
// compaction entity (a compaction at a step checkpoint of the turn, as the
// agent reports it) is one message in TurnResult.Messages: the turn is
// assembled by messageId.
func TestRemote_MessageStaysWholeAroundACompaction(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
	rs := ra.newSession(c, "")
	turn, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "hi"})
	require.NoError(t, err)
	req := ra.read()
	require.Equal(t, "session/prompt", req["method"])
	update := func(u string) {
		ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`)
	}
	update(`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hello "}}`)
	update(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}`)
	update(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"S"}]}`)
	update(`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"there"}}`)
	update(`{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"second"}}`)
	ra.respond(req, `{"stopReason":"end_turn"}`)
	res := wait(t, turn)
	require.NoError(t, res.Err)
	var texts []string
	for _, m := range res.Messages {
		texts = append(texts, string(m.Role)+":"+m.Text)
	}
	assert.Equal(t, []string{"user:hi", "assistant:hello there", "assistant:second"}, texts)
	assert.Equal(t, "m1", res.Messages[1].ID, "the message keeps the agent's ID")
}

// An error the agent answers with is an *acp.RPCError: code, message and
// data, verbatim.
func TestRemote_AgentErrorsAreRPCErrors(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, plainInit)
	go func() {
		req := ra.read()
		id, _ := json.Marshal(req["id"])
		ra.write(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32002,"message":"unknown session","data":{"sessionId":"nope"}}}`)
	}()
	_, err := c.LoadSession(context.Background(), "nope", "/w")
	var re *acp.RPCError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, -32002, re.Code)
	assert.Equal(t, "unknown session", re.Message)
	assert.JSONEq(t, `{"sessionId":"nope"}`, string(re.Data))
}

// A RemoteSession's prompt sends its attachments as the content blocks they
// stand for, on v1 and v2: the agent's provider gets them back as they were
// (without the note, which is the agent's own).
func TestRemote_PromptAttachments(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			fake := providertest.New()
			fake.SetImageTypes("image/png")
			fake.QueueTurn(providertest.Reply{Text: "ok"})
			pa := startPipeAgentWith(t, fake, memstore.New(), acp.ServerOptions{}, v.opts)
			rs, err := pa.client.NewSession(context.Background(), "/w")
			require.NoError(t, err)
			defer rs.Close()
			atts := []history.Attachment{
				{Kind: history.AttachLink, At: 4, Name: "a.go", URI: "file:///w/a.go", Text: "desc", Note: "not sent"},
				{Kind: history.AttachResource, At: 4, URI: "file:///w/b.md", Text: "notes"},
				{Kind: history.AttachImage, At: 4, MIMEType: "image/png", Data: []byte{0x89, 1, 2}},
			}
			h, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "see  end", Attachments: atts})
			require.NoError(t, err)
			require.NoError(t, wait(t, h).Err)
			reqs := fake.Requests()
			require.Len(t, reqs, 1)
			atts[0].Note = ""
			assert.Equal(t, "see  end", reqs[0].Messages[0].Text)
			assert.Equal(t, atts, reqs[0].Messages[0].Attachments)
			_, err = rs.Prompt(context.Background(), session.PromptRequest{Attachments: []history.Attachment{{Kind: history.AttachLink, Name: "x"}}})
			assert.ErrorIs(t, err, session.ErrInvalid, "a link without a URI is refused before it is sent")
		})
	}
}
