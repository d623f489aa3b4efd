package acp

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// A prompt's content blocks become one user message (docs/acp.md,
// "Prompt content"): the text blocks its Text (two text blocks in a row
// joined by a newline), every other block an attachment at its place in
// that text, so that replay gives the client its blocks back in order.
//
//	text           Text
//	resource_link  history.AttachLink: name, URI, MIME type, description
//	               (Text); for a file:// URI inside the session's
//	               directories, a Note that tells the model to read it
//	resource       history.AttachResource with its text contents (blob
//	               contents are refused)
//	image          history.AttachImage, its data decoded, when the provider
//	               takes images (promptCapabilities.image); refused otherwise
//	audio          refused
//
// What a link's title, size and annotations said, and any _meta, are not
// kept.

// promptReader is what the prompt content of a session needs to know:
// the provider (which images it takes), the session's directories and the
// tool that reads one of their files (Toolset.ReadFile, "" for none).
type promptReader struct {
	prov     provider.Provider
	dirs     []string // the working directory first
	readTool string
}

// content turns the blocks of a session/prompt into the user message's
// text and attachments. A block this agent does not take, an image that is
// not base64, or a prompt with neither text nor attachments is an invalid
// params error naming the block.
func (r promptReader) content(blocks []schema.ContentBlock) (session.PromptRequest, error) {
	var (
		text     strings.Builder
		atts     []history.Attachment
		lastText bool // the block before was a text block
	)
	for i, b := range blocks {
		at := text.Len()
		switch {
		case b.Text != nil:
			if lastText {
				text.WriteByte('\n')
			}
			text.WriteString(b.Text.Text)
			lastText = true
			continue
		case b.ResourceLink != nil:
			l := b.ResourceLink
			atts = append(atts, history.Attachment{Kind: history.AttachLink, At: at, Name: l.Name, URI: l.URI,
				MIMEType: l.MimeType, Text: l.Description, Note: r.offer(l.URI)})
		case b.Resource != nil && b.Resource.Resource.Text != nil:
			c := b.Resource.Resource
			atts = append(atts, history.Attachment{Kind: history.AttachResource, At: at, URI: c.URI, MIMEType: c.MimeType, Text: *c.Text})
		case b.Image != nil && provider.TakesImages(r.prov):
			img := b.Image
			if !provider.TakesImage(r.prov, img.MimeType) {
				return session.PromptRequest{}, invalidParams(`field "prompt": item %d: the model takes no images of type %q`, i, img.MimeType)
			}
			data, err := base64.StdEncoding.DecodeString(img.Data)
			if err != nil {
				return session.PromptRequest{}, invalidParams(`field "prompt": item %d: the image data is not base64: %v`, i, err)
			}
			atts = append(atts, history.Attachment{Kind: history.AttachImage, At: at, URI: img.URI, MIMEType: img.MimeType, Data: data})
		default:
			why := "is not supported by this agent"
			switch {
			case b.Image != nil:
				why = "is not supported by this agent: its model takes no images (promptCapabilities.image is false)"
			case b.Resource != nil:
				why = "is not supported by this agent: only text resources are (blob contents are not)"
			}
			return session.PromptRequest{}, invalidParams(`field "prompt": item %d: content of type %q %s`, i, b.Type(), why)
		}
		lastText = false
	}
	p := session.PromptRequest{Text: text.String(), Attachments: atts}
	if strings.TrimSpace(p.Text) == "" && len(atts) == 0 {
		return session.PromptRequest{}, invalidParams(`field "prompt": the prompt has no text`)
	}
	return p, nil
}

// offer is the note of a link to uri: for a file:// URI of a file inside
// the session's directories, when the session has a tool to read it, how
// to read it; "" otherwise.
func (r promptReader) offer(uri string) string {
	if r.readTool == "" {
		return ""
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return ""
	}
	path := filepath.Clean(filepath.FromSlash(u.Path))
	for _, d := range r.dirs {
		rel, err := filepath.Rel(filepath.Clean(d), path)
		if err == nil && filepath.IsAbs(d) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return fmt.Sprintf("The user attached this file of the workspace without its contents: read it with the %s tool (path %q) when you need them.", r.readTool, path)
		}
	}
	return ""
}

// messageBlocks are the content blocks of user message m, in order: the
// runs of its text, each attachment as the block it came from (a link's
// note, the agent's words to the model, is not shown). A message with
// neither text nor attachments is one empty text block.
func messageBlocks(m *history.Message) []schema.ContentBlock {
	parts := m.Parts()
	if len(parts) == 0 {
		return []schema.ContentBlock{schema.TextBlock(m.Text)}
	}
	out := make([]schema.ContentBlock, 0, len(parts))
	for _, p := range parts {
		a := p.Attachment
		switch {
		case a == nil:
			out = append(out, schema.TextBlock(p.Text))
		case a.Kind == history.AttachLink:
			out = append(out, schema.ContentBlock{ResourceLink: &schema.ResourceLink{Name: a.Name, URI: a.URI, MimeType: a.MIMEType, Description: a.Text}})
		case a.Kind == history.AttachResource:
			t := a.Text
			out = append(out, schema.ContentBlock{Resource: &schema.EmbeddedResource{Resource: schema.ResourceContents{URI: a.URI, MimeType: a.MIMEType, Text: &t}}})
		case a.Kind == history.AttachImage:
			out = append(out, schema.ContentBlock{Image: &schema.ImageContent{Data: base64.StdEncoding.EncodeToString(a.Data), MimeType: a.MIMEType, URI: a.URI}})
		default:
			out = append(out, schema.TextBlock(provider.AttachmentText(a)))
		}
	}
	return out
}

func wireAttachment(a history.Attachment) schema.WireAttachment {
	return schema.WireAttachment{Kind: string(a.Kind), At: a.At, Name: a.Name, URI: a.URI, MimeType: a.MIMEType, Text: a.Text, Data: a.Data, Note: a.Note}
}

func historyAttachment(w schema.WireAttachment) history.Attachment {
	return history.Attachment{Kind: history.AttachmentKind(w.Kind), At: w.At, Name: w.Name, URI: w.URI, MIMEType: w.MimeType, Text: w.Text, Data: w.Data, Note: w.Note}
}
