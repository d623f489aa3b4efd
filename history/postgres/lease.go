package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/leasing"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// Acquire implements [history.Leaser]: it takes the lease of session id,
// which need not exist yet, for the store's TTL ([WithLeaseTTL]), and renews
// it in the background until it is released or lost. While another lease of
// the session is live, whoever holds it (another process, another Store or
// this one), Acquire fails at once with a *[history.LeaseError] naming its
// holder.
//
// A session's lease row is never deleted: taking a released or expired lease
// over increments its fencing token, so tokens of a session only grow.
// Expiry is judged by the database's clock. Before it returns, Acquire waits
// for unfenced writes of the session that are in flight, so a Load through
// the lease sees them.
func (s *Store) Acquire(ctx context.Context, id string) (history.Lease, error) {
	l, _, err := s.acquire(ctx, id, 0)
	return l, err
}

var _ history.Leaser = (*Store)(nil)

// AcquireReserving implements [history.Leaser]: Acquire, and in
// its transaction (after the lease row was taken, so only a taker reserves)
// the reservation of [Store.ReserveSeqs], whose row lock also waits for the
// unfenced writes in flight.
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
	// The lease cannot expire before the TTL has passed from here: the
	// database's now() is read later.
	start := time.Now()
	key := bin(id)
	var token int64
	err := s.inTxOf(ctx, op, id, false, func(tx pgx.Tx) error {
		var expires time.Time
		// A live lease is refused without taking its row's lock (the NOT
		// EXISTS reads the last committed row): its holder may be stopped
		// inside a write that holds the lock, until the server ends that
		// transaction (idleInTx). A lease that has expired, or none, is
		// taken through ON CONFLICT DO UPDATE, which locks the row and
		// checks the expiry again on its latest version; a lock that another
		// transaction keeps past lock_timeout is a *history.BusyError.
		err := tx.QueryRow(ctx, `
			INSERT INTO leases AS l (session_id, holder, token, expires_at)
			SELECT $1, $2, 1, now() + $3::float8 * interval '1 second'
			WHERE NOT EXISTS (SELECT 1 FROM leases WHERE session_id = $1 AND expires_at > now())
			ON CONFLICT (session_id) DO UPDATE
				SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at
				WHERE l.expires_at <= now()
			RETURNING token, expires_at`, key, s.holder, s.ttl.Seconds()).Scan(&token, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			var holder string
			if err := tx.QueryRow(ctx, `SELECT holder, expires_at FROM leases WHERE session_id = $1`, key).Scan(&holder, &expires); err != nil {
				return s.fail(ctx, op, err)
			}
			return fmt.Errorf("postgres: %s: %w", op, &history.LeaseError{Session: id, Holder: holder, Expires: expires.UTC()})
		}
		if err != nil {
			return s.fail(ctx, op, err)
		}
		// An unfenced write that changed the session before it could see
		// this lease holds the sessions row until it ends; wait for it (the
		// reservation's UPDATE waits as well).
		if gap == 0 {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR SHARE`, key); err != nil {
				return s.fail(ctx, op, err)
			}
			return nil
		}
		res, err = s.reserveSeqs(ctx, tx, op, key, gap)
		return err
	})
	if err != nil {
		return nil, history.SeqReservation{}, err
	}
	l := &lease{State: leasing.New("postgres", id, uint64(token)), s: s.db}
	if !s.leases.Add(l) { // closed meanwhile
		l.Stop()
		rctx, cancel := context.WithTimeout(context.Background(), closeReleaseTimeout)
		defer cancel()
		_ = l.releaseRow(rctx)
		return nil, history.SeqReservation{}, history.ErrClosed
	}
	go l.Renew(s.ttl, start.Add(s.ttl), l.renewOnce)
	return l, res, nil
}

// lease is a [history.Lease] of a [Store]. Its State provides Session,
// Token and Lost.
type lease struct {
	*leasing.State
	s *db
}

var _ history.Lease = (*lease)(nil)

// Store implements [history.Lease]: the store whose writes check this
// lease in their transactions and go to the lease's session only; its
// reads are the store's.
func (l *lease) Store() history.Store { return &Store{db: l.s, l: l} }

// Release implements [history.Lease]. It stops the renewals and, if the
// lease is still the session's current one, marks it released in the
// database (holder cleared, expiry now), so that the next Acquire succeeds
// at once. Releasing twice, or a lost lease, is a no-op. If the database
// cannot be reached the lease is released locally anyway (its writes fail
// with history.ErrFenced) and the error is returned; the row then expires
// after the TTL.
func (l *lease) Release(ctx context.Context) error {
	l.s.leases.Remove(l)
	return l.release(ctx)
}

// release is Release without the store's bookkeeping.
func (l *lease) release(ctx context.Context) error {
	if !l.End() {
		return nil
	}
	if err := l.releaseRow(ctx); err != nil {
		return l.s.fail(ctx, "release", err)
	}
	return nil
}

// releaseRow marks the lease row released if its token is still this
// lease's. LEAST keeps an expired row's expiry; the row is not live either
// way, as live means expires_at > now() in a later transaction.
func (l *lease) releaseRow(ctx context.Context) error {
	_, err := l.s.pool.Exec(ctx, `
		UPDATE leases SET holder = '', expires_at = LEAST(expires_at, now())
		WHERE session_id = $1 AND token = $2`, bin(l.Session()), int64(l.Token()))
	return err
}

// check scans the result of checkToken inside a fenced write: the lease row
// must carry this lease's token and be live by the database's clock.
// Otherwise the lease is lost (another holder took it, or it expired) and
// the write fails with history.ErrFenced.
func (l *lease) check(ctx context.Context, op string, row pgx.Row) error {
	var (
		token int64
		live  bool
	)
	err := row.Scan(&token, &live)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return l.s.fail(ctx, op, err)
	}
	return l.Check(op, err == nil, uint64(token), live)
}

// renewOnce runs one renewal statement (see leasing.State.Renew). It
// reports whether the lease was extended: by the database's clock, to its
// now() plus the TTL.
func (l *lease) renewOnce(ctx context.Context) (bool, error) {
	if h := l.s.hooks.renewal; h != nil {
		if err := h(l.Session()); err != nil {
			return false, err
		}
	}
	tag, err := l.s.pool.Exec(ctx, `
		UPDATE leases SET expires_at = now() + $3::float8 * interval '1 second'
		WHERE session_id = $1 AND token = $2 AND expires_at > now()`, bin(l.Session()), int64(l.Token()), l.s.ttl.Seconds())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}
