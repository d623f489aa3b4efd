package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// TestPromptAttachments: a prompt's and a steer's attachments are the
// session's own copy, reach the provider request and the store, and come
// back when the session is opened again; the summary request of a
// compaction names them.
func TestPromptAttachments(t *testing.T) {
	fake := providertest.New()
	fake.SetImageTypes("image/png")
	store := memstore.New()
	s := newSession(t, fake, session.Config{ID: "att", Store: store})
	img := []byte("\x89PNG image")
	atts := []history.Attachment{
		{Kind: history.AttachLink, At: 4, Name: "a.go", URI: "file:///w/a.go"},
		{Kind: history.AttachResource, At: 4, URI: "file:///w/b.md", Text: "notes"},
		{Kind: history.AttachImage, At: 4, Name: "x.png", MIMEType: "image/png", Data: img},
	}
	fake.QueueTurn(providertest.Reply{Text: "ok"})
	h, err := s.Prompt(context.Background(), session.PromptRequest{Text: "see ", Attachments: atts})
	require.NoError(t, err)
	img[0], atts[0].Name = 'X', "changed" // the caller's slices are the caller's
	res := wait(t, h)
	require.NoError(t, res.Err)
	want := []history.Attachment{
		{Kind: history.AttachLink, At: 4, Name: "a.go", URI: "file:///w/a.go"},
		{Kind: history.AttachResource, At: 4, URI: "file:///w/b.md", Text: "notes"},
		{Kind: history.AttachImage, At: 4, Name: "x.png", MIMEType: "image/png", Data: []byte("\x89PNG image")},
	}
	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, want, reqs[0].Messages[0].Attachments, "the provider request carries them")
	steer, err := s.Steer(context.Background(), session.SteerRequest{Attachments: []history.Attachment{{Kind: history.AttachLink, Name: "c", URI: "file:///w/c"}}})
	require.NoError(t, err, "a steer of attachments alone")
	require.NoError(t, wait(t, steer).Err)

	snap, err := store.Load(context.Background(), "att")
	require.NoError(t, err)
	require.Len(t, snap.Active, 3)
	assert.Equal(t, want, snap.Active[0].Attachments)
	assert.Equal(t, "c", snap.Active[2].Attachments[0].Name)

	fake.QueueSummary(providertest.Reply{Text: "summary"})
	cres := wait(t, mustCompact(t, s, ""))
	require.True(t, cres.Compacted, cres.Error)
	var summary *provider.Request
	for _, r := range fake.Requests() {
		if r.Purpose == provider.PurposeSummary {
			summary = &r
		}
	}
	require.NotNil(t, summary)
	assert.Contains(t, summary.Messages[0].Text, "[user] see \n[link: a.go, file:///w/a.go]\n[resource: file:///w/b.md]\nnotes\n[image: x.png, image/png]")
	assert.NotContains(t, summary.Messages[0].Text, "PNG image", "no image bytes in the transcript")
}

// TestPromptAttachmentsRefused: attachments that break a rule, images
// above the bound and images the provider does not take are refused at
// once with ErrInvalid, and nothing is queued.
func TestPromptAttachmentsRefused(t *testing.T) {
	fake := providertest.New()
	fake.SetImageTypes("image/png")
	store := memstore.New()
	s := newSession(t, fake, session.Config{ID: "r", Store: store})
	over := make([]byte, history.MaxAttachmentData+1)
	for name, atts := range map[string][]history.Attachment{
		"link without URI": {{Kind: history.AttachLink, Name: "a"}},
		"outside the text": {{Kind: history.AttachLink, Name: "a", URI: "b", At: 9}},
		"too large":        {{Kind: history.AttachImage, MIMEType: "image/png", Data: over}},
		"type not taken":   {{Kind: history.AttachImage, MIMEType: "image/tiff", Data: []byte{1}}},
	} {
		_, err := s.Prompt(context.Background(), session.PromptRequest{Text: "hi", Attachments: atts})
		assert.ErrorIs(t, err, session.ErrInvalid, name)
		if name == "too large" {
			assert.ErrorIs(t, err, history.ErrTooLarge)
			assert.Contains(t, err.Error(), "more than the 5242880 a message may carry")
		}
		_, err = s.Steer(context.Background(), session.SteerRequest{Text: "hi", Attachments: atts})
		assert.ErrorIs(t, err, session.ErrInvalid, name)
	}
	_, err := s.Prompt(context.Background(), session.PromptRequest{Text: " "})
	assert.ErrorIs(t, err, session.ErrInvalid, "no text and no attachments")

	text := newSession(t, providertest.New(), session.Config{ID: "t"})
	_, err = text.Prompt(context.Background(), session.PromptRequest{Text: "hi", Attachments: []history.Attachment{{Kind: history.AttachImage, MIMEType: "image/png", Data: []byte{1}}}})
	assert.ErrorIs(t, err, session.ErrInvalid)
	assert.Contains(t, err.Error(), "the provider providertest takes no images")

	snap, err := store.Load(context.Background(), "r")
	require.NoError(t, err)
	assert.Empty(t, snap.Active, "nothing was queued")
	assert.Zero(t, fake.Calls(provider.PurposeTurn))
}
