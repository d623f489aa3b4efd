package session

import (
	"context"
	"fmt"

	"github.com/sessionkit/sessionkit/history"
)

// ForkRequest names the session to fork and where ([Fork]).
type ForkRequest struct {
	// From is the ID of the session forked: the source.
	From string
	// At is the ID of a message of the source (the newest with that ID,
	// Active or archived): the fork takes the source's history up to and
	// including it. "" forks at the source's newest entry.
	At string
	// ID is the fork's session ID; "" makes a new one. It must not exist.
	ID string
	// Title is the fork's title; "" takes the source's.
	Title string
}

// ForkResult is what [Fork] made.
type ForkResult struct {
	// ID is the fork's session ID: open it with [Open] (Config.ID).
	ID string
}

// Fork makes a new session of store that branches the conversation of
// req.From at the message req.At, without copying what the store need not
// copy (history.Catalog.Fork; docs/session.md, "Forks"). The fork's state
// is the source's as it was just after req.At was committed: the
// compactions committed before that point are the fork's (their Segments,
// summaries and fidelity), the ones after it are not, and a message that
// a later compaction archived in the source is Active in the fork if it
// was then. Its settings (system prompt, model, mode, recall, pruning, as
// stored) are the source's as they stand now; its event log, sequence
// numbers, usage ledger and lease are its own. Open it with [Open] and use
// it like any session: Messages, Search, the recall tool, Replay and
// Uncompact see the source's history up to the fork point and the fork's
// own, never a message the source got later. A fork of a fork works to any
// depth.
//
// Fork reads the source's committed history and takes no lease of it: the
// source may be open in this process or another, and goes on unchanged.
// It writes nothing when it fails: ErrInvalid for an empty req.From or a
// nil store; history.ErrNotFound for an unknown source (or one deleted
// while being forked); history.ErrExists for an req.ID that exists; an
// error wrapping history.ErrInvalid and history.ErrUnknownMessage for an
// req.At that is no message of the source (a message of another session
// included); one wrapping history.ErrInvalid and
// history.ErrForkInCompaction for a fork point inside a compaction (after
// the record of one still running: fork before it, or once it is done).
func Fork(ctx context.Context, store history.Store, req ForkRequest) (ForkResult, error) {
	switch {
	case store == nil:
		return ForkResult{}, invalid("Fork needs a store")
	case req.From == "":
		return ForkResult{}, invalid("ForkRequest.From is empty")
	}
	id := req.ID
	if id == "" {
		id = newID()
	}
	if _, err := store.Fork(ctx, history.ForkSpec{ID: id, From: req.From, At: req.At, Title: req.Title}); err != nil {
		return ForkResult{}, fmt.Errorf("session: fork %q of %q at %q: %w", id, req.From, req.At, err)
	}
	return ForkResult{ID: id}, nil
}
