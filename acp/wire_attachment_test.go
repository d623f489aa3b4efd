package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// TestWireResultKeepsAttachments: the Segment of a _sessionkit/compact
// result carries its user messages' attachments, image bytes included, and
// WireResult.Result gives them back.
func TestWireResultKeepsAttachments(t *testing.T) {
	m := history.Message{ID: "u1", Role: history.RoleUser, Text: "see ", Attachments: []history.Attachment{
		{Kind: history.AttachLink, At: 4, Name: "a.go", URI: "file:///w/a.go", Note: "read it"},
		{Kind: history.AttachImage, At: 4, MIMEType: "image/png", Data: []byte{0x89, 0, 0xff}},
	}}
	res := session.CompactResult{CompactID: "c", Success: true, Compacted: true, Segment: &history.Segment{ID: "g", CompactID: "c", Messages: []history.Message{m}}}
	b, err := json.Marshal(wireResult(&res))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"attachments":[{"kind":"link","at":4,"name":"a.go","uri":"file:///w/a.go","note":"read it"},{"kind":"image","at":4,"mimeType":"image/png","data":"iQD/"}]`)
	var w schema.WireResult
	require.NoError(t, json.Unmarshal(b, &w))
	back := compactResultOf(&w)
	assert.Equal(t, m.Attachments, back.Segment.Messages[0].Attachments)
}
