package schema

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Content block types: the "type" discriminator of [ContentBlock].
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResourceLink = "resource_link"
	ContentResource     = "resource"
)

// ContentBlock is the ContentBlock union of the schema, discriminated by
// "type". Exactly one field is set. A block with a type this package does
// not know decodes into Unknown, which keeps the raw JSON and encodes it back
// verbatim.
type ContentBlock struct {
	Text         *TextContent
	Image        *ImageContent
	Audio        *AudioContent
	ResourceLink *ResourceLink
	Resource     *EmbeddedResource
	Unknown      *UnknownVariant
}

// TextBlock returns a text content block.
func TextBlock(text string) ContentBlock {
	return ContentBlock{Text: &TextContent{Text: text}}
}

// Type returns the discriminator of the variant that is set, or "" when none
// or more than one is.
func (b ContentBlock) Type() string {
	tag, _, n := b.variant()
	if n != 1 {
		return ""
	}
	return tag
}

// contentBlocks is the codec of [ContentBlock].
var contentBlocks = unionCodec[ContentBlock]{
	key: "type", name: "content block", one: "a content block",
	variants: []unionVariant[ContentBlock]{
		variantField(ContentText, func(b *ContentBlock) **TextContent { return &b.Text }),
		variantField(ContentImage, func(b *ContentBlock) **ImageContent { return &b.Image }),
		variantField(ContentAudio, func(b *ContentBlock) **AudioContent { return &b.Audio }),
		variantField(ContentResourceLink, func(b *ContentBlock) **ResourceLink { return &b.ResourceLink }),
		variantField(ContentResource, func(b *ContentBlock) **EmbeddedResource { return &b.Resource }),
	},
	unknown: func(b *ContentBlock) **UnknownVariant { return &b.Unknown },
}

func (b ContentBlock) variant() (tag string, v any, n int) { return contentBlocks.variant(&b) }

// MarshalJSON encodes the variant that is set, with its "type". It fails
// unless exactly one variant is set.
func (b ContentBlock) MarshalJSON() ([]byte, error) { return contentBlocks.marshal(&b) }

// UnmarshalJSON decodes a content block by its "type".
func (b *ContentBlock) UnmarshalJSON(data []byte) error { return contentBlocks.unmarshal(data, b) }

// validate checks that b is something a client accepts: exactly one known
// variant (the official SDK drops unknown or invalid blocks).
func (b ContentBlock) validate() error {
	tag, v, n := b.variant()
	switch {
	case n != 1:
		return fmt.Errorf("a content block needs exactly one variant set, has %d", n)
	case b.Unknown != nil:
		return fmt.Errorf("content block type %q is not part of ACP v1", tag)
	}
	if r, ok := v.(*EmbeddedResource); ok {
		return r.Resource.validate()
	}
	return nil
}

// UnknownVariant is a union value whose discriminator this package does not
// know. Raw is the complete JSON object, discriminator included, in the
// compact form encoding/json produces.
type UnknownVariant struct {
	Tag string
	Raw json.RawMessage
}

// MarshalJSON returns Raw.
func (u *UnknownVariant) MarshalJSON() ([]byte, error) {
	if jsonKind(u.Raw) != "object" {
		return nil, errors.New("acp: an unknown union variant needs its raw JSON object")
	}
	return u.Raw, nil
}

// TextContent is the "text" content block.
type TextContent struct {
	Annotations *Annotations   `json:"annotations,omitzero" acp:"lenient"`
	Text        string         `json:"text" acp:"required"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ImageContent is the "image" content block. Data is base64.
type ImageContent struct {
	Annotations *Annotations   `json:"annotations,omitzero" acp:"lenient"`
	Data        string         `json:"data" acp:"required"`
	MimeType    string         `json:"mimeType" acp:"required"`
	URI         string         `json:"uri,omitzero" acp:"lenient"` // string|null: "" = absent
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// AudioContent is the "audio" content block. Data is base64.
type AudioContent struct {
	Annotations *Annotations   `json:"annotations,omitzero" acp:"lenient"`
	Data        string         `json:"data" acp:"required"`
	MimeType    string         `json:"mimeType" acp:"required"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ResourceLink is the "resource_link" content block. The optional strings
// are string|null in the schema; "" means absent.
type ResourceLink struct {
	Annotations *Annotations   `json:"annotations,omitzero" acp:"lenient"`
	Description string         `json:"description,omitzero" acp:"lenient"`
	MimeType    string         `json:"mimeType,omitzero" acp:"lenient"`
	Name        string         `json:"name" acp:"required"`
	Size        *int64         `json:"size,omitzero" acp:"lenient"`
	Title       string         `json:"title,omitzero" acp:"lenient"`
	URI         string         `json:"uri" acp:"required"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// EmbeddedResource is the "resource" content block.
type EmbeddedResource struct {
	Annotations *Annotations     `json:"annotations,omitzero" acp:"lenient"`
	Resource    ResourceContents `json:"resource" acp:"required"`
	Meta        map[string]any   `json:"_meta,omitzero" acp:"lenient"`
}

// ResourceContents is the schema's EmbeddedResourceResource: text contents
// (Text set) or binary contents (Blob set, base64). The schema gives this
// union no discriminator, so it is the one place decoded by shape, in the
// schema's order: an object with a "text" string is text contents, else one
// with a "blob" string is blob contents.
type ResourceContents struct {
	URI      string
	MimeType string // string|null: "" = absent
	Text     *string
	Blob     *string
	Meta     map[string]any
}

type textResourceContents struct {
	MimeType string         `json:"mimeType,omitzero" acp:"lenient"`
	Text     string         `json:"text" acp:"required"`
	URI      string         `json:"uri" acp:"required"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

type blobResourceContents struct {
	Blob     string         `json:"blob" acp:"required"`
	MimeType string         `json:"mimeType,omitzero" acp:"lenient"`
	URI      string         `json:"uri" acp:"required"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes text or blob contents.
func (r ResourceContents) MarshalJSON() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("acp: %w", err)
	}
	if r.Text != nil {
		return json.Marshal(textResourceContents{MimeType: r.MimeType, Text: *r.Text, URI: r.URI, Meta: r.Meta})
	}
	return json.Marshal(blobResourceContents{Blob: *r.Blob, MimeType: r.MimeType, URI: r.URI, Meta: r.Meta})
}

// UnmarshalJSON decodes text or blob contents.
func (r *ResourceContents) UnmarshalJSON(data []byte) error {
	*r = ResourceContents{}
	var t textResourceContents
	errText := DecodeObject(data, &t)
	if errText == nil {
		*r = ResourceContents{URI: t.URI, MimeType: t.MimeType, Text: &t.Text, Meta: t.Meta}
		return nil
	}
	var b blobResourceContents
	if err := DecodeObject(data, &b); err != nil {
		return malformed("resource contents: neither text contents (%s) nor blob contents (%s)", DescribeError(errText), DescribeError(err))
	}
	*r = ResourceContents{URI: b.URI, MimeType: b.MimeType, Blob: &b.Blob, Meta: b.Meta}
	return nil
}

func (r ResourceContents) validate() error {
	if (r.Text == nil) == (r.Blob == nil) {
		return errors.New("resource contents need exactly one of Text and Blob")
	}
	return nil
}

// Annotations tell the client how to use or display content.
type Annotations struct {
	Audience     []Role         `json:"audience,omitzero" acp:"lenient,skipinvalid"`
	LastModified string         `json:"lastModified,omitzero" acp:"lenient"`
	Priority     *float64       `json:"priority,omitzero" acp:"lenient"`
	Meta         map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Role is a conversation role in [Annotations].
type Role string

// The roles of the schema (a closed set).
const (
	RoleAssistant Role = "assistant"
	RoleUser      Role = "user"
)

// UnmarshalJSON accepts only the schema's roles.
func (r *Role) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, r, "role", RoleAssistant, RoleUser)
}

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *TextContent) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ImageContent) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AudioContent) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ResourceLink) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *EmbeddedResource) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes a; errors wrap [ErrMalformed].
func (a *Annotations) UnmarshalJSON(data []byte) error { return DecodeObject(data, a) }
