package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// The writes and reads below have the same steps as those of the other SQL
// store; what they share is in history and history/internal (sqlstore,
// segments), and the package documentation of history/internal/sqlstore says
// why the rest, statement by statement, stays here.

// The statements whose cost the design depends on; TestQueryPlans checks
// that PostgreSQL runs them through the intended indexes.
const (
	// whereActive selects the Active messages: a range of the primary key
	// from the watermark, never touching an archived row.
	whereActive = `WHERE session_id = $1 AND pos >= $2 ORDER BY pos`
	// selectPosOfSeq finds a message's position from its number through the
	// (session_id, seq) index.
	selectPosOfSeq = `SELECT pos FROM messages WHERE session_id = $1 AND seq = $2`
	// selectInProgress lists in-progress compactions through a partial index.
	selectInProgress = `SELECT compact_id FROM compactions WHERE session_id = $1 AND status = 'in_progress' ORDER BY pos`
)

// The statements of the version compare-and-swap and the lease checks that
// open every write transaction.
const (
	// swapSQL advances the session's version if it is the caller's, and
	// reserves $3 timeline positions and $4 message numbers for the write.
	// It returns the counters as they were before the reservation.
	swapSQL = `
		UPDATE sessions SET version = version + 1, next_pos = next_pos + $3, message_count = message_count + $4, updated_at = ` + nowNanos + `
		WHERE id = $1 AND version = $2
		RETURNING active_from, archived, message_count - $4, next_pos - $3, fork_of IS NOT NULL`
	// checkToken reads the session's lease for a fenced write. FOR SHARE
	// keeps an Acquire that would take the lease over (an UPDATE of the row)
	// waiting until the write has committed or rolled back.
	checkToken = `SELECT token, expires_at > now() FROM leases WHERE session_id = $1 FOR SHARE`
	// checkLive finds a live lease of anyone for an unfenced write.
	checkLive = `SELECT holder, expires_at FROM leases WHERE session_id = $1 AND expires_at > now()`
	// nowNanos is the database's clock in Unix nanoseconds (microsecond
	// precision), the time of a session's creation and writes.
	nowNanos = `(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`
)

// state is the sessions row as a write transaction sees it after its version
// compare-and-swap, before the positions it reserved.
type state struct {
	activeFrom   int64 // messages at pos >= activeFrom are Active
	archived     int64 // messages before the watermark
	messageCount int64 // messages appended before this write; the first new seq
	nextPos      int64 // the first timeline position this write may use
	forked       bool  // the session is a fork (chain.go)
}

// chain is the chain of the session of st when it is a fork, nil
// otherwise.
func (s *Store) chain(ctx context.Context, tx pgx.Tx, op, id string, st *state) (chain, error) {
	if !st.forked {
		return nil, nil
	}
	return s.chainOf(ctx, tx, op, id)
}

// active is the number of Active messages.
func (st *state) active() int64 { return st.messageCount - st.archived }

// reserve is how many timeline positions and message numbers a write takes.
type reserve struct{ pos, msgs int64 }

// errNoChange makes write roll back a transaction that found nothing to do
// and return the caller's version.
var errNoChange = errors.New("no change")

// rollback ends tx if it is still open. A context that is done makes pgx
// close the connection instead, which ends the transaction too.
func rollback(ctx context.Context, tx pgx.Tx) { _ = tx.Rollback(ctx) }

// write runs fn in one READ COMMITTED transaction after the checks every
// write starts with: the lease check of the store's lease (none for the
// store itself) and the compare-and-swap that advances the session from version to
// version+1. Any error rolls the whole transaction back.
//
// READ COMMITTED suffices: the compare-and-swap locks the sessions row, and
// every row a write reads belongs to that session, so no other writer can
// change them until the transaction ends. A concurrent writer of the same
// version waits for the row lock and then finds the version changed.
func (s *Store) write(ctx context.Context, op, id string, version uint64, r reserve, fn func(tx pgx.Tx, st *state) error) (uint64, error) {
	err := s.inTx(ctx, op, id, func(tx pgx.Tx) error {
		st, err := s.swap(ctx, tx, op, id, version, r)
		if err != nil {
			return err
		}
		return fn(tx, st)
	})
	switch {
	case errors.Is(err, errNoChange):
		return version, nil
	case err != nil:
		return 0, err
	}
	return version + 1, nil
}

// inTx runs fn in one write transaction of session id and commits it; any
// error of fn rolls it back. The store of a lease (Lease.Store) writes only
// to the lease's session (history.ErrInvalid otherwise), and only while
// the lease is not known to be lost (history.ErrFenced); fn checks the
// lease again in the transaction.
func (s *Store) inTx(ctx context.Context, op, id string, fn func(tx pgx.Tx) error) error {
	if err := s.admit(ctx); err != nil {
		return err
	}
	if s.l != nil {
		if err := s.l.Writes(op, id); err != nil {
			return err
		}
	}
	return s.inTxOf(ctx, op, id, false, fn)
}

// begin is the start of a transaction of the store: READ COMMITTED
// read-write for a write; for a read, REPEATABLE READ, READ ONLY, so that
// all its statements see the same committed state (under READ COMMITTED
// each statement would see its own, and a Load during a commit could read
// the watermark before the commit and the messages after it). Either sets
// the store's bounds (txBounds) at once.
func (s *Store) begin(read bool) pgx.TxOptions {
	if read {
		return pgx.TxOptions{BeginQuery: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; " + s.bounds}
	}
	return pgx.TxOptions{BeginQuery: "BEGIN; " + s.bounds}
}

// inTxOf is where every transaction of a call begins and ends: it runs fn
// in a write transaction, or a read one (read), about session id ("" for
// none) and commits it. Its waits are bounded (begin, txBounds); a lock
// wait that lock_timeout ended comes back as a *history.BusyError (busy).
func (s *Store) inTxOf(ctx context.Context, op, id string, read bool, fn func(tx pgx.Tx) error) error {
	if err := s.admit(ctx); err != nil {
		return err
	}
	tx, err := s.pool.BeginTx(ctx, s.begin(read))
	if err != nil {
		return s.fail(ctx, op, err)
	}
	defer rollback(ctx, tx)
	if err := fn(tx); err != nil {
		return s.busy(ctx, op, id, err)
	}
	if s.hooks.beforeCommit != nil && !read {
		s.hooks.beforeCommit(op)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.busy(ctx, op, id, s.fail(ctx, op, err))
	}
	return nil
}

// lockNotAvailable is PostgreSQL's SQLSTATE of a lock wait that
// lock_timeout ended.
const lockNotAvailable = "55P03"

// isLockTimeout reports whether err is a lock wait that lock_timeout ended.
func isLockTimeout(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == lockNotAvailable
}

// holderLookup bounds busy's read of the lease holder: one row by its key,
// which waits for no lock, so the bound is only for a stalled server. It
// is not the lock timeout, which a store may set far shorter than a read
// takes on a loaded machine (the holder was then missing from the error).
const holderLookup = 2 * time.Second

// busy turns err, when it is a lock wait that lock_timeout ended, into a
// *history.BusyError for op on session id that names the session's lease
// holder, read afterwards without waiting for any lock (a plain SELECT
// takes none that a row lock blocks), within holderLookup however short
// the lock timeout. Other errors, and one busy already turned (for the
// session whose row the wait was for), pass unchanged.
func (s *Store) busy(ctx context.Context, op, id string, err error) error {
	var turned *history.BusyError
	if !isLockTimeout(err) || errors.As(err, &turned) {
		return err
	}
	be := &history.BusyError{Session: id, Op: op, Waited: s.lockTimeout}
	if id != "" {
		rctx, cancel := context.WithTimeout(ctx, max(s.lockTimeout, holderLookup))
		defer cancel()
		var expires time.Time
		if s.pool.QueryRow(rctx, `SELECT holder, expires_at FROM leases WHERE session_id = $1`, bin(id)).Scan(&be.Holder, &expires) == nil && be.Holder != "" {
			be.Expires = expires.UTC()
		}
	}
	return fmt.Errorf("postgres: %s: %w (%w)", op, be, err)
}

// swap sends, in one round trip, the statements every write starts with:
// for a fenced write (the store of a lease) the lease check and then the
// version compare-and-swap; for an unfenced write (the store itself) the
// compare-and-swap and then the check that no live lease covers the
// session. When the compare-and-swap
// matches no row it tells a missing session (history.ErrNotFound) from a
// stale version (history.ErrConflict).
//
// Lock order: a fenced write locks the lease row (FOR SHARE) and then the
// sessions row; Acquire locks the lease row and then (FOR SHARE) the
// sessions row; an unfenced write locks the sessions row and reads the
// lease without locking it. No two of them wait for each other in a cycle.
func (s *Store) swap(ctx context.Context, tx pgx.Tx, op, id string, version uint64, r reserve) (*state, error) {
	v := int64(-1) // no stored version matches
	if version <= math.MaxInt64 {
		v = int64(version)
	}
	key := bin(id)
	b := &pgx.Batch{}
	if s.l != nil {
		b.Queue(checkToken, key)
	}
	b.Queue(swapSQL, key, v, r.pos, r.msgs)
	if s.l == nil {
		b.Queue(checkLive, key)
	}
	st, swapped, err := func() (*state, bool, error) {
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if s.l != nil {
			if err := s.l.check(ctx, op, br.QueryRow()); err != nil {
				return nil, false, err
			}
		}
		var st state
		err := br.QueryRow().Scan(&st.activeFrom, &st.archived, &st.messageCount, &st.nextPos, &st.forked)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, s.fail(ctx, op, err)
		}
		swapped := err == nil
		if s.l == nil {
			if err := s.checkUnleased(ctx, op, id, br.QueryRow()); err != nil {
				return nil, false, err
			}
		}
		if err := br.Close(); err != nil {
			return nil, false, s.fail(ctx, op, err)
		}
		return &st, swapped, nil
	}()
	if err != nil || swapped {
		return st, err
	}
	var current uint64
	err = tx.QueryRow(ctx, `SELECT version FROM sessions WHERE id = $1`, key).Scan(&current)
	if err := s.found(ctx, op, id, err); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: session %q is at version %d, not %d", history.ErrConflict, id, current, version)
}

// checkLease is the lease check of a write that does not swap, first in
// its transaction: the store of a lease writes only while its lease is the
// session's current, live one (lease.check, history.ErrFenced otherwise);
// the store itself writes only to a session no live lease covers
// (checkUnleased, a *history.LeaseError otherwise).
func (s *Store) checkLease(ctx context.Context, tx pgx.Tx, op, id string) error {
	if s.l != nil {
		return s.l.check(ctx, op, tx.QueryRow(ctx, checkToken, bin(id)))
	}
	return s.checkUnleased(ctx, op, id, tx.QueryRow(ctx, checkLive, bin(id)))
}

// fenced runs its function in one write transaction of session id (inTx)
// after the lease check of every write (checkLease): the writes without
// the version compare-and-swap (sqlstore's ReserveSeqs, RecordUsage,
// PutVectors, LogEvents).
func (s *Store) fenced(ctx context.Context, op, id string) func(func(pgx.Tx) error) error {
	return func(fn func(pgx.Tx) error) error {
		return s.inTx(ctx, op, id, func(tx pgx.Tx) error {
			if err := s.checkLease(ctx, tx, op, id); err != nil {
				return err
			}
			return fn(tx)
		})
	}
}

// checkUnleased scans the result of checkLive: a live lease of anyone makes
// an unfenced write fail with a *history.LeaseError.
func (s *Store) checkUnleased(ctx context.Context, op, id string, row pgx.Row) error {
	var (
		holder  string
		expires time.Time
	)
	err := row.Scan(&holder, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return s.fail(ctx, op, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, &history.LeaseError{Session: id, Holder: holder, Expires: expires.UTC()})
}

// read runs fn in one read transaction (begin) about session id ("" for
// none).
func (s *Store) read(ctx context.Context, op, id string, fn func(tx pgx.Tx) error) error {
	return s.inTxOf(ctx, op, id, true, fn)
}

// Create implements [history.Store].
func (s *Store) Create(ctx context.Context, n history.NewSession) (*history.Snapshot, error) {
	const op = "create"
	if n.ID == "" {
		return nil, fmt.Errorf("%w: session has no ID", history.ErrInvalid)
	}
	if err := storekit.CheckConfig(n.Config); err != nil {
		return nil, err
	}
	key := bin(n.ID)
	b := &pgx.Batch{}
	if s.l != nil {
		b.Queue(checkToken, key)
	}
	b.Queue(`INSERT INTO sessions (id, version, config, title, cwd, created_at, updated_at)
		VALUES ($1, 1, $2, $3, $4, `+nowNanos+`, `+nowNanos+`) ON CONFLICT (id) DO NOTHING`,
		key, nullable(n.Config), bin(n.Title), bin(n.Cwd))
	if s.l == nil {
		b.Queue(checkLive, key)
	}
	err := s.inTx(ctx, op, n.ID, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if s.l != nil {
			if err := s.l.check(ctx, op, br.QueryRow()); err != nil {
				return err
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return s.fail(ctx, op, err)
		}
		if s.l == nil {
			if err := s.checkUnleased(ctx, op, n.ID, br.QueryRow()); err != nil {
				return err
			}
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("%w: %q", history.ErrExists, n.ID)
		}
		if err := br.Close(); err != nil {
			return s.fail(ctx, op, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &history.Snapshot{ID: n.ID, Version: 1, Config: slices.Clone(n.Config), Title: n.Title, Cwd: n.Cwd, Active: []history.Message{}}, nil
}

// Load implements [history.Store]. It reads the sessions row, the messages
// from the watermark on and the in-progress compactions in one read
// transaction; its cost grows with Active only.
func (s *Store) Load(ctx context.Context, id string) (*history.Snapshot, error) {
	const op = "load"
	snap := &history.Snapshot{ID: id}
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		var (
			activeFrom, lastSeq         int64
			config, summary, title, cwd []byte
			forkOf, forkAt              []byte
			forkPos                     int64
		)
		err := tx.QueryRow(ctx, `SELECT version, config, summary, active_from, archived, `+titleColumn+`, cwd, next_pos, last_seq, log_covers,
				fork_of, fork_at, fork_pos FROM sessions WHERE id = $1`, bin(id)).
			Scan(&snap.Version, &config, &summary, &activeFrom, &snap.Archived, &title, &cwd, &snap.NextPosition, &lastSeq, &snap.LogCovers,
				&forkOf, &forkAt, &forkPos)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		snap.Config, snap.Summary = config, string(summary)
		snap.Title, snap.Cwd = defaultTitle(title), string(cwd)
		snap.LastSeq = uint64(lastSeq)
		if forkOf != nil {
			snap.ForkOf, snap.ForkAt, snap.ForkPosition = string(forkOf), string(forkAt), forkPos
			snap.Active, snap.Interrupted, err = s.forkActive(ctx, tx, op, id, activeFrom)
			return err
		}
		if _, snap.Active, err = s.messages(ctx, tx, op, whereActive, bin(id), activeFrom); err != nil {
			return err
		}
		snap.Interrupted, err = s.strings(ctx, tx, op, selectInProgress, bin(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// forkActive reads the Active messages of fork id from the watermark
// activeFrom on, along its chain, and its in-progress compactions: the
// reads of each link and of the compactions in one batch.
func (s *Store) forkActive(ctx context.Context, tx pgx.Tx, op, id string, activeFrom int64) ([]history.Message, []string, error) {
	c, err := s.chainOf(ctx, tx, op, id)
	if err != nil {
		return nil, nil, err
	}
	b := &pgx.Batch{}
	n := c.queueMessages(b, activeFrom, math.MaxInt64)
	b.Queue(selectInProgress, bin(id))
	br := tx.SendBatch(ctx, b)
	defer func() { _ = br.Close() }()
	_, active, err := s.readMessages(ctx, br, op, n)
	if err != nil {
		return nil, nil, err
	}
	var interrupted []string
	err = s.eachOf(ctx, op, func() (pgx.Rows, error) { return br.Query() }, func(rows pgx.Rows) error {
		var v []byte
		err := rows.Scan(&v)
		interrupted = append(interrupted, string(v))
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, s.fail(ctx, op, err)
	}
	return active, interrupted, nil
}

// messages reads the messages selected by where (a WHERE and ORDER BY
// clause over the messages table), with the timeline position of each.
func (s *Store) messages(ctx context.Context, tx pgx.Tx, op, where string, args ...any) ([]int64, []history.Message, error) {
	var (
		positions []int64
		msgs      = []history.Message{}
	)
	err := s.each(ctx, tx, op, `SELECT `+messageColumns+` FROM messages `+where, args, func(rows pgx.Rows) error {
		pos, m, err := scanMessage(rows)
		if err != nil {
			return err
		}
		positions = append(positions, pos)
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return positions, msgs, nil
}

// each runs query in tx and calls scan for every row of its result; its
// errors are wrapped for op.
func (s *Store) each(ctx context.Context, tx pgx.Tx, op, query string, args []any, scan func(rows pgx.Rows) error) error {
	return s.eachOf(ctx, op, func() (pgx.Rows, error) { return tx.Query(ctx, query, args...) }, scan)
}

// sessionRows reads the rows of query in one read transaction of session
// id, once the session is known to exist (history.ErrNotFound otherwise):
// each a value as read makes it from its row (sqlstore.Collect), nil for
// no rows.
func sessionRows[T any](ctx context.Context, s *Store, op, id, query string, args []any, read func(rows pgx.Rows) (T, error)) ([]T, error) {
	var out []T
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		if _, err := s.exists(ctx, tx, op, id); err != nil {
			return err
		}
		var err error
		out, err = sqlstore.Collect(func(scan func(pgx.Rows) error) error { return s.each(ctx, tx, op, query, args, scan) }, read)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachOf calls scan for every row that query returns (a statement's, or
// one of a batch's results); its errors are wrapped for op.
func (s *Store) eachOf(ctx context.Context, op string, query func() (pgx.Rows, error), scan func(rows pgx.Rows) error) error {
	return sqlstore.Query(query, pgx.Rows.Close, scan, func(err error) error { return s.fail(ctx, op, err) })
}

// collect reads the rows of a query as values, each as read makes it from
// its row (sqlstore.Collect).
func collect[T any](ctx context.Context, s *Store, tx pgx.Tx, op, query string, args []any, read func(rows pgx.Rows) (T, error)) ([]T, error) {
	return sqlstore.Collect(func(scan func(pgx.Rows) error) error { return s.each(ctx, tx, op, query, args, scan) }, read)
}

// strings reads a one-column query of bytea as strings.
func (s *Store) strings(ctx context.Context, tx pgx.Tx, op, query string, args ...any) ([]string, error) {
	return collect(ctx, s, tx, op, query, args, func(rows pgx.Rows) (string, error) {
		var v []byte
		if err := rows.Scan(&v); err != nil {
			return "", err
		}
		return string(v), nil
	})
}

// Append implements [history.Store]. Each message takes the next timeline
// position and the next message number; all of them go in with one INSERT.
func (s *Store) Append(ctx context.Context, id string, version uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	const op = "append"
	if err := storekit.CheckAppend(msgs, usage); err != nil {
		return 0, err
	}
	b, err := encodeMessages(msgs)
	if err != nil {
		return 0, err
	}
	n := int64(len(msgs))
	return s.write(ctx, op, id, version, reserve{pos: n, msgs: n}, func(tx pgx.Tx, st *state) error {
		tools, docs, err := s.searchDocs(ctx, tx, id, st, msgs)
		if err != nil {
			return err
		}
		// The messages and their postings (search.go), in one statement.
		_, err = tx.Exec(ctx, `
			WITH ins AS (
			INSERT INTO messages (session_id, pos, seq, id, role, text, tool_calls, tool_call_id, steer, created_at, tool_name, search, attachments, files, thoughts)
			SELECT $1, $2 + m.ord - 1, $3 + m.ord - 1, m.id, m.role, m.text, m.tool_calls, m.tool_call_id, m.steer, m.created_at,
				m.tool_name, to_tsvector('english', m.doc), m.attachments, m.files, m.thoughts
			FROM unnest($4::bytea[], $5::text[], $6::bytea[], $7::bytea[], $8::bytea[], $9::boolean[], $10::bigint[], $11::bytea[], $12::text[], $13::bytea[], $14::bytea[], $15::bytea[])
				WITH ORDINALITY AS m (id, role, text, tool_calls, tool_call_id, steer, created_at, tool_name, doc, attachments, files, thoughts, ord)
			RETURNING seq, search)
			INSERT INTO postings (seq, session_id, word) SELECT ins.seq, $1, w FROM ins, unnest(tsvector_to_array(ins.search)) AS w ORDER BY w COLLATE "C", ins.seq`,
			bin(id), st.nextPos, st.messageCount, b.ids, b.roles, b.texts, b.toolCalls, b.toolCallIDs, b.steers, b.createdAts, tools, docs, b.attachments, b.files, b.thoughts)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		return s.recordUsage(ctx, tx, op, id, usage)
	})
}

// SetConfig implements [history.Store].
func (s *Store) SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error) {
	const op = "set config"
	if err := storekit.CheckConfig(config); err != nil {
		return 0, err
	}
	return s.write(ctx, op, id, version, reserve{}, func(tx pgx.Tx, _ *state) error {
		if _, err := tx.Exec(ctx, `UPDATE sessions SET config = $2 WHERE id = $1`, bin(id), nullable(config)); err != nil {
			return s.fail(ctx, op, err)
		}
		return nil
	})
}

// RecordConfig implements [history.Writer]: the configuration and
// the record of its change in one write transaction; the record takes the
// next timeline position.
func (s *Store) RecordConfig(ctx context.Context, id string, version uint64, c history.ConfigChange) (uint64, *history.ConfigRecord, error) {
	const op = "record config"
	return sqlstore.Record(storekit.CheckConfigChange(&c), &c.At, encodeTime, func(at *int64, rec **history.ConfigRecord) (uint64, error) {
		return s.write(ctx, op, id, version, reserve{pos: 1}, func(tx pgx.Tx, st *state) error {
			if _, err := tx.Exec(ctx, `UPDATE sessions SET config = $2 WHERE id = $1`, bin(id), nullable(c.Config)); err != nil {
				return s.fail(ctx, op, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO configs (session_id, pos, at, data) VALUES ($1, $2, $3, $4)`, bin(id), st.nextPos, at, []byte(c.Data)); err != nil {
				return s.fail(ctx, op, err)
			}
			*rec = &history.ConfigRecord{Data: slices.Clone(c.Data), At: decodeTime(at), Position: st.nextPos}
			return nil
		})
	})
}

// configs reads a session's configuration records in timeline order.
func (s *Store) configs(ctx context.Context, tx pgx.Tx, op, id string, from, to int64) ([]history.ConfigRecord, error) {
	return collect(ctx, s, tx, op, `SELECT pos, at, data FROM configs WHERE session_id = $1 AND pos >= $2 AND pos < $3 ORDER BY pos`, []any{bin(id), from, to}, func(rows pgx.Rows) (history.ConfigRecord, error) {
		var (
			r  history.ConfigRecord
			at *int64
		)
		if err := rows.Scan(&r.Position, &at, &r.Data); err != nil {
			return r, err
		}
		r.At = decodeTime(at)
		return r, nil
	})
}

// BeginCompaction implements [history.Store]. The record takes the next
// timeline position.
func (s *Store) BeginCompaction(ctx context.Context, id string, version uint64, rec history.CompactionRecord) (uint64, error) {
	const op = "begin compaction"
	if err := storekit.CheckBegin(&rec); err != nil {
		return 0, err
	}
	started, err := encodeTime(rec.StartedAt)
	if err != nil {
		return 0, err
	}
	var finished *int64
	if rec.Status != history.StatusInProgress {
		finished = started
	}
	return s.write(ctx, op, id, version, reserve{pos: 1}, func(tx pgx.Tx, st *state) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO compactions (session_id, compact_id, pos, status, trigger_kind, instructions, started_at, finished_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (session_id, compact_id) DO NOTHING`,
			bin(id), bin(rec.CompactID), st.nextPos, string(rec.Status), rec.Trigger, bin(rec.Instructions), started, finished)
		switch {
		case err != nil:
			return s.fail(ctx, op, err)
		case tag.RowsAffected() == 0:
			return fmt.Errorf("%w: compaction %q is already recorded", history.ErrExists, rec.CompactID)
		}
		return nil
	})
}

// inProgress reads an in-progress compaction inside a write transaction; any
// other state fails with history.ErrInvalid.
func (s *Store) inProgress(ctx context.Context, tx pgx.Tx, op, id, compactID string) (*history.CompactionRecord, error) {
	var (
		rec          = history.CompactionRecord{CompactID: compactID, Status: history.StatusInProgress}
		status       string
		instructions []byte
		started      *int64
	)
	err := tx.QueryRow(ctx, `
		SELECT status, pos, trigger_kind, instructions, started_at FROM compactions
		WHERE session_id = $1 AND compact_id = $2`, bin(id), bin(compactID)).
		Scan(&status, &rec.Position, &rec.Trigger, &instructions, &started)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("%w: no compaction %q", history.ErrInvalid, compactID)
	case err != nil:
		return nil, s.fail(ctx, op, err)
	case status != string(history.StatusInProgress):
		return nil, fmt.Errorf("%w: compaction %q is already %s", history.ErrInvalid, compactID, status)
	}
	rec.Instructions, rec.StartedAt = string(instructions), decodeTime(started)
	return &rec, nil
}

// FinishCompaction implements [history.Store].
func (s *Store) FinishCompaction(ctx context.Context, id string, version uint64, compactID string, status history.CompactionStatus, errText string, at time.Time) (uint64, error) {
	const op = "finish compaction"
	if err := storekit.CheckFinish(status); err != nil {
		return 0, err
	}
	finished, err := encodeTime(at)
	if err != nil {
		return 0, err
	}
	return s.write(ctx, op, id, version, reserve{}, func(tx pgx.Tx, _ *state) error {
		if _, err := s.inProgress(ctx, tx, op, id, compactID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			UPDATE compactions SET status = $3, error = $4, finished_at = $5
			WHERE session_id = $1 AND compact_id = $2`, bin(id), bin(compactID), string(status), bin(errText), finished)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		return nil
	})
}

// CommitCompaction implements [history.Store]. It is one write transaction
// of a fixed number of statements, whatever it archives: it moves the
// session's Active boundary, and reads none of the archived messages.
func (s *Store) CommitCompaction(ctx context.Context, id string, version uint64, c history.Commit) (uint64, *history.Segment, error) {
	const op = "commit compaction"
	at, err := encodeTime(c.At)
	if err != nil {
		return 0, nil, err
	}
	var seg *history.Segment
	v, err := s.write(ctx, op, id, version, reserve{}, func(tx pgx.Tx, st *state) error {
		if err := storekit.CheckCommit(&c, int(st.active())); err != nil {
			return err
		}
		rec, err := s.inProgress(ctx, tx, op, id, c.CompactID)
		if err != nil {
			return err
		}
		// The last archived message is the one numbered archived+Archive-1,
		// found through the (session_id, seq) index without reading any
		// other row. The archived range is [active_from, its position].
		files, err := sqlstore.FileStates(c.Files)
		if err != nil {
			return fmt.Errorf("%w: files: %v", history.ErrInvalid, err)
		}
		from, seq := st.activeFrom, st.archived+int64(c.Archive)-1
		key := bin(id)
		if ch, err := s.chain(ctx, tx, op, id, st); err != nil {
			return err
		} else if ch != nil {
			key = ch.bySeq(seq)
		}
		var to int64
		if err := tx.QueryRow(ctx, selectPosOfSeq, key, seq).Scan(&to); err != nil {
			return s.fail(ctx, op, err)
		}
		_, err = tx.Exec(ctx, `
			UPDATE compactions SET status = 'completed', summary = $3, finished_at = $4,
				segment_id = $5, from_pos = $6, to_pos = $7, input_tokens = $8, output_tokens = $9,
				summary_provider = $10, summary_model = $11, context_before = $12, context_after = $13, commit_version = $14,
				fidelity_facts = $15, fidelity_kept = $16, fidelity_missing = $17, files = $18
			WHERE session_id = $1 AND compact_id = $2`,
			bin(id), bin(c.CompactID), bin(c.Summary), at, bin(c.SegmentID), from, to, int64(c.InputTokens), int64(c.OutputTokens),
			bin(c.SummaryProvider), bin(c.SummaryModel), int64(c.ContextBefore), int64(c.ContextAfter), int64(version)+1,
			int64(c.Fidelity.Facts), int64(c.Fidelity.Kept), encodeMissing(c.Fidelity.Missing), files)
		if err := s.st.Conflict(ctx, op, err, isUniqueViolation(err), "segment %q is already recorded", c.SegmentID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE sessions SET active_from = $2, archived = archived + $3, summary = $4 WHERE id = $1`,
			bin(id), to+1, int64(c.Archive), bin(c.Summary))
		if err != nil {
			return s.fail(ctx, op, err)
		}
		if err := s.recordUsage(ctx, tx, op, id, c.Usage); err != nil {
			return err
		}
		rec.FinishedAt = decodeTime(at)
		seg = storekit.CommittedSegment(&c, rec)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, seg, nil
}

// Recover implements [history.Store]. With no compaction in progress it
// writes nothing and returns version.
func (s *Store) Recover(ctx context.Context, id string, version uint64, at time.Time) (uint64, []string, error) {
	const op = "recover"
	finished, err := encodeTime(at)
	if err != nil {
		return 0, nil, err
	}
	var ids []string
	v, err := s.write(ctx, op, id, version, reserve{}, func(tx pgx.Tx, _ *state) error {
		var err error
		ids, err = s.strings(ctx, tx, op, selectInProgress, bin(id))
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return errNoChange
		}
		_, err = tx.Exec(ctx, `
			UPDATE compactions SET status = $2, error = $3, finished_at = $4
			WHERE session_id = $1 AND status = 'in_progress'`,
			bin(id), string(history.StatusFailed), bin(history.InterruptedError), finished)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return v, ids, nil
}

// exists fails with history.ErrNotFound unless the session exists, and
// returns its watermark.
func (s *Store) exists(ctx context.Context, tx pgx.Tx, op, id string) (activeFrom int64, err error) {
	err = tx.QueryRow(ctx, `SELECT active_from FROM sessions WHERE id = $1`, bin(id)).Scan(&activeFrom)
	if err := s.found(ctx, op, id, err); err != nil {
		return 0, err
	}
	return activeFrom, nil
}

// Segments implements [history.Store]. It reads the completed compactions
// and the messages before the watermark in one read transaction, and the
// messages of undone segments (Active again) by their ranges.
func (s *Store) Segments(ctx context.Context, id string) ([]history.Segment, error) {
	return s.segments(ctx, "segments", id, true)
}

// SegmentHeaders implements [history.Reader]: Segments' read of the
// completed compactions, without their messages.
func (s *Store) SegmentHeaders(ctx context.Context, id string) ([]history.Segment, error) {
	return s.segments(ctx, "segment headers", id, false)
}

// segments reads the session's Segments, with their messages when
// messages.
func (s *Store) segments(ctx context.Context, op, id string, messages bool) ([]history.Segment, error) {
	var out []history.Segment
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		activeFrom, c, err := s.session(ctx, tx, op, id)
		if err != nil {
			return err
		}
		var b segments.Builder
		err = s.each(ctx, tx, op, `
			SELECT segment_id, compact_id, trigger_kind, summary, instructions, finished_at, started_at,
				input_tokens, output_tokens, pos, from_pos, to_pos,
				summary_provider, summary_model, context_before, context_after, undo_id, undone_at,
				fidelity_facts, fidelity_kept, fidelity_missing, files
			FROM compactions WHERE session_id = $1 AND segment_id IS NOT NULL
			ORDER BY COALESCE(commit_version, 0), from_pos`, []any{bin(id)}, func(rows pgx.Rows) error {
			var (
				g                                 history.Segment
				segID, compactID, summary, instrs []byte
				sumProvider, sumModel, undoID     []byte
				created, started, undoneAt        *int64
				sp                                storekit.SegmentSpan
				inTokens, outTokens               int64
				before, after, facts, kept        int64
				missing                           [][]byte
				files                             []byte
			)
			if err := rows.Scan(&segID, &compactID, &g.Trigger, &summary, &instrs, &created, &started,
				&inTokens, &outTokens, &g.Position, &sp.From, &sp.To,
				&sumProvider, &sumModel, &before, &after, &undoID, &undoneAt,
				&facts, &kept, &missing, &files); err != nil {
				return err
			}
			g.Fidelity = history.Fidelity{Facts: int(facts), Kept: int(kept), Missing: decodeMissing(missing)}
			var err error
			if g.Files, err = sqlstore.FromFileStates(files); err != nil {
				return fmt.Errorf("segment %s: files: %w", g.ID, err)
			}
			g.ID, g.CompactID, g.Summary, g.Instructions = string(segID), string(compactID), string(summary), string(instrs)
			g.CreatedAt, g.StartedAt = decodeTime(created), decodeTime(started)
			g.InputTokens, g.OutputTokens = int(inTokens), int(outTokens)
			g.SummaryProvider, g.SummaryModel = string(sumProvider), string(sumModel)
			g.ContextBefore, g.ContextAfter = int(before), int(after)
			if undoID != nil {
				g.UndoID, g.UndoneAt = string(undoID), decodeTime(undoneAt)
			}
			b.Add(g, sp, undoID != nil)
			return nil
		})
		if err != nil || !messages {
			out = b.Headers()
			return err
		}
		out, err = b.Finish(func() ([]int64, []history.Message, error) {
			if c != nil {
				return s.chainMessages(ctx, tx, op, c, 0, activeFrom)
			}
			return s.messages(ctx, tx, op, `WHERE session_id = $1 AND pos < $2 ORDER BY pos`, bin(id), activeFrom)
		}, func(err error) error {
			return fmt.Errorf("postgres: %s: session %q: %w", op, id, err)
		}, func(sp storekit.SegmentSpan) ([]history.Message, error) {
			if c != nil {
				_, msgs, err := s.chainMessages(ctx, tx, op, c, sp.From, sp.To+1)
				return msgs, err
			}
			_, msgs, err := s.messages(ctx, tx, op, `WHERE session_id = $1 AND pos BETWEEN $2 AND $3 ORDER BY pos`, bin(id), sp.From, sp.To)
			return msgs, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []history.Segment{}
	}
	return out, nil
}

// Uncompact implements [history.Writer]: one write transaction that
// moves the watermark back to the first message of the newest standing
// segment, restores the summary of the one before it and marks it undone.
// It reads none of the messages (it counts the restored ones through the
// primary key).
func (s *Store) Uncompact(ctx context.Context, id string, version uint64, u history.Uncompaction) (uint64, *history.UncompactionRecord, error) {
	const op = "uncompact"
	return sqlstore.Record(storekit.CheckUncompaction(&u), &u.At, encodeTime, func(at *int64, rec **history.UncompactionRecord) (uint64, error) {
		return s.write(ctx, op, id, version, reserve{pos: 1}, func(tx pgx.Tx, st *state) error {
			r := history.UncompactionRecord{ID: u.ID, At: decodeTime(at), Position: st.nextPos}
			var (
				compactID, segID []byte
				from, to         int64
			)
			err := tx.QueryRow(ctx, `
				SELECT compact_id, segment_id, from_pos, to_pos FROM compactions
				WHERE session_id = $1 AND segment_id IS NOT NULL AND undo_id IS NULL ORDER BY from_pos DESC LIMIT 1`, bin(id)).
				Scan(&compactID, &segID, &from, &to)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return fmt.Errorf("%w: session %q", history.ErrNothingToUndo, id)
			case err != nil:
				return s.fail(ctx, op, err)
			}
			r.CompactID, r.SegmentID = string(compactID), string(segID)
			var restored int64
			c, err := s.chain(ctx, tx, op, id, st)
			if err != nil {
				return err
			}
			if c != nil {
				if restored, err = s.chainCount(ctx, tx, op, c, from, to); err != nil {
					return err
				}
			} else if err := tx.QueryRow(ctx, `SELECT count(*) FROM messages WHERE session_id = $1 AND pos BETWEEN $2 AND $3`, bin(id), from, to).Scan(&restored); err != nil {
				return s.fail(ctx, op, err)
			}
			r.Restored = int(restored)
			prev := []byte{}
			err = tx.QueryRow(ctx, `
				SELECT summary FROM compactions
				WHERE session_id = $1 AND segment_id IS NOT NULL AND undo_id IS NULL AND compact_id <> $2 ORDER BY from_pos DESC LIMIT 1`,
				bin(id), compactID).Scan(&prev)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return s.fail(ctx, op, err)
			}
			_, err = tx.Exec(ctx, `
				UPDATE compactions SET undo_id = $3, undo_pos = $4, undone_at = $5, restored = $6
				WHERE session_id = $1 AND compact_id = $2`, bin(id), compactID, bin(u.ID), st.nextPos, at, restored)
			if err := s.st.Conflict(ctx, op, err, isUniqueViolation(err), "uncompaction %q is already recorded", u.ID); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `
				UPDATE sessions SET active_from = $2, archived = archived - $3, summary = $4 WHERE id = $1`,
				bin(id), from, restored, prev)
			if err != nil {
				return s.fail(ctx, op, err)
			}
			*rec = &r
			return nil
		})
	})
}

// Timeline implements [history.Store]. It reads every message and
// compaction record of the session in one read transaction and merges them
// by position.
func (s *Store) Timeline(ctx context.Context, id string) ([]history.Entry, error) {
	return s.entries(ctx, "timeline", id, 0, math.MaxInt64, false)
}

// Entries implements [history.Reader]: each table is read over the
// range of its primary key (or position index) only.
func (s *Store) Entries(ctx context.Context, id string, q history.EntryQuery) ([]history.Entry, error) {
	to, err := storekit.CheckEntryQuery(q)
	if err != nil {
		return nil, err
	}
	return s.entries(ctx, "entries", id, q.From, to, q.Records)
}

// entries reads the timeline entries at positions from up to, not
// including, to, in one read transaction; without the messages when
// records.
func (s *Store) entries(ctx context.Context, op, id string, from, to int64, records bool) ([]history.Entry, error) {
	var out []history.Entry
	err := s.read(ctx, op, id, func(tx pgx.Tx) error {
		activeFrom, c, err := s.session(ctx, tx, op, id)
		if err != nil {
			return err
		}
		var (
			positions []int64
			msgs      []history.Message
		)
		switch {
		case records:
		case c != nil:
			positions, msgs, err = s.chainMessages(ctx, tx, op, c, from, to)
		default:
			positions, msgs, err = s.messages(ctx, tx, op, `WHERE session_id = $1 AND pos >= $2 AND pos < $3 ORDER BY pos`, bin(id), from, to)
		}
		if err != nil {
			return err
		}
		recs, err := s.records(ctx, tx, op, id, from, to)
		if err != nil {
			return err
		}
		undos, err := s.undos(ctx, tx, op, id, from, to)
		if err != nil {
			return err
		}
		configs, err := s.configs(ctx, tx, op, id, from, to)
		if err != nil {
			return err
		}
		out = storekit.MergeConfigs(storekit.MergeEntries(positions, msgs, recs, undos, activeFrom), configs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// undos reads a session's uncompaction records in timeline order.
func (s *Store) undos(ctx context.Context, tx pgx.Tx, op, id string, from, to int64) ([]history.UncompactionRecord, error) {
	return collect(ctx, s, tx, op, `
		SELECT undo_id, segment_id, compact_id, restored, undone_at, undo_pos
		FROM compactions WHERE session_id = $1 AND undo_id IS NOT NULL AND undo_pos >= $2 AND undo_pos < $3 ORDER BY undo_pos`, []any{bin(id), from, to}, func(rows pgx.Rows) (history.UncompactionRecord, error) {
		var (
			r                        history.UncompactionRecord
			undoID, segID, compactID []byte
			restored                 int64
			at                       *int64
		)
		if err := rows.Scan(&undoID, &segID, &compactID, &restored, &at, &r.Position); err != nil {
			return r, err
		}
		r.ID, r.SegmentID, r.CompactID = string(undoID), string(segID), string(compactID)
		r.Restored, r.At = int(restored), decodeTime(at)
		return r, nil
	})
}

// records reads a session's compaction records in timeline order.
func (s *Store) records(ctx context.Context, tx pgx.Tx, op, id string, from, to int64) ([]history.CompactionRecord, error) {
	return collect(ctx, s, tx, op, `
		SELECT compact_id, trigger_kind, instructions, status, summary, error, started_at, finished_at, pos
		FROM compactions WHERE session_id = $1 AND pos >= $2 AND pos < $3 ORDER BY pos`, []any{bin(id), from, to}, func(rows pgx.Rows) (history.CompactionRecord, error) {
		var (
			r                                     history.CompactionRecord
			status                                string
			compactID, instrs, summary, errorText []byte
			started, finished                     *int64
		)
		if err := rows.Scan(&compactID, &r.Trigger, &instrs, &status, &summary, &errorText, &started, &finished, &r.Position); err != nil {
			return r, err
		}
		r.CompactID, r.Instructions, r.Summary, r.Error = string(compactID), string(instrs), string(summary), string(errorText)
		r.Status = history.CompactionStatus(status)
		r.StartedAt, r.FinishedAt = decodeTime(started), decodeTime(finished)
		return r, nil
	})
}

// found maps the error of reading the row of session id (sqlstore.Found).
func (s *Store) found(ctx context.Context, op, id string, err error) error {
	return s.st.Found(ctx, op, id, err, pgx.ErrNoRows)
}
