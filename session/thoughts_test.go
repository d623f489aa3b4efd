package session_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestThoughts_LiveStoredNeverSummarized: a provider's reasoning streams
// as ThoughtDeltaEvents of the message's ID before its text, is stored
// with the assistant message (a reopened session has it), and is never
// part of a summary request.
func TestThoughts_LiveStoredNeverSummarized(t *testing.T) {
	store := memstore.New()
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: store})
	rec := record(t, s)
	thoughts := []history.Thought{{Text: "the quokka theory", Signature: "sig"}, {Redacted: "opaque"}}
	fake.QueueTurn(providertest.Reply{Text: "answer", Thoughts: thoughts})
	res := wait(t, mustPrompt(t, s, "why?"))
	require.NoError(t, res.Err)
	require.Len(t, res.Messages, 2)
	assert.Equal(t, thoughts, res.Messages[1].Thoughts)

	evs := rec.until(t, func(evs []session.Event) bool {
		for _, e := range evs {
			if te, ok := e.Payload.(*session.TurnEvent); ok && te.Phase == session.TurnFinished {
				return true
			}
		}
		return false
	})
	var order []string
	for _, e := range evs {
		switch p := e.Payload.(type) {
		case *session.ThoughtDeltaEvent:
			assert.Equal(t, res.Messages[1].ID, p.MessageID)
			order = append(order, "thought:"+p.Text)
		case *session.DeltaEvent:
			order = append(order, "text:"+p.Text)
		}
	}
	assert.Equal(t, []string{"thought:the quokka theory", "text:answer"}, order)

	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "- summary"})
	require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
	for _, req := range fake.Requests() {
		for _, m := range req.Messages {
			if req.Purpose == "summary" {
				assert.NotContains(t, m.Text, "quokka", "thoughts are not summarized")
			}
		}
	}
	require.NoError(t, s.Close())
	again := newSession(t, fake, session.Config{Store: store, ID: s.ID()})
	segs, err := again.Segments(ctxT(t))
	require.NoError(t, err)
	var kept []history.Thought
	for _, m := range segs[0].Messages {
		kept = append(kept, m.Thoughts...)
	}
	assert.Equal(t, thoughts, kept, "stored with the message")
	hits, err := again.Search(ctxT(t), session.SearchRequest{Query: "quokka"})
	require.NoError(t, err)
	assert.Empty(t, hits, "thoughts are not searched")
}
