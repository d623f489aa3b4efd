package history

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SessionInfo describes one stored session, as [Lister] lists it.
type SessionInfo struct {
	ID string
	// CreatedAt is when the session was created; UpdatedAt when it was last
	// written (any write: a message, a compaction, its configuration).
	CreatedAt, UpdatedAt time.Time
	// Title and Cwd are the metadata the session was created with
	// ([NewSession]). A session created without a title is listed with a
	// default one made from its first message ([DefaultTitle]), "" while it
	// has none.
	Title, Cwd string
	// Messages counts the session's messages, Active and archived.
	Messages int
}

// ListOptions selects and pages the sessions [Lister.ListSessions] returns.
type ListOptions struct {
	Cwd    string // only sessions created with this Cwd; "" = all
	Cursor string // SessionPage.Next of the previous page; "" = the first page
	Limit  int    // sessions per page; 0 = DefaultListLimit; at most MaxListLimit
}

// SessionPage is one page of sessions.
type SessionPage struct {
	Sessions []SessionInfo // newest UpdatedAt first (ties: larger ID first)
	Next     string        // the Cursor of the next page; "" = last page
}

// Lister is implemented by stores that can list their sessions (all three
// stores of sessionkit do).
//
// Pages are keyset pages over (UpdatedAt, ID), newest first: a session
// written while a client pages moves to the front and is not listed twice;
// a session that was not written meanwhile is listed exactly once.
type Lister interface {
	// ListSessions returns one page of sessions. It fails with an error
	// wrapping [ErrInvalid] for a negative Limit or a malformed Cursor.
	ListSessions(ctx context.Context, opts ListOptions) (SessionPage, error)
}

// Limits of [ListOptions.Limit].
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// MaxTitle is the length, in runes, of a default title ([DefaultTitle]).
const MaxTitle = 80

// DefaultTitle makes a session title from the text of its first message:
// its first non-blank line, with runs of white space made one space, cut to
// at most [MaxTitle] runes (ending in "…" when cut).
func DefaultTitle(text string) string {
	var line string
	for l := range strings.Lines(text) {
		if strings.TrimSpace(l) != "" {
			line = l
			break
		}
	}
	line = strings.Join(strings.FieldsFunc(line, unicode.IsSpace), " ")
	if utf8.RuneCountInString(line) <= MaxTitle {
		return line
	}
	r := []rune(line)[:MaxTitle-1]
	return strings.TrimRightFunc(string(r), unicode.IsSpace) + "…"
}

// ListPosition is where a page of [Lister.ListSessions] ends: the last
// listed session's UpdatedAt (Unix nanoseconds) and ID. Stores encode it as
// the page's Next and decode a Cursor with [ParseList].
type ListPosition struct {
	UpdatedAt int64
	ID        string
}

// Cursor encodes p as an opaque cursor.
func (p ListPosition) Cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.UpdatedAt, 10) + ":" + p.ID))
}

// ParseList checks opts and returns the page size and, for a Cursor, the
// position the page starts after (nil for the first page). Errors wrap
// [ErrInvalid].
func ParseList(opts ListOptions) (limit int, after *ListPosition, err error) {
	switch {
	case opts.Limit < 0:
		return 0, nil, fmt.Errorf("%w: list limit %d is negative", ErrInvalid, opts.Limit)
	case opts.Limit == 0:
		limit = DefaultListLimit
	default:
		limit = min(opts.Limit, MaxListLimit)
	}
	if opts.Cursor == "" {
		return limit, nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(opts.Cursor)
	if err == nil {
		if nanos, id, ok := strings.Cut(string(raw), ":"); ok {
			if n, perr := strconv.ParseInt(nanos, 10, 64); perr == nil {
				return limit, &ListPosition{UpdatedAt: n, ID: id}, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("%w: malformed list cursor %q", ErrInvalid, opts.Cursor)
}

// Before reports whether a session at (updatedAt, id) comes after p in
// listing order (newest first).
func (p *ListPosition) Before(updatedAt int64, id string) bool {
	return updatedAt < p.UpdatedAt || updatedAt == p.UpdatedAt && id < p.ID
}

// Page makes the page of a listing that read up to limit+1 sessions in
// order: at most limit of them, and a Next cursor when there were more.
func Page(sessions []SessionInfo, limit int) SessionPage {
	if len(sessions) <= limit {
		if sessions == nil {
			sessions = []SessionInfo{}
		}
		return SessionPage{Sessions: sessions}
	}
	sessions = sessions[:limit]
	last := sessions[limit-1]
	return SessionPage{Sessions: sessions, Next: ListPosition{UpdatedAt: last.UpdatedAt.UnixNano(), ID: last.ID}.Cursor()}
}
