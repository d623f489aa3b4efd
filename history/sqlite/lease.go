package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
)

// Acquire implements [history.Leaser] with the rules of history/postgres:
// it takes the lease of session id, which need not exist yet, for the
// store's TTL ([WithLeaseTTL]), and renews it in the background until it is
// released or lost. While another lease of the session is live, whoever
// holds it (another process, another Store on the same file, or this one),
// Acquire fails at once with a *[history.LeaseError] naming its holder.
//
// A session's lease row is never deleted: taking a released or expired lease
// over increments its fencing token, so tokens of a session only grow.
// Expiry is judged by the clock of the machine (every process that opens
// the file runs on it).
func (s *Store) Acquire(ctx context.Context, id string) (history.Lease, error) {
	const op = "acquire"
	if id == "" {
		return nil, fmt.Errorf("%w: lease of a session without ID", history.ErrInvalid)
	}
	if err := s.admit(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE: no write runs meanwhile
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer func() { _ = tx.Rollback() }()
	now := start.UnixNano()
	var token int64
	err = tx.QueryRowContext(ctx, `
		INSERT INTO leases AS l (session_id, holder, token, expires_at) VALUES (?, ?, 1, ?)
		ON CONFLICT (session_id) DO UPDATE
			SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at
			WHERE l.expires_at <= ?
		RETURNING token`, id, s.holder, now+s.ttl.Nanoseconds(), now).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, s.leased(ctx, tx, op, id)
	}
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	l := &lease{s: s.db, id: id, token: uint64(token), lost: make(chan struct{}), done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		l.cancel()
		close(l.done)
		_ = l.releaseRow(context.Background())
		return nil, history.ErrClosed
	}
	s.leases[l] = struct{}{}
	s.mu.Unlock()
	go l.renew(start.Add(s.ttl))
	return l, nil
}

// leased returns the *history.LeaseError of the live lease of session id.
func (s *Store) leased(ctx context.Context, tx *sql.Tx, op, id string) error {
	var (
		holder  string
		expires int64
	)
	if err := tx.QueryRowContext(ctx, `SELECT holder, expires_at FROM leases WHERE session_id = ?`, id).Scan(&holder, &expires); err != nil {
		return s.fail(ctx, op, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, &history.LeaseError{Session: id, Holder: holder, Expires: time.Unix(0, expires).UTC()})
}

// checkLease is the lease check of a write transaction (see begin).
func (s *Store) checkLease(ctx context.Context, tx *sql.Tx, op, id string) error {
	now := time.Now().UnixNano()
	if s.l == nil {
		var live bool
		err := tx.QueryRowContext(ctx, `SELECT expires_at > ? FROM leases WHERE session_id = ?`, now, id).Scan(&live)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && !live:
			return nil
		case err != nil:
			return s.fail(ctx, op, err)
		}
		return s.leased(ctx, tx, op, id)
	}
	l := s.l
	var (
		token int64
		live  bool
	)
	err := tx.QueryRowContext(ctx, `SELECT token, expires_at > ? FROM leases WHERE session_id = ?`, now, id).Scan(&token, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows): // lease rows are never deleted
		l.lose()
		return fmt.Errorf("sqlite: %s: %w: session %q has no lease row", op, history.ErrFenced, id)
	case err != nil:
		return s.fail(ctx, op, err)
	case uint64(token) != l.token:
		l.lose()
		return fmt.Errorf("sqlite: %s: %w: session %q is now under lease %d, not %d", op, history.ErrFenced, id, token, l.token)
	case !live:
		l.lose()
		return fmt.Errorf("sqlite: %s: %w: lease %d of session %q expired", op, history.ErrFenced, l.token, id)
	}
	return nil
}

// releaseAll releases the store's live leases (Close).
func (s *Store) releaseAll() {
	s.mu.Lock()
	leases := s.leases
	s.leases = map[*lease]struct{}{}
	s.mu.Unlock()
	for l := range leases {
		_ = l.release(context.Background()) // best effort: the rows expire otherwise
	}
}

// lease is a [history.Lease] of a [Store].
type lease struct {
	s     *db
	id    string
	token uint64

	ctx    context.Context // of the renewals; cancelled to stop them
	cancel context.CancelFunc
	done   chan struct{} // closed when the renewal goroutine has returned

	mu       sync.Mutex
	released bool
	isLost   bool
	lost     chan struct{}
}

var _ history.Lease = (*lease)(nil)

// Session implements [history.Lease].
func (l *lease) Session() string { return l.id }

// Token implements [history.Lease].
func (l *lease) Token() uint64 { return l.token }

// Store implements [history.Lease]: the store whose writes check this lease.
func (l *lease) Store() history.Store { return &Store{db: l.s, l: l} }

// Lost implements [history.Lease].
func (l *lease) Lost() <-chan struct{} { return l.lost }

// Release implements [history.Lease]. It stops the renewals and, if the
// lease is still the session's current one, marks it released in the file
// (holder cleared, expiry now), so that the next Acquire succeeds at once.
// Releasing twice, or a lost lease, is a no-op.
func (l *lease) Release(ctx context.Context) error {
	l.s.mu.Lock()
	delete(l.s.leases, l)
	l.s.mu.Unlock()
	return l.release(ctx)
}

// release is Release without the store's bookkeeping.
func (l *lease) release(ctx context.Context) error {
	l.mu.Lock()
	first := !l.released && !l.isLost
	l.released = true
	l.mu.Unlock()
	l.cancel()
	<-l.done
	if !first {
		return nil
	}
	if err := l.releaseRow(ctx); err != nil {
		return fmt.Errorf("sqlite: release: %w", err)
	}
	return nil
}

// releaseRow marks the lease row released if its token is still this
// lease's.
func (l *lease) releaseRow(ctx context.Context) error {
	_, err := l.s.w.ExecContext(ctx, `
		UPDATE leases SET holder = '', expires_at = min(expires_at, ?)
		WHERE session_id = ? AND token = ?`, time.Now().UnixNano(), l.id, int64(l.token))
	return err
}

// lose declares the lease lost: Lost is closed, renewals stop.
func (l *lease) lose() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isLost {
		return
	}
	l.isLost = true
	close(l.lost)
	l.cancel()
}

// mine fails with history.ErrInvalid for a write of a lease's store to
// another session. A nil lease (the store itself) writes anywhere.
func (l *lease) mine(id string) error {
	if l != nil && id != l.id {
		return fmt.Errorf("%w: the lease of session %q does not cover session %q", history.ErrInvalid, l.id, id)
	}
	return nil
}

// usable fails with history.ErrFenced if the lease is known to be lost or
// was released, without reading the file.
func (l *lease) usable(op string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.isLost:
		return fmt.Errorf("sqlite: %s: %w: lease %d of session %q", op, history.ErrFenced, l.token, l.id)
	case l.released:
		return fmt.Errorf("sqlite: %s: %w: lease %d of session %q was released", op, history.ErrFenced, l.token, l.id)
	}
	return nil
}

// renew keeps the lease alive: every third of the TTL it extends the
// expiry to now plus the TTL, provided the token is still the lease's and
// the lease has not expired. A renewal that finds the lease taken over or
// expired, or that cannot succeed before deadline (when the lease expires),
// declares the lease lost.
func (l *lease) renew(deadline time.Time) {
	defer close(l.done)
	ttl := l.s.ttl
	timer := time.NewTimer(ttl / 3)
	defer timer.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		if !start.Before(deadline) {
			l.lose()
			return
		}
		ctx, cancel := context.WithDeadline(l.ctx, deadline)
		res, err := l.s.w.ExecContext(ctx, `
			UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ? AND expires_at > ?`,
			start.Add(ttl).UnixNano(), l.id, int64(l.token), start.UnixNano())
		cancel()
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		switch {
		case l.ctx.Err() != nil: // released or lost meanwhile
			return
		case err == nil && n == 1:
			deadline = start.Add(ttl)
			timer.Reset(ttl / 3)
		case err == nil:
			l.lose()
			return
		default: // the file was busy: try again until the deadline
			timer.Reset(min(max(ttl/20, time.Millisecond), max(time.Until(deadline), 0)))
		}
	}
}
