package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// Times are stored as integer unix nanoseconds, NULL for the zero time, and
// read back in UTC. Nanoseconds since 1970 fit an int64 from 1677-09-21 to
// 2262-04-11; other instants are rejected with history.ErrInvalid.
var (
	minTime = time.Unix(0, -1<<63)
	maxTime = time.Unix(0, 1<<63-1)
)

// UnixNano is the column value of t: its unix nanoseconds, and whether it
// is a time at all (false, NULL, for the zero time).
func UnixNano(t time.Time) (n int64, valid bool, err error) {
	if t.IsZero() {
		return 0, false, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return 0, false, fmt.Errorf("%w: time %v is outside the years 1678 to 2261", history.ErrInvalid, t)
	}
	return t.UnixNano(), true, nil
}

// FromUnixNano is the inverse of UnixNano.
func FromUnixNano(n int64, valid bool) time.Time {
	if !valid {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Arguments splits a tool call's arguments between the two fields they are
// stored in, so that their bytes survive exactly: a JSON string (not
// embedded JSON, which encoding/json would compact) when they are UTF-8,
// their bytes (base64 in JSON) otherwise; neither for nil arguments.
func Arguments(args json.RawMessage) (text *string, raw []byte) {
	switch {
	case args == nil:
		return nil, nil
	case utf8.Valid(args):
		s := string(args)
		return &s, nil
	}
	return nil, args
}

// FromArguments is the inverse of Arguments.
func FromArguments(text *string, raw []byte) json.RawMessage {
	switch {
	case text != nil:
		return json.RawMessage(*text)
	case raw != nil:
		return json.RawMessage(raw)
	}
	return nil
}

// SeqAfter is the argument of an Events query for the sequence numbers
// after after: the schemas keep them in signed 64-bit columns, and no stored
// number is above math.MaxInt64.
func SeqAfter(after uint64) int64 {
	return int64(min(after, math.MaxInt64))
}

// NotNull is data as a value for a NOT NULL binary column (an event's
// data): nil becomes empty.
func NotNull(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// attachmentJSON is the stored form of a [history.Attachment], one item of
// a JSON array. A text field that is not UTF-8 goes to its _base64 twin
// (encoding/json would replace the invalid bytes), so every field
// round-trips exactly; data is base64, as encoding/json writes bytes.
type attachmentJSON struct {
	Kind       string `json:"kind"`
	At         int    `json:"at,omitempty"`
	Name       string `json:"name,omitempty"`
	NameBase64 []byte `json:"name_base64,omitempty"`
	URI        string `json:"uri,omitempty"`
	URIBase64  []byte `json:"uri_base64,omitempty"`
	MIME       string `json:"mime,omitempty"`
	MIMEBase64 []byte `json:"mime_base64,omitempty"`
	Text       string `json:"text,omitempty"`
	TextBase64 []byte `json:"text_base64,omitempty"`
	Note       string `json:"note,omitempty"`
	NoteBase64 []byte `json:"note_base64,omitempty"`
	Data       []byte `json:"data,omitempty"`
}

// Exact splits s between a string field and its base64 twin: s itself
// when it is valid UTF-8 (JSON keeps it exactly), else its bytes.
func Exact(s string) (string, []byte) {
	if utf8.ValidString(s) {
		return s, nil
	}
	return "", []byte(s)
}

// Unexact is the inverse of Exact.
func Unexact(s string, b []byte) string {
	if b != nil {
		return string(b)
	}
	return s
}

// Attachments returns the stored form of a message's attachments, already
// validated: a JSON array, or nil for none. The image bytes are in it once,
// as base64.
func Attachments(in []history.Attachment) ([]byte, error) {
	return MarshalEach(in, func(a *history.Attachment) (attachmentJSON, error) {
		o := attachmentJSON{Kind: string(a.Kind), At: a.At, Data: a.Data}
		o.Name, o.NameBase64 = Exact(a.Name)
		o.URI, o.URIBase64 = Exact(a.URI)
		o.MIME, o.MIMEBase64 = Exact(a.MIMEType)
		o.Text, o.TextBase64 = Exact(a.Text)
		o.Note, o.NoteBase64 = Exact(a.Note)
		return o, nil
	})
}

// MarshalEach encodes in as a JSON array of their stored forms (each from
// to), as Marshal does; nil for none. It is the inverse of Unmarshal.
func MarshalEach[T, S any](in []T, to func(*T) (S, error)) ([]byte, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]S, len(in))
	for i := range in {
		var err error
		if out[i], err = to(&in[i]); err != nil {
			return nil, err
		}
	}
	return Marshal(out)
}

// Marshal encodes v as JSON as stored: without escaping HTML characters
// (the stored text stays readable) and without a trailing newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// FromAttachments is the inverse of Attachments (nil for nil).
func FromAttachments(b []byte) ([]history.Attachment, error) {
	return Unmarshal(b, func(a attachmentJSON) history.Attachment {
		return history.Attachment{
			Kind: history.AttachmentKind(a.Kind), At: a.At, Data: a.Data,
			Name: Unexact(a.Name, a.NameBase64), URI: Unexact(a.URI, a.URIBase64), MIMEType: Unexact(a.MIME, a.MIMEBase64),
			Text: Unexact(a.Text, a.TextBase64), Note: Unexact(a.Note, a.NoteBase64),
		}
	})
}

// Unmarshal decodes b, a JSON array of stored forms S, into their values
// (each from), nil for nil.
func Unmarshal[S, T any](b []byte, from func(S) T) ([]T, error) {
	if b == nil {
		return nil, nil
	}
	var in []S
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = from(v)
	}
	return out, nil
}

// thoughtJSON is the stored form of a [history.Thought].
type thoughtJSON struct {
	Text            string `json:"text,omitempty"`
	TextBase64      []byte `json:"text_base64,omitempty"`
	Signature       string `json:"signature,omitempty"`
	SignatureBase64 []byte `json:"signature_base64,omitempty"`
	Redacted        string `json:"redacted,omitempty"`
	RedactedBase64  []byte `json:"redacted_base64,omitempty"`
}

// Thoughts returns the stored form of an assistant message's thoughts: a
// JSON array, or nil for none.
func Thoughts(in []history.Thought) ([]byte, error) {
	return MarshalEach(in, func(t *history.Thought) (thoughtJSON, error) {
		var o thoughtJSON
		o.Text, o.TextBase64 = Exact(t.Text)
		o.Signature, o.SignatureBase64 = Exact(t.Signature)
		o.Redacted, o.RedactedBase64 = Exact(t.Redacted)
		return o, nil
	})
}

// FromThoughts is the inverse of Thoughts (nil for nil).
func FromThoughts(b []byte) ([]history.Thought, error) {
	return Unmarshal(b, func(t thoughtJSON) history.Thought {
		return history.Thought{Text: Unexact(t.Text, t.TextBase64), Signature: Unexact(t.Signature, t.SignatureBase64), Redacted: Unexact(t.Redacted, t.RedactedBase64)}
	})
}
