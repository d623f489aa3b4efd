package history

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// SessionInfo describes one stored session, as [Catalog.ListSessions] lists it.
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
	// ForkOf is the session this one is a fork of ([Catalog.Fork]), ""
	// for none; ForkAt the message of ForkOf it was forked at ("" when
	// forked at the newest entry of a session with no message).
	ForkOf, ForkAt string
}

// ListOptions selects and pages the sessions [Catalog.ListSessions] returns.
type ListOptions struct {
	Cwd string // only sessions created with this Cwd; "" = all
	// ForkOf lists only the forks of this session (SessionInfo.ForkOf),
	// its direct forks, not theirs; "" = all sessions.
	ForkOf string
	Cursor string // SessionPage.Next of the previous page; "" = the first page
	Limit  int    // sessions per page; 0 = DefaultListLimit; at most MaxListLimit
}

// SessionPage is one page of sessions.
type SessionPage struct {
	Sessions []SessionInfo // newest UpdatedAt first (ties: larger ID first)
	Next     string        // the Cursor of the next page; "" = last page
}

// The order of pages: keyset pages over (UpdatedAt, ID), newest first. A
// session written while a client pages moves to the front and is not
// listed twice; a session that was not written meanwhile is listed exactly
// once.

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
