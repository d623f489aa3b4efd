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
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
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
	require.Equal(t, acp.ProtocolVersion2, pa.client.Protocol())
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
	require.Eventually(t, func() bool { return len(fake.Requests()) > calls }, hostileWait, time.Millisecond)
	h.Cancel()
	res = wait(t, h)
	assert.ErrorIs(t, res.Err, session.ErrCancelled)

	fake.QueueSummary(providertest.Reply{Text: "SUMMARY"})
	cres := wait(t, must(rs.Compact(context.Background(), session.CompactRequest{})))
	require.True(t, cres.Compacted, "%+v", cres)
	tl := rs.Timeline()
	assert.Equal(t, acp.StateIdle, tl.State)
	require.NoError(t, rs.Close())
	require.NoError(t, pa.client.Close())

	pa2 := startPipeAgentWith(t, fake, store, opts, acp.ClientOptions{})
	rs2, err := pa2.client.LoadSession(context.Background(), rs.ID(), "/w")
	require.NoError(t, err)
	tl = rs2.Timeline()
	require.Len(t, tl.Compactions(), 1)
	assert.Equal(t, acp.CompactionCompleted, tl.Compactions()[0].Status)
	assert.Equal(t, "SUMMARY", tl.Compactions()[0].SummaryText())
	assert.Equal(t, acp.StateIdle, tl.State, "the current state came before the response")
	_ = rs2.Close()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
