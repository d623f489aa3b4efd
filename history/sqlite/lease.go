package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/leasing"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Acquire implements [history.Leaser] with the rules of the PostgreSQL
// store: one lease row per session, never deleted, whose fencing token
// grows at every takeover; a live lease of anyone (another process, another
// Store of the file, this one) makes Acquire fail at once with a
// *[history.LeaseError] that names its holder; the lease lives for the TTL
// ([WithLeaseTTL]) and renews itself until released or lost. Expiry is
// judged by the clock of the machine, which every process that opens the
// file shares. A live lease whose holder is a process of this machine, of
// this boot and of this PID namespace that no longer exists (it was killed
// before it could release) is taken over at once; a holder that cannot be
// checked from here (another host, another boot, another container's PID
// namespace) keeps its lease until it expires.
func (s *Store) Acquire(ctx context.Context, id string) (history.Lease, error) {
	l, _, err := s.acquire(ctx, id, 0)
	return l, err
}

var _ history.Leaser = (*Store)(nil)

// AcquireReserving implements [history.Leaser]: Acquire, and in
// its transaction (after the lease row was taken, so only a taker reserves)
// the reservation of [Store.ReserveSeqs].
func (s *Store) AcquireReserving(ctx context.Context, id string, gap uint64) (history.Lease, history.SeqReservation, error) {
	if err := storekit.CheckSeqGap(gap); err != nil {
		return nil, history.SeqReservation{}, err
	}
	return s.acquire(ctx, id, gap)
}

// acquire is Acquire, and AcquireReserving when gap is not 0.
func (s *Store) acquire(ctx context.Context, id string, gap uint64) (history.Lease, history.SeqReservation, error) {
	const op = "acquire"
	var res history.SeqReservation
	if err := leasing.CheckSession(id); err != nil {
		return nil, res, err
	}
	if err := s.admit(ctx); err != nil {
		return nil, res, err
	}
	start := time.Now()
	var token int64
	// One write of the committer (BEGIN IMMEDIATE: no other write runs
	// meanwhile), batched with the others.
	err := s.c.submit(ctx, func(tx *sql.Tx) error {
		ctx := context.Background()
		now := start.UnixNano()
		err := tx.QueryRowContext(ctx, `
			INSERT INTO leases AS l (session_id, holder, host, pid, token, expires_at) VALUES (?, ?, ?, ?, 1, ?)
			ON CONFLICT (session_id) DO UPDATE
				SET holder = excluded.holder, host = excluded.host, pid = excluded.pid,
					token = l.token + 1, expires_at = excluded.expires_at
				WHERE l.expires_at <= ?
			RETURNING token`, id, s.holder, s.host, s.pid, now+s.ttl.Nanoseconds(), now).Scan(&token)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if token, err = s.takeOverGone(ctx, tx, op, id, now); err != nil {
				return err
			}
		case err != nil:
			return s.fail(ctx, op, err)
		}
		if gap == 0 {
			return nil
		}
		res, err = s.reserveSeqs(ctx, tx, op, id, gap)
		return err
	})
	var te *txError
	switch {
	case errors.As(err, &te):
		return nil, history.SeqReservation{}, s.busy(ctx, op, id, s.fail(ctx, op, te.err))
	case err != nil:
		return nil, history.SeqReservation{}, err
	}
	l := &lease{State: leasing.New("sqlite", id, uint64(token)), s: s.db}
	if s.st.Closed() || !s.leases.Add(l) {
		l.Stop()
		_ = l.release(context.Background())
		return nil, history.SeqReservation{}, history.ErrClosed
	}
	go l.Renew(s.ttl, start.Add(s.ttl), l.renewOnce)
	return l, res, nil
}

// takeOverGone takes over the live lease of session id if its holder is a
// process of this machine, boot and PID namespace (whereAmI) that no longer
// runs (killed, crashed): its lease
// would only have kept the session from everyone until it expired. It
// returns the *history.LeaseError of the lease otherwise.
func (s *Store) takeOverGone(ctx context.Context, tx *sql.Tx, op, id string, now int64) (int64, error) {
	var (
		host string
		pid  int
	)
	if err := tx.QueryRowContext(ctx, `SELECT host, pid FROM leases WHERE session_id = ?`, id).Scan(&host, &pid); err != nil {
		return 0, s.fail(ctx, op, err)
	}
	if !s.gone(host, pid) {
		return 0, s.leased(ctx, tx, op, id)
	}
	var token int64
	err := tx.QueryRowContext(ctx, `
		UPDATE leases SET holder = ?, host = ?, pid = ?, token = token + 1, expires_at = ?
		WHERE session_id = ? RETURNING token`, s.holder, s.host, s.pid, now+s.ttl.Nanoseconds(), id).Scan(&token)
	if err != nil {
		return 0, s.fail(ctx, op, err)
	}
	return token, nil
}

// gone reports whether the holder recorded as host and pid certainly no
// longer runs: it ran where this process runs (same host, boot and PID
// namespace, so that its pid names the same process table) and no process
// has its pid. Any other holder may be alive.
func (s *Store) gone(host string, pid int) bool {
	return s.checkable && host == s.host && pid > 0 && pid != s.pid && !processRuns(pid)
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

// checkLease is the lease check of a write transaction (see exec).
func (s *Store) checkLease(ctx context.Context, tx *sql.Tx, op, id string) error {
	now := time.Now().UnixNano()
	if s.l == nil {
		var live bool
		err := tx.StmtContext(ctx, s.c.stmts.leaseLive).QueryRowContext(ctx, now, id).Scan(&live)
		switch {
		case errors.Is(err, sql.ErrNoRows) || err == nil && !live:
			return nil
		case err != nil:
			return s.fail(ctx, op, err)
		}
		return s.leased(ctx, tx, op, id)
	}
	var (
		token int64
		live  bool
	)
	err := tx.StmtContext(ctx, s.c.stmts.leaseToken).QueryRowContext(ctx, now, id).Scan(&token, &live)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return s.fail(ctx, op, err)
	}
	return s.l.Check(op, err == nil, uint64(token), live)
}

// releaseAll releases the store's live leases (Close).
func (s *Store) releaseAll() {
	for l := range s.leases.Close() {
		_ = l.release(context.Background()) // best effort: the rows expire otherwise
	}
}

// lease is a [history.Lease] of a [Store]. Its State provides Session,
// Token and Lost.
type lease struct {
	*leasing.State
	s *db
}

var _ history.Lease = (*lease)(nil)

// Store implements [history.Lease]: the store whose writes check this lease.
func (l *lease) Store() history.Store { return &Store{db: l.s, l: l} }

// Release implements [history.Lease]. It stops the renewals and, if the
// lease is still the session's current one, marks it released in the file
// (holder cleared, expiry now), so that the next Acquire succeeds at once.
// Releasing twice, or a lost lease, is a no-op.
func (l *lease) Release(ctx context.Context) error {
	l.s.leases.Remove(l)
	return l.release(ctx)
}

// release is Release without the store's bookkeeping.
func (l *lease) release(ctx context.Context) error {
	if !l.End() {
		return nil
	}
	err := l.s.c.submit(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(context.Background(), `
			UPDATE leases SET holder = '', expires_at = min(expires_at, ?)
			WHERE session_id = ? AND token = ?`, time.Now().UnixNano(), l.Session(), int64(l.Token()))
		return err
	})
	if errors.Is(err, history.ErrClosed) {
		return nil // the store closed meanwhile: the row expires
	}
	if err != nil {
		return fmt.Errorf("sqlite: release: %w", err)
	}
	return nil
}

// renewOnce runs one renewal statement (see leasing.State.Renew), as a
// write of the committer, batched with the others. It reports whether the
// lease was extended, to now plus the TTL.
func (l *lease) renewOnce(ctx context.Context) (bool, error) {
	var n int64
	err := l.s.c.submit(ctx, func(tx *sql.Tx) error {
		now := time.Now()
		res, err := tx.ExecContext(context.Background(), `
			UPDATE leases SET expires_at = ? WHERE session_id = ? AND token = ? AND expires_at > ?`,
			now.Add(l.s.ttl).UnixNano(), l.Session(), int64(l.Token()), now.UnixNano())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n == 1, err
}
