package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/segments"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// The writes and reads below have the same steps as those of the other SQL
// store; what they share is in history and history/internal (sqlstore,
// segments), and the package documentation of history/internal/sqlstore says
// why the rest, statement by statement, stays here.

const statusInProgress = string(history.StatusInProgress)

// The statements whose cost the design depends on; TestQueryPlans checks
// that SQLite runs them through the intended keys.
const (
	// whereActive selects the Active messages: a range of the primary key
	// from the watermark, never touching an archived row.
	whereActive = `WHERE session_id = ? AND pos >= ? ORDER BY pos`
	// whereRange selects the messages of an archived range.
	whereRange = `WHERE session_id = ? AND pos BETWEEN ? AND ? ORDER BY pos`
	// whereSpan selects the messages at positions from up to, not
	// including, to.
	whereSpan = `WHERE session_id = ? AND pos >= ? AND pos < ? ORDER BY pos`
	// selectPosOfSeq finds a message's position from its number through the
	// (session_id, seq) index.
	selectPosOfSeq = `SELECT pos FROM messages WHERE session_id = ? AND seq = ?`
	// selectInProgress lists in-progress compactions through a partial index.
	selectInProgress = `SELECT compact_id FROM compactions WHERE session_id = ? AND status = 'in_progress' ORDER BY pos`
	// selectTailID finds the newest message with an ID (bound as a BLOB)
	// among a link's own messages numbered from ? below ? (its unindexed
	// tail): a range of the (session_id, seq) index, newest first, each
	// row's ID read from its body (chain.go, find).
	selectTailID = `SELECT pos, seq FROM messages WHERE session_id = ? AND seq >= ? AND seq < ? AND ` + messageIDExpr + ` = ?
		ORDER BY seq DESC LIMIT 1`
	// selectIndexedID finds the newest indexed message with an ID (bound
	// as a BLOB) among a link's own messages at positions above ? up to ?:
	// one entry of message_ids, and its number through the primary key.
	selectIndexedID = `SELECT i.pos, m.seq FROM message_ids AS i JOIN messages AS m ON m.session_id = i.session_id AND m.pos = i.pos
		WHERE i.session_id = ? AND i.id = ? AND i.pos > ? AND i.pos <= ? ORDER BY i.pos DESC LIMIT 1`
	// insertMessageIDs writes the message_ids rows of a session's
	// messages numbered from ? below ? (indexer.go, indexRange).
	insertMessageIDs = `INSERT INTO message_ids (session_id, id, pos)
		SELECT session_id, ` + messageIDExpr + `, pos FROM messages WHERE session_id = ? AND seq >= ? AND seq < ?`
)

// state is the sessions row as a write transaction sees it after its version
// compare-and-swap.
type state struct {
	activeFrom   int64 // messages at pos >= activeFrom are Active
	archived     int64 // messages before the watermark
	messageCount int64 // messages ever appended; the next message's seq
	nextPos      int64 // the next timeline position
	num          int64 // the session's number (search.go)
	indexed      int64 // messages numbered from indexed on are not indexed yet (indexer.go)
}

// active is the number of Active messages.
func (st *state) active() int64 { return st.messageCount - st.archived }

// errNoChange makes write roll back a write that found nothing to do and
// return the caller's version.
var errNoChange = errors.New("no change")

// write runs fn as one write of the committer (see commit.go), after the
// lease check and the compare-and-swap that advance the session from
// version to version+1, its next position by advance and its message count
// by msgs. fn sees the state before the advance. Any error of fn undoes the
// whole write; the write is durable when write returns a nil error.
func (s *Store) write(ctx context.Context, op, id string, version uint64, advance, msgs int64, fn func(ctx context.Context, tx *sql.Tx, st *state) error) (uint64, error) {
	err := s.exec(ctx, op, id, true, func(ctx context.Context, tx *sql.Tx) error {
		st, err := s.swap(ctx, tx, op, id, version, advance, msgs)
		if err != nil {
			return err
		}
		return fn(ctx, tx, st)
	})
	switch {
	case errors.Is(err, errNoChange):
		return version, nil
	case err != nil:
		return 0, err
	}
	return version + 1, nil
}

// exec hands fn to the committer as one write on session id, with the
// lease check in the same transaction (first, unless swapped says that fn
// starts with swap, which checks the lease in its statement): a lease's view of the store
// writes only while its lease is the session's current, live one
// (history.ErrFenced otherwise); the store itself writes only to a session
// no live lease covers (a *history.LeaseError otherwise). The transaction
// is BEGIN IMMEDIATE and holds the file's write lock, so no Acquire can
// change the lease before it ends. fn gets the context its statements run
// under (not the caller's: an accepted write is not cancelled halfway).
func (s *Store) exec(ctx context.Context, op, id string, swapped bool, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := s.admit(ctx); err != nil {
		return err
	}
	if s.l != nil {
		if err := s.l.Writes(op, id); err != nil {
			return err
		}
	}
	err := s.c.submit(ctx, func(tx *sql.Tx) error {
		tctx := context.Background()
		if !swapped {
			if err := s.checkLease(tctx, tx, op, id); err != nil {
				return err
			}
		}
		return fn(tctx, tx)
	})
	var te *txError
	if errors.As(err, &te) {
		return s.busy(ctx, op, id, s.fail(ctx, op, te.err))
	}
	return err
}

// fenced runs its function as one write of the committer on session id
// (exec, with the lease check of every write): the writes without the
// version compare-and-swap (sqlstore's ReserveSeqs, RecordUsage,
// PutVectors).
func (s *Store) fenced(ctx context.Context, op, id string) func(func(txQuerier) error) error {
	return func(fn func(txQuerier) error) error {
		return s.exec(ctx, op, id, false, func(ctx context.Context, tx *sql.Tx) error {
			return fn(txQuerier{s: s, ctx: ctx, tx: tx, op: op})
		})
	}
}

// busy turns err, when it is SQLITE_BUSY (another connection, most likely
// another process, kept the file's write lock past the busy timeout), into
// a *history.BusyError for op on session id that names the session's lease
// holder as the readers see it (a write lock keeps no reader waiting).
// Other errors pass unchanged.
func (s *Store) busy(ctx context.Context, op, id string, err error) error {
	var e *sqlite.Error
	if !errors.As(err, &e) || e.Code()&0xff != sqlite3.SQLITE_BUSY {
		return err
	}
	be := &history.BusyError{Session: id, Op: op, Waited: s.busyTimeout}
	var expires int64
	if s.r.QueryRowContext(ctx, `SELECT holder, expires_at FROM leases WHERE session_id = ?`, id).Scan(&be.Holder, &expires) == nil && be.Holder != "" {
		be.Expires = time.Unix(0, expires).UTC()
	}
	return fmt.Errorf("sqlite: %s: another connection keeps the database file's write lock (a process stopped inside a write, or a tool with a transaction open): %w (%w)", op, be, err)
}

// swap is the version compare-and-swap every write starts with; it also
// advances the session's next position and message count, and checks the
// write's lease (see exec) in the same statement. When no row matches it
// tells a lease that forbids the write (checkLease's error) from a missing
// session (history.ErrNotFound) and a stale version (history.ErrConflict).
func (s *Store) swap(ctx context.Context, tx *sql.Tx, op, id string, version uint64, advance, msgs int64) (*state, error) {
	v := int64(-1) // no stored version matches
	if version <= math.MaxInt64 {
		v = int64(version)
	}
	var (
		st  state
		row *sql.Row
		now = time.Now().UnixNano()
	)
	if s.l == nil {
		row = tx.StmtContext(ctx, s.c.stmts.swapFree).QueryRowContext(ctx, now, advance, msgs, id, v)
	} else {
		row = tx.StmtContext(ctx, s.c.stmts.swapLeased).QueryRowContext(ctx, now, advance, msgs, id, v, int64(s.l.Token()))
	}
	err := row.Scan(&st.activeFrom, &st.archived, &st.messageCount, &st.nextPos, &st.num, &st.indexed)
	if err == nil {
		st.messageCount -= msgs
		st.nextPos -= advance
		return &st, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, s.fail(ctx, op, err)
	}
	if err := s.checkLease(ctx, tx, op, id); err != nil {
		return nil, err
	}
	var current uint64
	if err := s.row(ctx, tx, op, id, "version", &current); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: session %q is at version %d, not %d", history.ErrConflict, id, current, version)
}

// read runs fn in one read transaction on the read pool, so that all its
// statements see the same committed state.
func (s *Store) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	if err := s.admit(ctx); err != nil {
		return err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.fail(ctx, op, err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// isConstraint reports whether err is the SQLite constraint violation code.
func isConstraint(err error, code int) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code() == code
}

// Create implements [history.Store].
func (s *Store) Create(ctx context.Context, n history.NewSession) (*history.Snapshot, error) {
	if n.ID == "" {
		return nil, fmt.Errorf("%w: session has no ID", history.ErrInvalid)
	}
	if err := storekit.CheckConfig(n.Config); err != nil {
		return nil, err
	}
	err := s.exec(ctx, "create", n.ID, false, func(ctx context.Context, tx *sql.Tx) error {
		now := time.Now().UnixNano()
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, version, config, title, cwd, created_at, updated_at, num)
			VALUES (?, 1, ?, ?, ?, ?, ?, (SELECT COALESCE(max(num), 0) + 1 FROM sessions))`,
			n.ID, nullBytes(n.Config), n.Title, n.Cwd, now, now)
		return s.st.Conflict(ctx, "create", err, isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY), "%q", n.ID)
	})
	if err != nil {
		return nil, err
	}
	return &history.Snapshot{ID: n.ID, Version: 1, Config: slices.Clone(n.Config), Title: n.Title, Cwd: n.Cwd, Active: []history.Message{}}, nil
}

// nullBytes stores nil as NULL and anything else, even empty, as a BLOB.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// Load implements [history.Store]. It reads the sessions row, the messages
// from the watermark on and the in-progress compactions in one read
// transaction; its cost grows with Active only.
func (s *Store) Load(ctx context.Context, id string) (*history.Snapshot, error) {
	if s.raw != nil {
		return s.loadRaw(ctx, id)
	}
	snap := &history.Snapshot{ID: id}
	err := s.read(ctx, "load", func(tx *sql.Tx) error {
		var (
			activeFrom, count int64
			config            []byte
		)
		err := tx.QueryRowContext(ctx, selectLoad, id).
			Scan(&snap.Version, &config, &snap.Summary, &activeFrom, &snap.Archived, &snap.Title, &snap.Cwd, &snap.NextPosition, &count, (*seqColumn)(&snap.LastSeq), &snap.LogCovers,
				&snap.ForkOf, &snap.ForkAt, &snap.ForkPosition)
		if err := s.found(ctx, "load", id, err); err != nil {
			return err
		}
		snap.Config = config
		snap.Title = defaultTitle(snap.Title)
		if snap.ForkOf == "" {
			snap.ForkPosition = 0
			if _, snap.Active, err = s.scan(ctx, tx, "load", false, int(count-int64(snap.Archived)), whereActive, id, activeFrom); err != nil {
				return err
			}
		} else if snap.Active, err = s.forkActive(txQuerier{s: s, ctx: ctx, tx: tx, op: "load"}, id, activeFrom, count-snap.Archived); err != nil {
			return err
		}
		snap.Interrupted, err = s.strings(ctx, tx, "load", selectInProgress, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// selectLoad reads what Load returns of the sessions row.
const selectLoad = `SELECT version, config, summary, active_from, archived, ` + titleColumn + `, cwd, next_pos, message_count, last_seq, log_covers, COALESCE(fork_of, ''), fork_at, fork_pos FROM sessions WHERE id = ?`

// loadRaw is Load through the store's raw readers (rawread.go): the same
// statements in one read transaction, each row's body copied once.
func (s *Store) loadRaw(ctx context.Context, id string) (*history.Snapshot, error) {
	const op = "load"
	if err := s.admit(ctx); err != nil {
		return nil, err
	}
	snap := &history.Snapshot{ID: id}
	err := s.raw.read(ctx, func(r *rawReader) error {
		row, err := r.stmt(selectLoad, id)
		if err != nil {
			return err
		}
		defer row.reset()
		switch ok, err := row.step(); {
		case err != nil:
			return err
		case !ok:
			return sql.ErrNoRows
		}
		var activeFrom, count int64
		snap.Version = uint64(row.int64(0))
		snap.Config = row.bytes(1)
		snap.Summary = row.text(2)
		activeFrom, snap.Archived = row.int64(3), row.int64(4)
		snap.Title, snap.Cwd = defaultTitle(row.text(5)), row.text(6)
		snap.NextPosition, count = row.int64(7), row.int64(8)
		seq := row.int64(9)
		if seq < 0 {
			return fmt.Errorf("sequence number column holds %d", seq)
		}
		snap.LastSeq, snap.LogCovers = uint64(seq), row.int64(10)
		if snap.ForkOf = row.text(11); snap.ForkOf != "" {
			snap.ForkAt, snap.ForkPosition = row.text(12), row.int64(13)
			snap.Active, err = s.forkActive(rawQuerier{s: s, ctx: ctx, r: r, op: op}, id, activeFrom, count-snap.Archived)
			if err != nil {
				return err
			}
			snap.Interrupted, err = rawStrings(r, selectInProgress, id)
			return err
		}

		msgs, err := r.stmt(`SELECT `+activeColumns+` FROM messages `+whereActive, id, activeFrom)
		if err != nil {
			return err
		}
		defer msgs.reset()
		snap.Active = make([]history.Message, 0, max(count-snap.Archived, 0))
		for n := 1; ; n++ {
			ok, err := msgs.step()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			snap.Active = append(snap.Active, history.Message{})
			if err := decodeText(msgs.text(0), &snap.Active[len(snap.Active)-1]); err != nil {
				return err
			}
		}
		snap.Interrupted, err = rawStrings(r, selectInProgress, id)
		return err
	})
	if err := s.found(ctx, op, id, err); err != nil {
		return nil, err
	}
	return snap, nil
}

// rawStrings reads a one-column query of text through r.
func rawStrings(r *rawReader, query string, args ...any) ([]string, error) {
	st, err := r.stmt(query, args...)
	if err != nil {
		return nil, err
	}
	defer st.reset()
	var out []string
	for {
		switch ok, err := st.step(); {
		case err != nil:
			return nil, err
		case !ok:
			return out, nil
		}
		out = append(out, st.text(0))
	}
}

// messages reads the messages selected by where (a WHERE and ORDER BY
// clause over the messages table).
func (s *Store) messages(ctx context.Context, tx *sql.Tx, op, where string, args ...any) ([]history.Message, error) {
	_, msgs, err := s.scan(ctx, tx, op, false, 0, where, args...)
	return msgs, err
}

// positioned is messages with the timeline position of each message.
func (s *Store) positioned(ctx context.Context, tx *sql.Tx, op, where string, args ...any) ([]int64, []history.Message, error) {
	return s.scan(ctx, tx, op, true, 0, where, args...)
}

// scan reads the messages selected by where, and their positions if
// withPos; expect is how many there should be (a capacity hint).
func (s *Store) scan(ctx context.Context, tx *sql.Tx, op string, withPos bool, expect int, where string, args ...any) ([]int64, []history.Message, error) {
	return scanIn(txQuerier{s: s, ctx: ctx, tx: tx, op: op}, withPos, expect, where, args...)
}

// maxExpect bounds the capacity a read of a range of positions makes for
// its messages before it reads them.
const maxExpect = 1 << 16

// scanIn is scan through q.
func scanIn(q querier, withPos bool, expect int, where string, args ...any) ([]int64, []history.Message, error) {
	return scanAppend(q, withPos, nil, make([]history.Message, 0, max(expect, 0)), where, args...)
}

// scanAppend is scanIn appending to positions (withPos) and msgs.
func scanAppend(q querier, withPos bool, positions []int64, msgs []history.Message, where string, args ...any) ([]int64, []history.Message, error) {
	var (
		pos     int64
		body    string         // the driver's string: the message's fields share it
		dest    = []any{&body} // one for all the rows (no allocation a row)
		columns = activeColumns
	)
	if withPos {
		columns, dest = messageColumns, []any{&pos, &body}
		if positions == nil {
			positions = make([]int64, 0, cap(msgs)-len(msgs))
		}
	}
	err := q.query(`SELECT `+columns+` FROM messages `+where, args, func(rows rowScanner) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		msgs = append(msgs, history.Message{})
		if err := decodeText(body, &msgs[len(msgs)-1]); err != nil {
			return err // the caller drops msgs
		}
		if withPos {
			positions = append(positions, pos)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return positions, msgs, nil
}

// each runs query in tx and calls scan for every row of its result; its
// errors are wrapped for op.
func (s *Store) each(ctx context.Context, tx *sql.Tx, op, query string, args []any, scan func(rows *sql.Rows) error) error {
	return sqlstore.Query(func() (*sql.Rows, error) { return tx.QueryContext(ctx, query, args...) },
		func(rows *sql.Rows) { _ = rows.Close() }, scan, func(err error) error { return s.fail(ctx, op, err) })
}

// collect reads the rows of a query as values, each as read makes it from
// its row (sqlstore.Collect).
func collect[T any](q querier, query string, args []any, read func(rows rowScanner) (T, error)) ([]T, error) {
	return sqlstore.Collect(func(scan func(rowScanner) error) error { return q.query(query, args, scan) }, read)
}

// strings reads a one-column query of text.
func (s *Store) strings(ctx context.Context, tx *sql.Tx, op, query string, args ...any) ([]string, error) {
	return collect(txQuerier{s: s, ctx: ctx, tx: tx, op: op}, query, args, func(rows rowScanner) (string, error) {
		var v string
		if err := rows.Scan(&v); err != nil {
			return "", err
		}
		return v, nil
	})
}

// Append implements [history.Store]. Each message takes the next timeline
// position and the next message number.
func (s *Store) Append(ctx context.Context, id string, version uint64, msgs []history.Message, usage ...history.UsageRecord) (uint64, error) {
	if err := storekit.CheckAppend(msgs, usage); err != nil {
		return 0, err
	}
	rows, err := encodeMessages(msgs)
	if err != nil {
		return 0, err
	}
	n := int64(len(rows))
	return s.write(ctx, "append", id, version, n, n, func(ctx context.Context, tx *sql.Tx, st *state) error {
		stmt := tx.StmtContext(ctx, s.c.stmts.insertMessage)
		pos, seq := st.nextPos, st.messageCount
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, id, pos, seq, r.body); err != nil {
				return s.fail(ctx, "append", err)
			}
			pos++
			seq++
		}
		if err := s.recordUsage(ctx, tx, "append", id, usage); err != nil {
			return err
		}
		return s.afterAppend(ctx, tx, id, st, seq)
	})
}

// SetConfig implements [history.Store].
func (s *Store) SetConfig(ctx context.Context, id string, version uint64, config json.RawMessage) (uint64, error) {
	if err := storekit.CheckConfig(config); err != nil {
		return 0, err
	}
	return s.write(ctx, "set config", id, version, 0, 0, func(ctx context.Context, tx *sql.Tx, _ *state) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET config = ? WHERE id = ?`, nullBytes(config), id); err != nil {
			return s.fail(ctx, "set config", err)
		}
		return nil
	})
}

// RecordConfig implements [history.Writer]: the configuration and
// the record of its change in one write transaction; the record takes the
// next timeline position.
func (s *Store) RecordConfig(ctx context.Context, id string, version uint64, c history.ConfigChange) (uint64, *history.ConfigRecord, error) {
	const op = "record config"
	return sqlstore.Record(storekit.CheckConfigChange(&c), &c.At, encodeTime, func(at sql.NullInt64, rec **history.ConfigRecord) (uint64, error) {
		return s.write(ctx, op, id, version, 1, 0, func(ctx context.Context, tx *sql.Tx, st *state) error {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET config = ? WHERE id = ?`, nullBytes(c.Config), id); err != nil {
				return s.fail(ctx, op, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO configs (session_id, pos, at, data) VALUES (?, ?, ?, ?)`, id, st.nextPos, at, []byte(c.Data)); err != nil {
				return s.fail(ctx, op, err)
			}
			*rec = &history.ConfigRecord{Data: slices.Clone(c.Data), At: decodeTime(at), Position: st.nextPos}
			return nil
		})
	})
}

// configs reads a session's configuration records in timeline order.
func configs(q querier, id string, from, to int64) ([]history.ConfigRecord, error) {
	return collect(q, `SELECT pos, at, data FROM configs WHERE session_id = ? AND pos >= ? AND pos < ? ORDER BY pos`, []any{id, from, to}, func(rows rowScanner) (history.ConfigRecord, error) {
		var (
			r  history.ConfigRecord
			at sql.NullInt64
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
	if err := storekit.CheckBegin(&rec); err != nil {
		return 0, err
	}
	started, err := encodeTime(rec.StartedAt)
	if err != nil {
		return 0, err
	}
	finished := sql.NullInt64{}
	if rec.Status != history.StatusInProgress {
		finished = started
	}
	return s.write(ctx, "begin compaction", id, version, 1, 0, func(ctx context.Context, tx *sql.Tx, st *state) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO compactions (session_id, compact_id, pos, status, trigger_kind, instructions, started_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			id, rec.CompactID, st.nextPos, string(rec.Status), rec.Trigger, rec.Instructions, started, finished)
		return s.st.Conflict(ctx, "begin compaction", err, isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY), "compaction %q is already recorded", rec.CompactID)
	})
}

// inProgress reads an in-progress compaction inside a write transaction; any
// other state fails with history.ErrInvalid.
func (s *Store) inProgress(ctx context.Context, tx *sql.Tx, op, id, compactID string) (*history.CompactionRecord, error) {
	var (
		rec     = history.CompactionRecord{CompactID: compactID, Status: history.StatusInProgress}
		status  string
		started sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, `
		SELECT status, pos, trigger_kind, instructions, started_at FROM compactions
		WHERE session_id = ? AND compact_id = ?`, id, compactID).
		Scan(&status, &rec.Position, &rec.Trigger, &rec.Instructions, &started)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("%w: no compaction %q", history.ErrInvalid, compactID)
	case err != nil:
		return nil, s.fail(ctx, op, err)
	case status != statusInProgress:
		return nil, fmt.Errorf("%w: compaction %q is already %s", history.ErrInvalid, compactID, status)
	}
	rec.StartedAt = decodeTime(started)
	return &rec, nil
}

// FinishCompaction implements [history.Store].
func (s *Store) FinishCompaction(ctx context.Context, id string, version uint64, compactID string, status history.CompactionStatus, errText string, at time.Time) (uint64, error) {
	if err := storekit.CheckFinish(status); err != nil {
		return 0, err
	}
	finished, err := encodeTime(at)
	if err != nil {
		return 0, err
	}
	return s.write(ctx, "finish compaction", id, version, 0, 0, func(ctx context.Context, tx *sql.Tx, _ *state) error {
		if _, err := s.inProgress(ctx, tx, "finish compaction", id, compactID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			UPDATE compactions SET status = ?, error = ?, finished_at = ?
			WHERE session_id = ? AND compact_id = ?`, string(status), errText, finished, id, compactID)
		if err != nil {
			return s.fail(ctx, "finish compaction", err)
		}
		return nil
	})
}

// CommitCompaction implements [history.Store]. It is one write transaction
// of a fixed number of statements, whatever it archives: it moves the
// session's Active boundary, and reads none of the archived messages.
func (s *Store) CommitCompaction(ctx context.Context, id string, version uint64, c history.Commit) (uint64, *history.Segment, error) {
	return s.commit(ctx, id, version, c)
}

// lastArchived returns the position of the last message a commit of n
// messages archives: the message numbered archived+n-1, found through the
// (session_id, seq) index without reading any other row.
func (s *Store) lastArchived(ctx context.Context, tx *sql.Tx, id string, st *state, n int) (int64, error) {
	var pos int64
	seq := st.archived + int64(n) - 1
	c, err := chainOf(txQuerier{s: s, ctx: ctx, tx: tx, op: "commit compaction"}, id)
	if err != nil {
		return 0, s.fail(ctx, "commit compaction", err)
	}
	err = tx.QueryRowContext(ctx, selectPosOfSeq, c.bySeq(seq).id, seq).Scan(&pos)
	if err != nil {
		return 0, s.fail(ctx, "commit compaction", err)
	}
	return pos, nil
}

// commit is the write transaction of CommitCompaction.
func (s *Store) commit(ctx context.Context, id string, version uint64, c history.Commit) (uint64, *history.Segment, error) {
	const op = "commit compaction"
	at, err := encodeTime(c.At)
	if err != nil {
		return 0, nil, err
	}
	var seg *history.Segment
	v, err := s.write(ctx, op, id, version, 0, 0, func(ctx context.Context, tx *sql.Tx, st *state) error {
		if err := storekit.CheckCommit(&c, int(st.active())); err != nil {
			return err
		}
		rec, err := s.inProgress(ctx, tx, op, id, c.CompactID)
		if err != nil {
			return err
		}
		from := st.activeFrom
		to, err := s.lastArchived(ctx, tx, id, st, c.Archive)
		if err != nil {
			return err
		}
		missing, err := encodeMissing(c.Fidelity.Missing)
		if err != nil {
			return fmt.Errorf("%w: fidelity: %v", history.ErrInvalid, err)
		}
		files, err := sqlstore.FileStates(c.Files)
		if err != nil {
			return fmt.Errorf("%w: files: %v", history.ErrInvalid, err)
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE compactions SET status = 'completed', summary = ?, finished_at = ?,
				segment_id = ?, from_pos = ?, to_pos = ?, input_tokens = ?, output_tokens = ?,
				summary_provider = ?, summary_model = ?, context_before = ?, context_after = ?, commit_version = ?,
				fidelity_facts = ?, fidelity_kept = ?, fidelity_missing = ?, files = ?
			WHERE session_id = ? AND compact_id = ?`,
			c.Summary, at, c.SegmentID, from, to, c.InputTokens, c.OutputTokens,
			c.SummaryProvider, c.SummaryModel, c.ContextBefore, c.ContextAfter, int64(version)+1,
			c.Fidelity.Facts, c.Fidelity.Kept, missing, sql.NullString{String: string(files), Valid: files != nil}, id, c.CompactID)
		if err := s.st.Conflict(ctx, op, err, isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE), "segment %q is already recorded", c.SegmentID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE sessions SET active_from = ?, archived = archived + ?, summary = ? WHERE id = ?`,
			to+1, c.Archive, c.Summary, id)
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
	finished, err := encodeTime(at)
	if err != nil {
		return 0, nil, err
	}
	var ids []string
	v, err := s.write(ctx, "recover", id, version, 0, 0, func(ctx context.Context, tx *sql.Tx, _ *state) error {
		var err error
		ids, err = s.strings(ctx, tx, "recover", selectInProgress, id)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return errNoChange
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE compactions SET status = ?, error = ?, finished_at = ?
			WHERE session_id = ? AND status = 'in_progress'`,
			string(history.StatusFailed), history.InterruptedError, finished, id)
		if err != nil {
			return s.fail(ctx, "recover", err)
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
func (s *Store) exists(ctx context.Context, tx *sql.Tx, op, id string) (activeFrom int64, err error) {
	if err := s.row(ctx, tx, op, id, "active_from", &activeFrom); err != nil {
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
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		activeFrom, err := s.exists(ctx, tx, op, id)
		if err != nil {
			return err
		}
		var b segments.Builder
		err = s.each(ctx, tx, op, `
			SELECT segment_id, compact_id, trigger_kind, summary, instructions, finished_at, started_at,
				input_tokens, output_tokens, pos, from_pos, to_pos,
				summary_provider, summary_model, context_before, context_after, undo_id, undone_at,
				fidelity_facts, fidelity_kept, fidelity_missing, files
			FROM compactions WHERE session_id = ? AND segment_id IS NOT NULL
			ORDER BY COALESCE(commit_version, 0), from_pos`, []any{id}, func(rows *sql.Rows) error {
			var (
				g                        history.Segment
				created, started, undoAt sql.NullInt64
				sp                       storekit.SegmentSpan
				inTokens, outTokns       int64
				before, after            int64
				undoID, missing, files   sql.NullString
				facts, kept              int64
			)
			if err := rows.Scan(&g.ID, &g.CompactID, &g.Trigger, &g.Summary, &g.Instructions, &created, &started,
				&inTokens, &outTokns, &g.Position, &sp.From, &sp.To,
				&g.SummaryProvider, &g.SummaryModel, &before, &after, &undoID, &undoAt,
				&facts, &kept, &missing, &files); err != nil {
				return err
			}
			g.Fidelity.Facts, g.Fidelity.Kept = int(facts), int(kept)
			var err error
			if g.Fidelity.Missing, err = decodeMissing(missing); err != nil {
				return fmt.Errorf("segment %s: fidelity: %w", g.ID, err)
			}
			if files.Valid {
				if g.Files, err = sqlstore.FromFileStates([]byte(files.String)); err != nil {
					return fmt.Errorf("segment %s: files: %w", g.ID, err)
				}
			}
			g.CreatedAt, g.StartedAt = decodeTime(created), decodeTime(started)
			g.InputTokens, g.OutputTokens = int(inTokens), int(outTokns)
			g.ContextBefore, g.ContextAfter = int(before), int(after)
			if undoID.Valid {
				g.UndoID, g.UndoneAt = undoID.String, decodeTime(undoAt)
			}
			b.Add(g, sp, undoID.Valid)
			return nil
		})
		if err != nil || !messages {
			out = b.Headers()
			return err
		}
		q := txQuerier{s: s, ctx: ctx, tx: tx, op: op}
		c, err := chainOf(q, id)
		if err != nil {
			return s.fail(ctx, op, err)
		}
		out, err = b.Finish(func() ([]int64, []history.Message, error) {
			if c.forked() {
				return c.messages(q, true, 0, activeFrom, 0)
			}
			return s.positioned(ctx, tx, op, `WHERE session_id = ? AND pos < ? ORDER BY pos`, id, activeFrom)
		}, func(err error) error {
			return fmt.Errorf("sqlite: %s: session %q: %w", op, id, err)
		}, func(sp storekit.SegmentSpan) ([]history.Message, error) {
			if c.forked() {
				_, m, err := c.messages(q, false, sp.From, sp.To+1, int(sp.To+1-sp.From))
				return m, err
			}
			return s.messages(ctx, tx, op, whereRange, id, sp.From, sp.To)
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
	return sqlstore.Record(storekit.CheckUncompaction(&u), &u.At, encodeTime, func(at sql.NullInt64, rec **history.UncompactionRecord) (uint64, error) {
		// The undo takes the next timeline position (advance 1, no message).
		return s.write(ctx, op, id, version, 1, 0, func(ctx context.Context, tx *sql.Tx, st *state) error {
			r := history.UncompactionRecord{ID: u.ID, At: decodeTime(at), Position: st.nextPos}
			var from, to int64
			err := tx.QueryRowContext(ctx, `
				SELECT compact_id, segment_id, from_pos, to_pos FROM compactions
				WHERE session_id = ? AND segment_id IS NOT NULL AND undo_id IS NULL ORDER BY from_pos DESC LIMIT 1`, id).
				Scan(&r.CompactID, &r.SegmentID, &from, &to)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("%w: session %q", history.ErrNothingToUndo, id)
			case err != nil:
				return s.fail(ctx, op, err)
			}
			q := txQuerier{s: s, ctx: ctx, tx: tx, op: op}
			c, err := chainOf(q, id)
			if err != nil {
				return s.fail(ctx, op, err)
			}
			var restored int64
			if c.forked() {
				if restored, err = c.count(q, from, to); err != nil {
					return err
				}
			} else if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM messages `+whereRange, id, from, to).Scan(&restored); err != nil {
				return s.fail(ctx, op, err)
			}
			r.Restored = int(restored)
			var prev string
			err = tx.QueryRowContext(ctx, `
				SELECT summary FROM compactions
				WHERE session_id = ? AND segment_id IS NOT NULL AND undo_id IS NULL AND compact_id <> ? ORDER BY from_pos DESC LIMIT 1`, id, r.CompactID).
				Scan(&prev)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return s.fail(ctx, op, err)
			}
			_, err = tx.ExecContext(ctx, `
				UPDATE compactions SET undo_id = ?, undo_pos = ?, undone_at = ?, restored = ?
				WHERE session_id = ? AND compact_id = ?`, u.ID, st.nextPos, at, restored, id, r.CompactID)
			if err := s.st.Conflict(ctx, op, err, isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE), "uncompaction %q is already recorded", u.ID); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `
				UPDATE sessions SET active_from = ?, archived = archived - ?, summary = ? WHERE id = ?`,
				from, restored, prev, id)
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
// recordsOnly.
func (s *Store) entries(ctx context.Context, op, id string, from, to int64, recordsOnly bool) ([]history.Entry, error) {
	var out []history.Entry
	err := s.view(ctx, op, func(q querier) error {
		var activeFrom, nextPos int64
		err := queryRow(q, `SELECT active_from, next_pos FROM sessions WHERE id = ?`, []any{id}, &activeFrom, &nextPos)
		if err := s.found(ctx, op, id, err); err != nil {
			return err
		}
		var (
			positions []int64
			msgs      []history.Message
		)
		if !recordsOnly {
			c, err := chainOf(q, id)
			if err != nil {
				return err
			}
			if c.forked() {
				positions, msgs, err = c.messages(q, true, from, to, 0)
			} else {
				// Every position below next_pos holds one entry: at most
				// that many messages.
				positions, msgs, err = scanIn(q, true, int(min(min(to, nextPos)-from, maxExpect)), whereSpan, id, from, to)
			}
			if err != nil {
				return err
			}
		}
		recs, err := records(q, id, from, to)
		if err != nil {
			return err
		}
		undos, err := undos(q, id, from, to)
		if err != nil {
			return err
		}
		configs, err := configs(q, id, from, to)
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
func undos(q querier, id string, from, to int64) ([]history.UncompactionRecord, error) {
	return collect(q, `
		SELECT undo_id, segment_id, compact_id, restored, undone_at, undo_pos
		FROM compactions WHERE session_id = ? AND undo_id IS NOT NULL AND undo_pos >= ? AND undo_pos < ? ORDER BY undo_pos`, []any{id, from, to}, func(rows rowScanner) (history.UncompactionRecord, error) {
		var (
			r        history.UncompactionRecord
			restored int64
			at       sql.NullInt64
		)
		if err := rows.Scan(&r.ID, &r.SegmentID, &r.CompactID, &restored, &at, &r.Position); err != nil {
			return r, err
		}
		r.Restored, r.At = int(restored), decodeTime(at)
		return r, nil
	})
}

// records reads a session's compaction records in timeline order.
func records(q querier, id string, from, to int64) ([]history.CompactionRecord, error) {
	return collect(q, `
		SELECT compact_id, trigger_kind, instructions, status, summary, error, started_at, finished_at, pos
		FROM compactions WHERE session_id = ? AND pos >= ? AND pos < ? ORDER BY pos`, []any{id, from, to}, func(rows rowScanner) (history.CompactionRecord, error) {
		var (
			r                 history.CompactionRecord
			status            string
			started, finished sql.NullInt64
		)
		if err := rows.Scan(&r.CompactID, &r.Trigger, &r.Instructions, &status, &r.Summary, &r.Error, &started, &finished, &r.Position); err != nil {
			return r, err
		}
		r.Status = history.CompactionStatus(status)
		r.StartedAt, r.FinishedAt = decodeTime(started), decodeTime(finished)
		return r, nil
	})
}

// row reads columns of the sessions row of session id into dest; a session
// that does not exist is history.ErrNotFound (found).
func (s *Store) row(ctx context.Context, tx *sql.Tx, op, id, columns string, dest ...any) error {
	err := tx.QueryRowContext(ctx, `SELECT `+columns+` FROM sessions WHERE id = ?`, id).Scan(dest...)
	return s.found(ctx, op, id, err)
}

// found maps the error of reading the row of session id (sqlstore.Found).
func (s *Store) found(ctx context.Context, op, id string, err error) error {
	return s.st.Found(ctx, op, id, err, sql.ErrNoRows)
}
