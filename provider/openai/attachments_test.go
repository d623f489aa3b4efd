package openai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// TestAttachments: a user message's links and resources reach the server as
// text where they stand (the content a string while there is no image); an
// image makes the content a list of parts, the image an image_url part
// with a base64 data URL; the provider says which image types it takes.
func TestAttachments(t *testing.T) {
	text := "compare  with the notes"
	link := history.Attachment{Kind: history.AttachLink, At: 8, Name: "main.go", URI: "file:///w/main.go",
		Note: `It is a file of the workspace: read it with read_file (path "/w/main.go").`}
	res := history.Attachment{Kind: history.AttachResource, At: len(text), URI: "file:///w/notes.md", MIMEType: "text/markdown", Text: "# Notes\nuse tabs"}
	img := history.Attachment{Kind: history.AttachImage, At: len(text), Name: "shot.png", MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nimage bytes")}
	wantText := "compare \n[main.go](file:///w/main.go)\n" + `It is a file of the workspace: read it with read_file (path "/w/main.go").` +
		"\n with the notes\n<resource uri=\"file:///w/notes.md\" mimeType=\"text/markdown\">\n# Notes\nuse tabs\n</resource>\n"

	f := newFake(t, reply("ok"))
	p, _ := newProvider(t, f)
	for _, msg := range []history.Message{
		{ID: "u1", Role: history.RoleUser, Text: text, Attachments: []history.Attachment{link, res}},
		{ID: "u2", Role: history.RoleUser, Text: text, Attachments: []history.Attachment{link, res, img}},
	} {
		_, err := p.Complete(t.Context(), &provider.Request{Purpose: provider.PurposeTurn, Messages: []history.Message{msg}}, nil)
		require.NoError(t, err)
	}
	reqs := f.requests()
	require.Len(t, reqs, 2)
	assert.JSONEq(t, `[{"role":"user","content":`+mustJSON(wantText)+`}]`, mustJSON(reqs[0].Body["messages"]))
	assert.JSONEq(t, `[{"role":"user","content":[
		{"type":"text","text":`+mustJSON(wantText)+`},
		{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgppbWFnZSBieXRlcw=="}}
	]}]`, mustJSON(reqs[1].Body["messages"]))

	assert.True(t, provider.TakesImages(p))
	for mime, ok := range map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/bmp": false} {
		assert.Equal(t, ok, provider.TakesImage(p, mime), mime)
	}
}
