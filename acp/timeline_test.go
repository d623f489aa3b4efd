package acp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
)

// reduce applies JSON updates, as received on the wire, to a fresh timeline.
func reduce(t *testing.T, lines ...string) *acp.Timeline {
	t.Helper()
	var tl acp.Timeline
	for _, l := range lines {
		u, err := schema.DecodeSessionUpdate([]byte(l))
		require.NoError(t, err, l)
		tl.Apply(u)
	}
	return &tl
}

func shape(tl *acp.Timeline) []string {
	var out []string
	for _, it := range tl.Items {
		switch {
		case it.Message != nil:
			out = append(out, it.Message.Kind+":"+it.Message.Text())
		case it.Compaction != nil:
			out = append(out, "compaction:"+it.Compaction.ID+":"+string(it.Compaction.Status)+":"+it.Compaction.SummaryText())
		case it.ToolCall != nil:
			out = append(out, "tool:"+it.ToolCall.ID+":"+string(it.ToolCall.Status))
		}
	}
	return out
}

const (
	inProgress = `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}`
	chunkA     = `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"A"}}`
	chunkB     = `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"B"}}`
	completed  = `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"}`
	agentHi    = `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi "}}`
	agentThere = `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"there"}}`
)

// The items of the RFD's "Preview validation" list.
func TestTimeline_RFDPreviewValidation(t *testing.T) {
	t.Run("first-seen ID initialization by a chunk", func(t *testing.T) {
		tl := reduce(t, chunkA)
		e := tl.Compaction("c1")
		require.NotNil(t, e)
		assert.Equal(t, schema.CompactionInProgress, e.Status)
		assert.Equal(t, "A", e.SummaryText())
		assert.Nil(t, e.Error)
	})
	t.Run("first-seen with omitted or null fields starts empty", func(t *testing.T) {
		for _, l := range []string{
			completed,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":null,"error":null,"_meta":null}`,
		} {
			e := reduce(t, l).Compaction("c1")
			assert.Nil(t, e.Summary)
			assert.Nil(t, e.Error)
			assert.Nil(t, e.Meta)
		}
	})
	t.Run("chunk ordering", func(t *testing.T) {
		assert.Equal(t, "AB", reduce(t, inProgress, chunkA, chunkB).Compaction("c1").SummaryText())
	})
	t.Run("completion with omitted summary keeps the chunks", func(t *testing.T) {
		e := reduce(t, inProgress, chunkA, chunkB, completed).Compaction("c1")
		assert.Equal(t, schema.CompactionCompleted, e.Status)
		assert.Equal(t, "AB", e.SummaryText())
	})
	t.Run("authoritative replacement", func(t *testing.T) {
		e := reduce(t, inProgress, chunkA, chunkB,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"FINAL"}]}`).Compaction("c1")
		assert.Equal(t, "FINAL", e.SummaryText())
	})
	t.Run("chunks after a replacement append to it", func(t *testing.T) {
		e := reduce(t, inProgress,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","summary":[{"type":"text","text":"X"}]}`, chunkA).Compaction("c1")
		assert.Equal(t, "XA", e.SummaryText())
	})
	t.Run("chunks after a terminal update still append", func(t *testing.T) {
		e := reduce(t, inProgress, completed, chunkA).Compaction("c1")
		assert.Equal(t, schema.CompactionCompleted, e.Status)
		assert.Equal(t, "A", e.SummaryText())
	})
	t.Run("clearing with null and with []", func(t *testing.T) {
		for _, clear := range []string{`null`, `[]`} {
			e := reduce(t, inProgress, chunkA,
				`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","summary":`+clear+`}`).Compaction("c1")
			assert.Nil(t, e.Summary, clear)
		}
	})
	t.Run("failure and cancellation after partial output", func(t *testing.T) {
		e := reduce(t, inProgress, chunkA,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"failed","summary":null,"error":"model down"}`).Compaction("c1")
		assert.Equal(t, schema.CompactionFailed, e.Status)
		assert.Nil(t, e.Summary)
		require.NotNil(t, e.Error)
		assert.Equal(t, "model down", *e.Error)
		e = reduce(t, inProgress, chunkA, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"cancelled"}`).Compaction("c1")
		assert.Equal(t, schema.CompactionCancelled, e.Status)
		assert.Equal(t, "A", e.SummaryText(), "omitted summary leaves the partial output")
	})
	t.Run("error patch: omitted keeps, null clears", func(t *testing.T) {
		e := reduce(t,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","error":"x"}`,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}`).Compaction("c1")
		require.NotNil(t, e.Error)
		e = reduce(t,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","error":"x"}`,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"failed","error":null}`).Compaction("c1")
		assert.Nil(t, e.Error)
	})
	t.Run("meta replaces wholesale", func(t *testing.T) {
		e := reduce(t,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"a":1,"b":2}}`,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"b":3}}`).Compaction("c1")
		assert.Equal(t, map[string]any{"b": float64(3)}, e.Meta)
	})
	t.Run("a chunk's meta does not patch the entity", func(t *testing.T) {
		e := reduce(t,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress","_meta":{"a":1}}`,
			`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"A"},"_meta":{"z":9}}`).Compaction("c1")
		assert.Equal(t, map[string]any{"a": float64(1)}, e.Meta)
	})
	t.Run("unknown statuses are kept verbatim", func(t *testing.T) {
		e := reduce(t, inProgress, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"_paused"}`).Compaction("c1")
		assert.Equal(t, schema.CompactionStatus("_paused"), e.Status)
		e = reduce(t, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"superseded"}`).Compaction("c1")
		assert.Equal(t, schema.CompactionStatus("superseded"), e.Status)
	})
	t.Run("safe omission of the summary", func(t *testing.T) {
		e := reduce(t, inProgress, completed).Compaction("c1")
		assert.Equal(t, schema.CompactionCompleted, e.Status)
		assert.Nil(t, e.Summary)
	})
	t.Run("position fixed by the first notification", func(t *testing.T) {
		tl := reduce(t, agentHi, inProgress,
			`{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"u"}}`,
			chunkA, completed)
		assert.Equal(t, []string{"agent_message_chunk:hi ", "compaction:c1:completed:A", "user_message_chunk:u"}, shape(tl))
	})
	t.Run("v1 message chunks without IDs on either side of a compaction", func(t *testing.T) {
		tl := reduce(t, agentHi, inProgress, agentThere, completed)
		assert.Equal(t, []string{"agent_message_chunk:hi ", "compaction:c1:completed:", "agent_message_chunk:there"}, shape(tl))
	})
	t.Run("chunks sharing a messageId are not split around a compaction", func(t *testing.T) {
		tl := reduce(t,
			`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hi "}}`,
			inProgress,
			`{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"there"}}`)
		assert.Equal(t, []string{"agent_message_chunk:hi there", "compaction:c1:in_progress:"}, shape(tl))
	})
	t.Run("replay into a fresh timeline does not duplicate the summary", func(t *testing.T) {
		live := reduce(t, agentHi, inProgress, chunkA, chunkB,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"AB"}]}`)
		replay := reduce(t, agentHi,
			`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"AB"}]}`)
		assert.Equal(t, shape(live), shape(replay))
		assert.Equal(t, "AB", replay.Compaction("c1").SummaryText())
		assert.Len(t, replay.Compactions(), 1)
	})
	t.Run("other kinds are ignored; tool calls tracked", func(t *testing.T) {
		tl := reduce(t,
			`{"sessionUpdate":"usage_update","used":10,"size":100}`,
			`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"echo","status":"in_progress"}`,
			`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`,
			`{"sessionUpdate":"some_future_update","x":1}`)
		assert.Equal(t, []string{"tool:t1:completed"}, shape(tl))
	})
}

// TestTimeline_CloneIsIndependent: a clone shares nothing with its source
// (RemoteSession.Timeline returns one while updates keep arriving; sharing
// the index maps made a later compaction's lookup on the copy index past
// its items).
func TestTimeline_CloneIsIndependent(t *testing.T) {
	tl := reduce(t, agentHi, inProgress, chunkA)
	c := tl.Clone()
	for _, l := range []string{chunkB, completed, agentThere,
		`{"sessionUpdate":"compaction_update","compactionId":"c2","status":"in_progress","error":"x"}`} {
		u, err := schema.DecodeSessionUpdate([]byte(l))
		require.NoError(t, err)
		tl.Apply(u)
	}
	assert.Equal(t, []string{"agent_message_chunk:hi ", "compaction:c1:in_progress:A"}, shape(&c))
	assert.Nil(t, c.Compaction("c2"), "a compaction seen after the clone is not in it")
	assert.Equal(t, []string{"agent_message_chunk:hi ", "compaction:c1:completed:AB", "agent_message_chunk:there", "compaction:c2:in_progress:"}, shape(tl))

	// And the other way round.
	u, err := schema.DecodeSessionUpdate([]byte(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"failed","error":"boom"}`))
	require.NoError(t, err)
	c.Apply(u)
	assert.Equal(t, schema.CompactionCompleted, tl.Compaction("c1").Status)
	assert.Nil(t, tl.Compaction("c1").Error)
	var empty acp.Timeline
	assert.Empty(t, empty.Clone().Items)
}
