package provider

import (
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// ImageTaker is implemented by providers whose model reads images in user
// messages ([history.AttachImage]). provider/anthropic and provider/openai
// are; provider/offline is not. A session refuses a prompt with an image
// its provider does not take, and an ACP agent advertises images only
// for a provider that takes them.
type ImageTaker interface {
	// TakesImage reports whether the model reads an image of this MIME
	// type ("image/png", say).
	TakesImage(mimeType string) bool
}

// TakesImage reports whether p takes images of mimeType: whether it is an
// [ImageTaker] that says so.
func TakesImage(p Provider, mimeType string) bool {
	t, ok := p.(ImageTaker)
	return ok && t.TakesImage(mimeType)
}

// TakesImages reports whether p takes images of one of the common types:
// PNG, JPEG, GIF or WebP.
func TakesImages(p Provider) bool {
	for _, t := range [...]string{"image/png", "image/jpeg", "image/gif", "image/webp"} {
		if TakesImage(p, t) {
			return true
		}
	}
	return false
}

// ContentPart is one piece of a user message as a provider sends it: text,
// or an image (when Image is set).
type ContentPart struct {
	Text  string
	Image *history.Attachment
}

// Content returns the content of user message m as a model reads it, in
// order: its text with the text of each attachment where it stands
// ([AttachmentText], each on lines of its own), merged into as few text
// parts as the images allow; with images true each image is a part of its
// own, otherwise it is named in the text too. A message without
// attachments is one text part, its Text (even when empty).
func Content(m *history.Message, images bool) []ContentPart {
	if len(m.Attachments) == 0 {
		return []ContentPart{{Text: m.Text}}
	}
	var (
		out []ContentPart
		b   strings.Builder
	)
	// line starts a new line of b unless it is at the start of one.
	line := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	flush := func() {
		if b.Len() > 0 {
			out = append(out, ContentPart{Text: b.String()})
			b.Reset()
		}
	}
	for _, p := range m.Parts() {
		a := p.Attachment
		switch {
		case a == nil:
			line()
			b.WriteString(p.Text)
		case a.Kind == history.AttachImage && images:
			flush()
			out = append(out, ContentPart{Image: a})
		default:
			line()
			b.WriteString(AttachmentText(a))
			b.WriteByte('\n')
		}
	}
	flush()
	if len(out) == 0 {
		out = append(out, ContentPart{})
	}
	return out
}

// AttachmentText is the text a model reads for an attachment: a link as
// "[name](uri)" with its MIME type, its description and the agent's note
// on the lines after it; a resource as its text inside
// <resource uri="…">…</resource>; an image as "[image: name, mime type]"
// (for a model that does not see it).
func AttachmentText(a *history.Attachment) string {
	var s string
	switch a.Kind {
	case history.AttachLink:
		s = fmt.Sprintf("[%s](%s)", a.Name, a.URI)
		if a.MIMEType != "" {
			s += " (" + a.MIMEType + ")"
		}
		if a.Text != "" {
			s += "\n" + a.Text
		}
	case history.AttachResource:
		attrs := fmt.Sprintf("uri=%q", a.URI)
		if a.MIMEType != "" {
			attrs += fmt.Sprintf(" mimeType=%q", a.MIMEType)
		}
		s = "<resource " + attrs + ">\n" + a.Text + "\n</resource>"
	case history.AttachImage:
		name := a.Name
		if name == "" {
			name = a.URI
		}
		if name != "" {
			name += ", "
		}
		s = "[image: " + name + a.MIMEType + "]"
	default:
		s = "[" + string(a.Kind) + "]"
	}
	if a.Note != "" {
		s += "\n" + a.Note
	}
	return s
}
