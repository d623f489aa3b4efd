package acp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
)

// reduceV2 applies v2 JSON updates to a fresh v2 timeline.
func reduceV2(t *testing.T, lines ...string) *acp.Timeline {
	t.Helper()
	tl := acp.Timeline{Protocol: schema.ProtocolVersion2}
	for _, l := range lines {
		u, err := schema.DecodeSessionUpdateV2([]byte(l))
		require.NoError(t, err, l)
		tl.Apply(u)
	}
	return &tl
}

// v2 _meta patches by top-level key: null removes a key, {} changes
// nothing, nested objects are replaced, not merged; _meta null clears.
func TestTimelineV2_MetaPatch(t *testing.T) {
	open := `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"a":1,"n":{"x":1,"y":2},"k":"v"}}`
	for _, tt := range []struct {
		name  string
		patch string
		want  map[string]any
	}{
		{"a key replaced, others kept", `{"a":2}`, map[string]any{"a": float64(2), "n": map[string]any{"x": float64(1), "y": float64(2)}, "k": "v"}},
		{"null removes a key", `{"k":null}`, map[string]any{"a": float64(1), "n": map[string]any{"x": float64(1), "y": float64(2)}}},
		{"{} changes nothing", `{}`, map[string]any{"a": float64(1), "n": map[string]any{"x": float64(1), "y": float64(2)}, "k": "v"}},
		{"nested objects are not merged", `{"n":{"z":3}}`, map[string]any{"a": float64(1), "n": map[string]any{"z": float64(3)}, "k": "v"}},
		{"a new key is added", `{"b":true}`, map[string]any{"a": float64(1), "n": map[string]any{"x": float64(1), "y": float64(2)}, "k": "v", "b": true}},
		{"_meta null clears", `null`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tl := reduceV2(t, open, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":`+tt.patch+`}`)
			assert.Equal(t, tt.want, tl.Compaction("c1").Meta)
		})
	}
	// v1 replaces wholesale, as before.
	tl := reduce(t, open, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"a":2}}`)
	assert.Equal(t, map[string]any{"a": float64(2)}, tl.Compaction("c1").Meta)
}

// A v2 conversation: user_message upserts, chunks join by kind and ID
// (around a compaction too), the first tool_call_update creates the tool
// call, state_update sets the state; chunk _meta never touches the entity.
func TestTimelineV2_Conversation(t *testing.T) {
	tl := reduceV2(t,
		`{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}`,
		`{"sessionUpdate":"state_update","state":"running"}`,
		`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hello "}}`,
		`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"t":"auto"}}`,
		`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"S"},"_meta":{"t":"chunk"}}`,
		`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"there"}}`,
		`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"echo","status":"in_progress"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`,
		`{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi again"}]}`,
		`{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}`,
	)
	assert.Equal(t, []string{
		"user_message_chunk:hi again",
		"agent_message_chunk:hello there",
		"compaction:c1:completed:S",
		"tool:t1:completed",
	}, shape(tl))
	assert.Equal(t, map[string]any{"t": "auto"}, tl.Compaction("c1").Meta, "chunk _meta is scoped to the chunk")
	assert.Equal(t, schema.StateIdle, tl.State)
	assert.Equal(t, schema.StopCancelled, tl.StopReason)
	assert.Equal(t, "echo", tl.Items[3].ToolCall.Title)
	c := tl.Clone()
	assert.Equal(t, tl.State, c.State)
	assert.Equal(t, schema.ProtocolVersion2, c.Protocol)
}
