// Package leasing holds what the stores that implement history.Leaser
// (history/sqlite, history/postgres) share about one lease: whether it was
// released or lost, its Lost channel, the loop that renews it, and the
// errors of a write under a lease that is gone. The stores keep the lease
// rows and the statements that read and change them.
package leasing

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// State is the life of one lease of one session.
type State struct {
	store string // "sqlite" or "postgres", for error texts
	id    string
	token uint64

	ctx    context.Context // of the renewals; cancelled to stop them
	cancel context.CancelFunc
	done   chan struct{} // closed when the renewal loop has returned

	mu       sync.Mutex
	released bool
	isLost   bool
	lost     chan struct{}
}

// New returns the state of lease token of session id, taken by a store
// named store. Start its renewals with [State.Renew], or [State.Stop] it.
func New(store, id string, token uint64) *State {
	s := &State{store: store, id: id, token: token, lost: make(chan struct{}), done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Session is the leased session's ID.
func (s *State) Session() string { return s.id }

// Token is the lease's fencing token.
func (s *State) Token() uint64 { return s.token }

// Lost is closed when the lease is lost.
func (s *State) Lost() <-chan struct{} { return s.lost }

// Stopped is closed once the renewals have stopped.
func (s *State) Stopped() <-chan struct{} { return s.done }

// Stop stops a lease whose renewals never started.
func (s *State) Stop() {
	s.cancel()
	close(s.done)
}

// Lose declares the lease lost: Lost is closed, renewals stop. It does not
// wait for the renewal loop, which may be the caller.
func (s *State) Lose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isLost {
		return
	}
	s.isLost = true
	close(s.lost)
	s.cancel()
}

// End marks the lease released and stops its renewals. It reports whether
// the lease was live until then (neither released nor lost): only then has
// the store to mark its row released.
func (s *State) End() (live bool) {
	s.mu.Lock()
	live = !s.released && !s.isLost
	s.released = true
	s.mu.Unlock()
	s.StopRenewals()
	return live
}

// StopRenewals stops the renewal loop and waits for it to return, without
// releasing the lease or declaring it lost.
func (s *State) StopRenewals() {
	s.cancel()
	<-s.done
}

// CheckSession validates the session ID of an Acquire.
func CheckSession(id string) error {
	if id == "" {
		return fmt.Errorf("%w: lease of a session without ID", history.ErrInvalid)
	}
	return nil
}

// Writes is the check of a write of op to session id through the lease's
// store before it starts: a write to another session fails with
// history.ErrInvalid, and one through a lease known to be lost or released
// (without asking the store) with history.ErrFenced. A nil State (the
// store itself) writes anywhere.
//
// The check of the lease row inside the write transaction does not make
// this one redundant: the row may still read live with this token after
// the lease is gone here. Renew gives the lease up at a deadline measured
// before its last request was sent, and the store measured the row's
// expiry inside that request's transaction, later; a Release whose update
// never ran leaves the row as it was. Lost is closed by then, and a write
// after it must fail.
func (s *State) Writes(op, id string) error {
	if s == nil {
		return nil
	}
	if id != s.id {
		return fmt.Errorf("%w: the lease of session %q does not cover session %q", history.ErrInvalid, s.id, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.isLost:
		return fmt.Errorf("%s: %s: %w: lease %d of session %q", s.store, op, history.ErrFenced, s.token, s.id)
	case s.released:
		return fmt.Errorf("%s: %s: %w: lease %d of session %q was released", s.store, op, history.ErrFenced, s.token, s.id)
	}
	return nil
}

// Check judges the lease row a write transaction read: found reports
// whether the session has one, token and live what it holds. Unless it
// carries this lease's token and is live, the lease is lost (another holder
// took it, or it expired) and the write fails with history.ErrFenced.
func (s *State) Check(op string, found bool, token uint64, live bool) error {
	switch {
	case !found: // lease rows are never deleted
		s.Lose()
		return fmt.Errorf("%s: %s: %w: session %q has no lease row", s.store, op, history.ErrFenced, s.id)
	case token != s.token:
		s.Lose()
		return fmt.Errorf("%s: %s: %w: session %q is now under lease %d, not %d", s.store, op, history.ErrFenced, s.id, token, s.token)
	case !live:
		s.Lose()
		return fmt.Errorf("%s: %s: %w: lease %d of session %q expired", s.store, op, history.ErrFenced, s.token, s.id)
	}
	return nil
}

// Renew keeps the lease alive until it is released or lost; run it in its
// own goroutine. Every third of ttl it calls once, which extends the
// expiry by ttl provided the token is still the lease's and the lease has
// not expired, and reports whether it did; once's ctx ends at deadline.
// deadline is when the lease expires at the latest as this process's clock
// measures it (ttl after the request that last extended it was sent). A
// renewal that finds the lease taken over or expired, or that cannot
// succeed before the deadline, declares the lease lost.
func (s *State) Renew(ttl time.Duration, deadline time.Time, once func(ctx context.Context) (bool, error)) {
	defer close(s.done)
	interval := ttl / 3
	retry := max(ttl/20, time.Millisecond)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		if !start.Before(deadline) {
			s.Lose()
			return
		}
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		ok, err := once(ctx)
		cancel()
		switch {
		case s.ctx.Err() != nil: // stopped, released or lost meanwhile
			return
		case err == nil && ok:
			deadline = start.Add(ttl)
			timer.Reset(interval)
		case err == nil:
			s.Lose()
			return
		default: // the store did not answer: try again until the deadline
			timer.Reset(min(retry, max(time.Until(deadline), 0)))
		}
	}
}
