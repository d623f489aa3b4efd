package schema

import (
	"errors"
	"fmt"
)

// UpdateNotice is the "sessionUpdate" discriminator of [Notice].
const UpdateNotice = "notice"

// NoticeSeverity is the presentation hint of a [Notice]: info, warning or
// error (an open set in the schema; custom values begin with "_").
type NoticeSeverity string

// The notice severities.
const (
	NoticeInfo    NoticeSeverity = "info"
	NoticeWarning NoticeSeverity = "warning"
	NoticeError   NoticeSeverity = "error"
)

// Notice is the notice session update (ACP v1 and v2): fire-and-forget
// information for the user that is not part of the session's history. The
// agent sends it on v1 only to a client that advertised
// clientCapabilities.session.notices (an object), and on v2 always (v2
// needs no capability); a v1 client without the capability is sent the
// same information as agent text, "Title: Description". Notices are live
// only: a session/load (or a v2 replay) never repeats them.
type Notice struct {
	Severity NoticeSeverity `json:"severity" acp:"required"`
	// Title is required and must not be empty: plain text that stands
	// alone.
	Title string `json:"title" acp:"required"`
	// Description is optional plain-text detail or guidance; "" is absent.
	Description string         `json:"description,omitzero" acp:"lenient"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionUpdateKind returns "notice".
func (*Notice) SessionUpdateKind() string { return UpdateNotice }

func (*Notice) isSessionUpdate() {}

// MarshalJSON encodes n with "sessionUpdate":"notice".
func (n Notice) MarshalJSON() ([]byte, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return marshalUpdate(&n)
}

// UnmarshalJSON decodes n; a "sessionUpdate" member, if present, must
// match. Errors wrap [ErrMalformed].
func (n *Notice) UnmarshalJSON(data []byte) error {
	if err := decodeUpdate(data, n); err != nil {
		return err
	}
	if err := n.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// Validate checks what the schema requires of a notice: a severity and a
// title that is not empty.
func (n *Notice) Validate() error {
	switch {
	case n.Severity == "":
		return errors.New("acp: a notice needs a severity")
	case n.Title == "":
		return errors.New("acp: a notice needs a title")
	}
	return nil
}
