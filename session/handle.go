package session

import (
	"context"

	"github.com/sessionkit/sessionkit/internal/eventfeed"
)

// Handle tracks one accepted command. It is safe for concurrent use.
//
// Finished is closed exactly once, when the command is done; the result is
// written before the close, so after <-Finished() Result never returns nil.
// Every accepted command finishes, also when the session closes (docs/design.md
// §2.7).
type Handle[R any] eventfeed.Handle[R]

// newHandle returns a pending handle and the function that finishes it;
// cancel is called by Handle.Cancel and may be nil.
func newHandle[R any](id string, cancel func()) (*Handle[R], func(R)) {
	h, finish := eventfeed.NewHandle[R](id, cancel)
	return (*Handle[R])(h), finish
}

func (h *Handle[R]) inner() *eventfeed.Handle[R] { return (*eventfeed.Handle[R])(h) }

// ID returns the command's ID. For a compaction it is the compact ID.
func (h *Handle[R]) ID() string { return h.inner().ID() }

// Finished returns a channel that is closed when the command is done.
func (h *Handle[R]) Finished() <-chan struct{} { return h.inner().Finished() }

// Result returns the result once the command is done and nil while it is
// pending. It never blocks.
func (h *Handle[R]) Result() *R { return h.inner().Result() }

// Wait blocks until the command is done and returns its result. It returns
// an error only when ctx ends first; the command itself goes on (the ctx of a
// call governs waiting only; use Cancel to stop the command).
func (h *Handle[R]) Wait(ctx context.Context) (R, error) { return h.inner().Wait(ctx) }

// Cancel asks for the command to stop. A queued command is removed from the
// queue and finishes as cancelled; a running one has its context cancelled
// (docs/design.md §4.8: a compaction whose commit has started still finishes).
// Cancel is idempotent and does nothing once the command is done.
func (h *Handle[R]) Cancel() { h.inner().Cancel() }
