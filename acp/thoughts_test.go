package acp_test

import (
	"encoding/json"
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
