package acp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

// thoughtTurn scripts a turn whose reply reasons (a signed thought and a
// redacted one) before its text.
func thoughtTurn(fake *providertest.Fake) {
	fake.QueueTurn(providertest.Reply{Text: "It is 4.", Thoughts: []history.Thought{{Text: "Two and two ", Signature: "s"}, {Redacted: "x"}, {Text: "make four."}}})
}

// TestThoughts_V1 sends a reply's reasoning as agent_thought_chunk before
// its text, as it streams and on session/load, a redacted thought as
// nothing.
func TestThoughts_V1(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	c := serve(t, fake, store, acp.ServerOptions{})
	c.initialize(`{}`)
	sid := c.newSession()
	thoughtTurn(fake)
	require.Equal(t, "end_turn", c.prompt(sid, "2+2?"))
	var text []string
	for _, u := range updates(t, c.take()) {
		k := u["sessionUpdate"].(string)
		if k == "agent_thought_chunk" || k == "agent_message_chunk" {
			b, _ := json.Marshal(u["content"])
			text = append(text, k+" "+string(b))
		}
	}
	assert.Equal(t, []string{
		`agent_thought_chunk {"text":"Two and two ","type":"text"}`,
		`agent_thought_chunk {"text":"make four.","type":"text"}`,
		`agent_message_chunk {"text":"It is 4.","type":"text"}`,
	}, text, "live: one chunk per delta")

	c2 := serve(t, fake, store, acp.ServerOptions{})
	c2.initialize(`{}`)
	c2.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	var replayed []string
	for _, u := range updates(t, c2.take()) {
		if k := u["sessionUpdate"].(string); k == "agent_thought_chunk" || k == "agent_message_chunk" {
			replayed = append(replayed, k+" "+u["content"].(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, []string{"agent_thought_chunk Two and two make four.", "agent_message_chunk It is 4."}, replayed)
}

// TestThoughts_V2 keys the reasoning as a message of its own
// (thought_<id>), apart from the agent message's chunks.
func TestThoughts_V2(t *testing.T) {
	fake := providertest.New()
	c := hostileServe(t, fake, memstore.New(), acp.ServerOptions{})
	c.initV2()
	sid := c.newSessionV2()
	thoughtTurn(fake)
	seq := c.lastSeq()
	require.Nil(t, c.call("session/prompt", promptParams(sid, "2+2?")).Error)
	c.waitNote(seq, "idle", isIdle)
	var thought, text string
	for _, n := range c.notesSince(seq) {
		u := field(t, n)
		switch n.kind {
		case "agent_thought_chunk":
			thought = u["messageId"].(string)
		case "agent_message_chunk":
			text = u["messageId"].(string)
		}
	}
	require.NotEmpty(t, thought)
	assert.Equal(t, "thought_"+text, thought)
}

// TestThoughts_LoadWhileReasoning: session/load of a session whose reply
// is streaming replays the reasoning so far as agent_thought_chunk, then
// the text so far; the live stream then sends the rest, nothing twice.
func TestThoughts_LoadWhileReasoning(t *testing.T) {
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{}`)
	sid := c.newSession()
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Deltas: []string{"It is ", "4."}, Thoughts: []history.Thought{{Text: "Two and two ", Signature: "s"}, {Text: "make four."}}, GateAfter: 1, Gate: gate})
	prompted := c.promptAsync(sid, "2+2?")
	c.waitFor("agent_message_chunk")
	c.take()
	c.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": "/project", "mcpServers": []any{}}, nil)
	replayed := streamed(updates(t, c.take()))
	close(gate)
	require.Equal(t, "end_turn", prompted())
	live := streamed(updates(t, c.take()))
	assert.Equal(t, []string{"agent_thought_chunk Two and two make four.", "agent_message_chunk It is "}, replayed, "the reply so far, reasoning first")
	assert.Equal(t, []string{"agent_message_chunk 4."}, live, "the rest, once")
}

// streamed lists the thought and message chunks of ups as "kind text".
func streamed(ups []map[string]any) []string {
	var out []string
	for _, u := range ups {
		if k := u["sessionUpdate"].(string); k == "agent_thought_chunk" || k == "agent_message_chunk" {
			out = append(out, k+" "+u["content"].(map[string]any)["text"].(string))
		}
	}
	return out
}

// TestThoughts_OwnerFallsBehind: an owner that falls behind its session
// (a subscription buffer of 1) and continues from a replay sends each part
// of a long reasoning once, also the part it finds streaming at the cut.
func TestThoughts_OwnerFallsBehind(t *testing.T) {
	defer acp.SetSubscriptionBuffer(1)()
	fake := providertest.New()
	c := serve(t, fake, memstore.New(), acp.ServerOptions{})
	c.initialize(`{}`)
	sid := c.newSession()
	thoughts := make([]history.Thought, 2000)
	var whole strings.Builder
	for i := range thoughts {
		thoughts[i].Text = fmt.Sprintf("t%d ", i)
		whole.WriteString(thoughts[i].Text)
	}
	// The reply waits after its first delta: the owner's replays all find
	// the reasoning streaming.
	gate := make(chan struct{})
	fake.QueueTurn(providertest.Reply{Deltas: []string{"do", "ne"}, Thoughts: thoughts, GateAfter: 1, Gate: gate})
	prompted := c.promptAsync(sid, "think hard")
	c.waitFor("agent_message_chunk")
	close(gate)
	require.Equal(t, "end_turn", prompted())
	var got strings.Builder
	for _, u := range updates(t, c.take()) {
		if u["sessionUpdate"] == "agent_thought_chunk" {
			got.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	assert.Equal(t, whole.String(), got.String(), "the reasoning, whole and once")
}
