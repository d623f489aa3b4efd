package eventfeed

import (
	"context"
	"sync"
)

// Handle tracks one accepted command. It is safe for concurrent use.
// Finished is closed exactly once, after the result is written.
type Handle[R any] struct {
	id     string
	done   chan struct{}
	once   sync.Once
	res    R
	cancel func()
}

// NewHandle returns a pending handle and the function that finishes it;
// cancel is called by Handle.Cancel and may be nil. Calling finish more
// than once keeps the first result.
func NewHandle[R any](id string, cancel func()) (*Handle[R], func(R)) {
	h := &Handle[R]{id: id, done: make(chan struct{}), cancel: cancel}
	return h, h.finish
}

// ID returns the command's ID.
func (h *Handle[R]) ID() string { return h.id }

// Finished returns a channel that is closed when the command is done.
func (h *Handle[R]) Finished() <-chan struct{} { return h.done }

// Result returns the result once the command is done and nil while it is
// pending. It never blocks.
func (h *Handle[R]) Result() *R {
	select {
	case <-h.done:
		return &h.res
	default:
		return nil
	}
}

// Wait blocks until the command is done or ctx ends.
func (h *Handle[R]) Wait(ctx context.Context) (R, error) {
	select {
	case <-h.done:
		return h.res, nil
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// Cancel calls the cancel function unless the command is done.
func (h *Handle[R]) Cancel() {
	select {
	case <-h.done:
		return
	default:
	}
	if h.cancel != nil {
		h.cancel()
	}
}

func (h *Handle[R]) finish(r R) {
	h.once.Do(func() {
		h.res = r
		close(h.done)
	})
}
