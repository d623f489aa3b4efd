package historytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// attachmentMessages are user messages with every kind of attachment,
// image bytes that are not UTF-8 and hold NULs, and the largest image data
// a message may carry.
func attachmentMessages() []history.Message {
	img := []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfe not text")
	big := make([]byte, history.MaxAttachmentData)
	for i := range big {
		big[i] = byte(i * 7)
	}
	text := "look at  and this"
	return []history.Message{
		{ID: "u1", Role: history.RoleUser, Text: text, CreatedAt: t0, Attachments: []history.Attachment{
			{Kind: history.AttachLink, At: 8, Name: "main.go", URI: "file:///w/main.go", MIMEType: "text/x-go", Text: "the entry point",
				Note: "read it with read_file"},
			{Kind: history.AttachResource, At: len(text), URI: "file:///w/notes.md", MIMEType: "text/markdown", Text: "# Notes\n\x00 ünïcode"},
			{Kind: history.AttachImage, At: len(text), Name: "shot.png", MIMEType: "image/png", Data: img},
		}},
		{ID: "a1", Role: history.RoleAssistant, Text: "seen", CreatedAt: t0.Add(1)},
		{ID: "u2", Role: history.RoleUser, Text: "", Steer: true, CreatedAt: t0.Add(2), Attachments: []history.Attachment{
			{Kind: history.AttachImage, MIMEType: "image/jpeg", URI: "file:///w/big.jpg", Data: big},
		}},
		{ID: "a2", Role: history.RoleAssistant, Text: "big", CreatedAt: t0.Add(3)},
	}
}

// testAttachments checks that attachments come back exactly from every
// read (Load, Timeline, Segments, after reopening), and that attachments
// that break a rule of history.ValidAttachments are refused whole.
func testAttachments(t *testing.T, h Harness) {
	ctx := context.Background()
	msgs := attachmentMessages()
	s, v := h.roundTrip(t, "att", msgs, 2)

	over := make([]byte, history.MaxAttachmentData+1)
	bad := map[string]history.Attachment{
		"unknown kind":      {Kind: "audio", URI: "x"},
		"link without name": {Kind: history.AttachLink, URI: "file:///a"},
		"link without uri":  {Kind: history.AttachLink, Name: "a"},
		"resource no uri":   {Kind: history.AttachResource, Text: "x"},
		"image no mime":     {Kind: history.AttachImage, Data: []byte{1}},
		"image no data":     {Kind: history.AttachImage, MIMEType: "image/png"},
		"data on a link":    {Kind: history.AttachLink, Name: "a", URI: "b", Data: []byte{1}},
		"outside the text":  {Kind: history.AttachLink, Name: "a", URI: "b", At: 3},
		"negative place":    {Kind: history.AttachLink, Name: "a", URI: "b", At: -1},
		"too large":         {Kind: history.AttachImage, MIMEType: "image/png", Data: over},
	}
	for name, a := range bad {
		_, err := s.Append(ctx, "att", v, []history.Message{{ID: "x", Role: history.RoleUser, Text: "ab", Attachments: []history.Attachment{a}}})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
		if name == "too large" {
			assert.ErrorIs(t, err, history.ErrTooLarge, name)
			assert.Contains(t, err.Error(), "more than the 5242880", name)
		}
	}
	half := make([]byte, history.MaxAttachmentData/2+1)
	twoImages := []history.Attachment{{Kind: history.AttachImage, MIMEType: "image/png", Data: half}, {Kind: history.AttachImage, MIMEType: "image/png", Data: half}}
	decreasing := []history.Attachment{{Kind: history.AttachLink, Name: "a", URI: "b", At: 2}, {Kind: history.AttachLink, Name: "a", URI: "b", At: 1}}
	for name, msg := range map[string]history.Message{
		"assistant with attachments": {ID: "x", Role: history.RoleAssistant, Text: "ab", Attachments: []history.Attachment{{Kind: history.AttachLink, Name: "a", URI: "b"}}},
		"tool with attachments":      {ID: "x", Role: history.RoleTool, ToolCallID: "c", Text: "ab", Attachments: []history.Attachment{{Kind: history.AttachLink, Name: "a", URI: "b"}}},
		"images too large together":  {ID: "x", Role: history.RoleUser, Text: "ab", Attachments: twoImages},
		"places decreasing":          {ID: "x", Role: history.RoleUser, Text: "ab", Attachments: decreasing},
	} {
		_, err := s.Append(ctx, "att", v, []history.Message{msg})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	snap, err := s.Load(ctx, "att")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "no refused write changed the session")
	assert.Equal(t, ids(msgs[2:]), ids(snap.Active))
}

// roundTrip seeds session id with msgs and checks that they come back
// exactly from every read: Load; then, after a compaction that archives
// the first archive of them and a reopening, Segments, Load and Timeline.
// It returns the reopened store and the session's version.
func (h Harness) roundTrip(t *testing.T, id string, msgs []history.Message, archive int) (history.Store, uint64) {
	t.Helper()
	ctx := context.Background()
	s, v := h.seeded(t, id, msgs)
	snap, err := s.Load(ctx, id)
	require.NoError(t, err)
	EqualMessages(t, msgs, snap.Active)

	v, _ = compact(t, s, id, v, "c1", archive, "summary")
	s = h.reopen(t, s)
	segs, err := s.Segments(ctx, id)
	require.NoError(t, err)
	require.Len(t, segs, 1)
	EqualMessages(t, msgs[:archive], segs[0].Messages)
	snap, err = s.Load(ctx, id)
	require.NoError(t, err)
	EqualMessages(t, msgs[archive:], snap.Active)
	EqualMessages(t, msgs, timelineMessages(t, s, id))
	return s, v
}
