package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// A RemoteSession over v2: a turn with a tool call assembled from
// tool_call_updates, a failed turn (idle error) and a cancelled one (idle
// cancelled), a compaction, and LoadSession (resume with replay) on a new
// connection.
func TestRemoteV2_Session(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	opts := acp.ServerOptions{}
	opts.Session.Tools = []session.Tool{{Name: "echo", Run: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}}
	pa := startPipeAgentWith(t, fake, store, opts, acp.ClientOptions{})
	require.Equal(t, schema.ProtocolVersion2, pa.client.Protocol())
	info, ok := pa.client.AgentInfoV2()
	require.True(t, ok)
	assert.Equal(t, "sessionkit", info.Info.Name)
	rs, err := pa.client.NewSession(context.Background(), "/w")
	require.NoError(t, err)

	fake.QueueTurn(providertest.Reply{Text: "calling", ToolCalls: []history.ToolCall{{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{}`)}}},
		providertest.Reply{Text: "done"})
	h, err := rs.Prompt(context.Background(), session.PromptRequest{Text: "use the tool"})
	require.NoError(t, err)
	res := wait(t, h)
	require.NoError(t, res.Err)
	var shape []string
	for _, m := range res.Messages {
		s := string(m.Role) + ":" + m.Text
		for _, c := range m.ToolCalls {
			s += "+" + c.Name
		}
		shape = append(shape, s)
	}
	assert.Equal(t, []string{"user:use the tool", "assistant:calling+echo", "tool:echoed", "assistant:done"}, shape)

	fake.QueueTurn(providertest.Reply{Err: errors.New("model down")})
	res = wait(t, must(rs.Prompt(context.Background(), session.PromptRequest{Text: "fail"})))
	var re *acp.RPCError
	require.ErrorAs(t, res.Err, &re, "a failed turn ends idle with stopReason error")
	assert.Contains(t, re.Message, "model down")

	gate := make(chan struct{})
	defer close(gate)
	fake.QueueTurn(providertest.Reply{Text: "never", Gate: gate})
	calls := len(fake.Requests())
	h = must(rs.Prompt(context.Background(), session.PromptRequest{Text: "long"}))
	poll.Until(t, hostileWait, func() bool { return len(fake.Requests()) > calls }, "the model request of the prompt")
	h.Cancel()
	res = wait(t, h)
	assert.ErrorIs(t, res.Err, session.ErrCancelled)

	fake.QueueSummary(providertest.Reply{Text: "SUMMARY"})
	cres := wait(t, must(rs.Compact(context.Background(), session.CompactRequest{})))
	require.True(t, cres.Compacted, "%+v", cres)
	tl := rs.Timeline()
	assert.Equal(t, schema.StateIdle, tl.State)
	require.NoError(t, rs.Close())
	require.NoError(t, pa.client.Close())

	pa2 := startPipeAgentWith(t, fake, store, opts, acp.ClientOptions{})
	rs2, err := pa2.client.LoadSession(context.Background(), rs.ID(), "/w")
	require.NoError(t, err)
	tl = rs2.Timeline()
	require.Len(t, tl.Compactions(), 1)
	assert.Equal(t, schema.CompactionCompleted, tl.Compactions()[0].Status)
	assert.Equal(t, "SUMMARY", tl.Compactions()[0].SummaryText())
	assert.Equal(t, schema.StateIdle, tl.State, "the current state came before the response")
	_ = rs2.Close()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Against a v2 agent that offers only a /compact command, Compact sends it
// as a prompt: the receipt admits it, the terminal compaction_update gives
// the result, the idle state_update ends it.
func TestRemoteV2_CompactFallback(t *testing.T) {
	c, ra, _ := dialRaw(t, acp.ClientOptions{}, `{"protocolVersion":2,"info":{"name":"other","version":"1"},"capabilities":{"session":{}}}`)
	require.Equal(t, schema.ProtocolVersion2, c.Protocol())
	rs := ra.newSession(c, `[{"type":"command","name":"compact","description":"compact","input":{"type":"text","hint":"h"}}]`)
	poll.Until(t, 5*time.Second, func() bool { return len(rs.Commands()) == 1 }, "the available commands")
	assert.Equal(t, "h", rs.Commands()[0].Input.Hint)
	h, err := rs.Compact(context.Background(), session.CompactRequest{Instructions: "keep it"})
	require.NoError(t, err)
	req := ra.read()
	require.Equal(t, "session/prompt", req["method"])
	update := func(u string) {
		ra.write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + u + `}}`)
	}
	update(`{"sessionUpdate":"user_message","messageId":"u1","content":[{"type":"text","text":"/compact keep it"}]}`)
	update(`{"sessionUpdate":"state_update","state":"running"}`)
	ra.respond(req, `{"messageId":"u1"}`)
	update(`{"sessionUpdate":"compaction_update","compactionId":"x1","status":"in_progress"}`)
	update(`{"sessionUpdate":"compaction_update","compactionId":"x1","status":"completed","summary":[{"type":"text","text":"S"}]}`)
	_, finished := h.Wait(ctxFor(t, 50*time.Millisecond))
	require.Error(t, finished, "the /compact prompt ends with the idle state, not its receipt")
	update(`{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}`)
	res := wait(t, h)
	assert.True(t, res.Compacted)
	assert.Equal(t, "S", res.Segment.Summary)
	assert.Equal(t, h.ID(), res.CompactID)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
