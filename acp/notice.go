package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sessionkit/sessionkit/session"
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

var _ SessionUpdate = (*Notice)(nil)

// SessionUpdateKind returns "notice".
func (*Notice) SessionUpdateKind() string { return UpdateNotice }
func (*Notice) isSessionUpdate()          {}

// MarshalJSON encodes n with "sessionUpdate":"notice".
func (n Notice) MarshalJSON() ([]byte, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	type plain Notice
	return marshalVariant("sessionUpdate", UpdateNotice, plain(n))
}

// UnmarshalJSON decodes n; a "sessionUpdate" member, if present, must
// match. Errors wrap [ErrMalformed].
func (n *Notice) UnmarshalJSON(data []byte) error {
	type plain Notice
	if err := decodeVariant(data, (*plain)(n), "sessionUpdate", UpdateNotice); err != nil {
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

// SupportsNotices reports whether the client advertised
// clientCapabilities.session.notices as a JSON object, the only form that
// allows notice updates on ACP v1. Absent, null and anything but an object
// mean no support, as for [ClientCapabilities.SupportsCompaction].
func (c ClientCapabilities) SupportsNotices() bool { return c.sessionObject("notices") }

// Notice tells the user of the session something that is not part of its
// history, e.g. that an MCP server of the session failed to start or died:
// a notice update where the client takes notices (v2; v1 with
// clientCapabilities.session.notices), agent text otherwise. It is queued
// after every update the session queued before it and returns once queued.
// A notice given while the session is being opened (from
// [ServerOptions.SessionTools], say) is sent right after the response that
// opens it. Errors: an invalid notice (no severity or no title),
// [ErrNoClient] when the session is closed, or ctx's error.
func (c *ToolClient) Notice(ctx context.Context, n Notice) error {
	if err := n.Validate(); err != nil {
		return err
	}
	c.early.mu.Lock()
	if !c.early.sent {
		c.early.notices = append(c.early.notices, n)
		c.early.mu.Unlock()
		return nil
	}
	c.early.mu.Unlock()
	a := c.a.Load()
	if a == nil {
		return ErrNoClient
	}
	if !a.notice(ctx, n) {
		return closedErr(ctx)
	}
	return nil
}

// earlyNotices holds the notices given before the session was open; the
// owner takes them once, right after the response that opens the session
// (the lock only hands them over: the owner decides where they go).
type earlyNotices struct {
	mu      sync.Mutex
	sent    bool
	notices []Notice
}

// summarized says that n earlier messages were summarized.
func summarized(n int) string {
	if n == 1 {
		return "1 earlier message was summarized"
	}
	return fmt.Sprintf("%d earlier messages were summarized", n)
}

// archivedCount is how many messages compaction r archived.
func archivedCount(r *session.CompactResult) int {
	if r.Segment == nil {
		return 0
	}
	return len(r.Segment.Messages)
}

// autoCompactNotice tells the user that automatic compaction was
// suspended or resumed.
func autoCompactNotice(p *session.AutoCompactEvent) Notice {
	if p.Suspended {
		return Notice{
			Severity:    NoticeWarning,
			Title:       "Automatic compaction suspended",
			Description: fmt.Sprintf("%d automatic compactions in a row failed (the last: %s). The conversation is not compacted automatically until a compaction succeeds; /compact tries again.", p.Failures, p.Error),
		}
	}
	return Notice{Severity: NoticeInfo, Title: "Automatic compaction resumed", Description: "A compaction succeeded: the conversation is compacted automatically again when it grows."}
}

// firstLine is the first line of s, at most 300 runes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
