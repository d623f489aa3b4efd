package storekit

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// ListPosition is where a page of [history.Catalog.ListSessions] ends: the last
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
// [history.ErrInvalid].
func ParseList(opts history.ListOptions) (limit int, after *ListPosition, err error) {
	switch {
	case opts.Limit < 0:
		return 0, nil, fmt.Errorf("%w: list limit %d is negative", history.ErrInvalid, opts.Limit)
	case opts.Limit == 0:
		limit = history.DefaultListLimit
	default:
		limit = min(opts.Limit, history.MaxListLimit)
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
	return 0, nil, fmt.Errorf("%w: malformed list cursor %q", history.ErrInvalid, opts.Cursor)
}

// Before reports whether a session at (updatedAt, id) comes after p in
// listing order (newest first).
func (p *ListPosition) Before(updatedAt int64, id string) bool {
	return updatedAt < p.UpdatedAt || updatedAt == p.UpdatedAt && id < p.ID
}

// Page makes the page of a listing that read up to limit+1 sessions in
// order: at most limit of them, and a Next cursor when there were more.
func Page(sessions []history.SessionInfo, limit int) history.SessionPage {
	if len(sessions) <= limit {
		if sessions == nil {
			sessions = []history.SessionInfo{}
		}
		return history.SessionPage{Sessions: sessions}
	}
	sessions = sessions[:limit]
	last := sessions[limit-1]
	return history.SessionPage{Sessions: sessions, Next: ListPosition{UpdatedAt: last.UpdatedAt.UnixNano(), ID: last.ID}.Cursor()}
}
