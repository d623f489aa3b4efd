package postgres

import (
	"context"
	"encoding/json"
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

var _ history.ReservingLeaser = (*Store)(nil)

// AcquireReserving implements [history.ReservingLeaser]: Acquire, and in
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
	err := s.inTx(ctx, op, id, nil, func(tx pgx.Tx) error {
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
	l := &lease{s: s, State: leasing.New("postgres", id, uint64(token))}
	l.fenced = &fencedStore{l: l}
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
	s      *Store
	fenced *fencedStore
}

var _ history.Lease = (*lease)(nil)

// Store implements [history.Lease].
func (l *lease) Store() history.Store { return l.fenced }

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

// usable fails with history.ErrFenced if the lease is known to be lost or
// was released. A nil lease (the unfenced store) is always usable.
func (l *lease) usable(op string) error {
	if l == nil {
		return nil
	}
	return l.Usable(op)
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

// fencedStore is the store as a lease's holder sees it ([history.Lease]
// Store): reads are the store's; writes to the leased session check the
// lease in their own transaction; writes to other sessions fail.
type fencedStore struct{ l *lease }

var (
	_ history.Store          = (*fencedStore)(nil)
	_ history.Uncompacter    = (*fencedStore)(nil)
	_ history.ConfigRecorder = (*fencedStore)(nil)
	_ history.EventLog       = (*fencedStore)(nil)
	_ history.SeqReserver    = (*fencedStore)(nil)
	_ history.Searcher       = (*fencedStore)(nil)
)

// Search implements [history.Searcher]: a read, the store's.
func (f *fencedStore) Search(ctx context.Context, id string, q history.SearchQuery) (history.SearchPage, error) {
	return f.l.s.Search(ctx, id, q)
}

// mine fails with history.ErrInvalid for a write to another session.
func (f *fencedStore) mine(id string) error {
	if id != f.l.Session() {
		return fmt.Errorf("%w: the lease of session %q does not cover session %q", history.ErrInvalid, f.l.Session(), id)
	}
	return nil
}

// Create implements [history.Store].
func (f *fencedStore) Create(ctx context.Context, n history.NewSession) (*history.Snapshot, error) {
	if err := f.mine(n.ID); err != nil {
		return nil, err
	}
	return f.l.s.create(ctx, n, f.l)
}

// Load implements [history.Store].
func (f *fencedStore) Load(ctx context.Context, id string) (*history.Snapshot, error) {
	return f.l.s.Load(ctx, id)
}

// Append implements [history.Store].
func (f *fencedStore) Append(ctx context.Context, id string, version uint64, msgs []history.Message) (uint64, error) {
	if err := f.mine(id); err != nil {
		return 0, err
	}
	return f.l.s.append(ctx, id, version, msgs, f.l)
}

// SetConfig implements [history.Store].
func (f *fencedStore) SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error) {
	if err := f.mine(id); err != nil {
		return 0, err
	}
	return f.l.s.setConfig(ctx, id, version, config, f.l)
}

// RecordConfig implements [history.ConfigRecorder].
func (f *fencedStore) RecordConfig(ctx context.Context, id string, version uint64, c history.ConfigChange) (uint64, *history.ConfigRecord, error) {
	if err := f.mine(id); err != nil {
		return 0, nil, err
	}
	return f.l.s.recordConfig(ctx, id, version, c, f.l)
}

// BeginCompaction implements [history.Store].
func (f *fencedStore) BeginCompaction(ctx context.Context, id string, version uint64, rec history.CompactionRecord) (uint64, error) {
	if err := f.mine(id); err != nil {
		return 0, err
	}
	return f.l.s.beginCompaction(ctx, id, version, rec, f.l)
}

// FinishCompaction implements [history.Store].
func (f *fencedStore) FinishCompaction(ctx context.Context, id string, version uint64, compactID string, status history.CompactionStatus, errText string, at time.Time) (uint64, error) {
	if err := f.mine(id); err != nil {
		return 0, err
	}
	return f.l.s.finishCompaction(ctx, id, version, compactID, status, errText, at, f.l)
}

// CommitCompaction implements [history.Store].
func (f *fencedStore) CommitCompaction(ctx context.Context, id string, version uint64, c history.Commit) (uint64, *history.Segment, error) {
	if err := f.mine(id); err != nil {
		return 0, nil, err
	}
	return f.l.s.commit(ctx, id, version, c, f.l)
}

// Uncompact implements [history.Uncompacter].
func (f *fencedStore) Uncompact(ctx context.Context, id string, version uint64, u history.Uncompaction) (uint64, *history.UncompactionRecord, error) {
	if err := f.mine(id); err != nil {
		return 0, nil, err
	}
	return f.l.s.uncompact(ctx, id, version, u, f.l)
}

// Recover implements [history.Store].
func (f *fencedStore) Recover(ctx context.Context, id string, version uint64, at time.Time) (uint64, []string, error) {
	if err := f.mine(id); err != nil {
		return 0, nil, err
	}
	return f.l.s.recover(ctx, id, version, at, f.l)
}

// Segments implements [history.Store].
func (f *fencedStore) Segments(ctx context.Context, id string) ([]history.Segment, error) {
	return f.l.s.Segments(ctx, id)
}

// Timeline implements [history.Store].
func (f *fencedStore) Timeline(ctx context.Context, id string) ([]history.Entry, error) {
	return f.l.s.Timeline(ctx, id)
}

// LogEvents implements [history.EventLog].
func (f *fencedStore) LogEvents(ctx context.Context, id string, b history.EventBatch) error {
	if err := f.mine(id); err != nil {
		return err
	}
	return f.l.s.logEvents(ctx, id, b, f.l)
}

// ReserveSeqs implements [history.SeqReserver].
func (f *fencedStore) ReserveSeqs(ctx context.Context, id string, gap uint64) (history.SeqReservation, error) {
	if err := f.mine(id); err != nil {
		return history.SeqReservation{}, err
	}
	return f.l.s.reserve(ctx, id, gap, f.l)
}

// Events implements [history.EventLog].
func (f *fencedStore) Events(ctx context.Context, id string, after uint64, limit int) ([]history.LoggedEvent, error) {
	return f.l.s.Events(ctx, id, after, limit)
}
