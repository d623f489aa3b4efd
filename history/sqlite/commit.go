package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/chanbatch"
)

// Group commit. Every write of a Store (and of its leases' views) is a job
// handed to one committer goroutine per open file, which owns the writer
// connection's write transactions. The committer takes one job, then every
// job that is already waiting (callers that arrived while the previous
// batch was being made durable), and runs them in one BEGIN IMMEDIATE
// transaction, with one COMMIT and so one fsync for the batch. A job that
// fails fails alone: the batch is run again without it, each job then in a
// savepoint of its own (see run); the others commit. Every caller is
// answered only after the COMMIT returned, so nothing is acknowledged
// before it is durable. A job that is alone waits for nobody: a single
// writer pays only the handoff.
//
// The committer is the only goroutine that reads or writes a batch; callers
// and the committer share nothing but the job they hand over on an
// unbuffered channel and the channel the committer closes when the job is
// done.

// maxBatch bounds the jobs of one transaction, and so the latency a batch
// adds to its first job.
const maxBatch = 128

// job is one write handed to the committer.
type job struct {
	ctx  context.Context // the caller's: a job whose context ended is not run
	fn   func(tx *sql.Tx) error
	err  error         // set by the committer before done is closed
	ran  bool          // fn returned nil in the current transaction
	done chan struct{} // closed by the committer once err is final
}

// committer is the goroutine that runs the writes of one open file.
type committer struct {
	w       *sql.DB
	stmts   *statements   // prepared before the first batch; nil until then
	jobs    chan *job     // unbuffered: the handoff
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed by the committer when it returns

	// onBatch, if set, is called by the committer with the jobs of each
	// batch before it runs them (hooks.onBatch).
	onBatch func(n int)
	// readOnly: the store was opened read-only; every write fails
	readOnly bool

	// Background indexing (indexer.go), owned by the committer's
	// goroutine: the sessions whose appended messages are not all indexed,
	// whether they are still to be read from the file (at the first idle
	// time), and the work of an idle time.
	pending map[string]struct{}
	scan    bool
	idle    func(c *committer, urgent bool)
	// urgent holds the sessions a search found a long tail in (hurry),
	// which the committer indexes between its batches, idle or not.
	urgent map[string]struct{}
	hurry  chan string
}

// startCommitter starts the committer of the writer connection w, which
// calls onBatch, if not nil, before each batch, idle(c, false) after
// idleAfter without a write while it has sessions pending, urgent or still
// to scan for, and idle(c, true) before taking a batch while it has urgent
// sessions (so urgent work goes on with or without writes).
func startCommitter(w *sql.DB, onBatch func(n int), idle func(c *committer, urgent bool)) *committer {
	c := &committer{w: w, jobs: make(chan *job), quit: make(chan struct{}), stopped: make(chan struct{}), onBatch: onBatch,
		pending: map[string]struct{}{}, scan: true, idle: idle, urgent: map[string]struct{}{}, hurry: make(chan string, hurryQueue)}
	go c.loop()
	return c
}

// stop makes the committer return once its current batch is done, and
// waits for it. Callers that have not handed their job over fail with
// history.ErrClosed.
func (c *committer) stop() {
	close(c.quit)
	<-c.stopped
}

// submit hands fn to the committer and waits until it is durable or has
// failed. It fails without writing if ctx ends before the handoff or
// before the job's turn, and with history.ErrClosed if the store closes
// before the handoff. Once handed over, the job is waited for whatever
// happens to ctx, so that a nil error always means durable.
func (c *committer) submit(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if c.readOnly {
		return ErrReadOnly
	}
	j := &job{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case c.jobs <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.quit:
		return history.ErrClosed
	}
	<-j.done
	return j.err
}

// loop takes batches until stop.
func (c *committer) loop() {
	defer close(c.stopped)
	defer func() {
		if c.stmts != nil {
			_ = c.stmts.close()
		}
	}()
	batch := make([]*job, 0, maxBatch)
	timer := time.NewTimer(idleAfter)
	defer timer.Stop()
	for {
		if c.idle != nil && len(c.urgent) > 0 {
			c.idle(c, true)
		}
		var idle <-chan time.Time // nil: nothing to do when idle
		if c.idle != nil && (c.scan || len(c.pending) > 0 || len(c.urgent) > 0) {
			timer.Reset(idleAfter)
			idle = timer.C
		}
		select {
		case j := <-c.jobs:
			batch = append(batch[:0], j)
		case <-c.quit:
			return
		case <-idle:
			c.idle(c, false)
			continue
		case id := <-c.hurry:
			c.urgent[id] = struct{}{}
			continue
		}
		batch = chanbatch.Fill(batch, c.jobs, maxBatch)
		if c.onBatch != nil {
			c.onBatch(len(batch))
		}
		c.run(batch)
		for _, j := range batch {
			close(j.done)
		}
		clear(batch)
	}
}

// run runs batch in one transaction and sets the error of each job.
// Failures are rare (a stale version, a fenced lease, a constraint), so the
// first attempt runs the jobs back to back without savepoints; when one
// fails, the transaction is rolled back, that job gets its error, and the
// others run again in a new transaction, now each in a savepoint of its own
// so that a later failure undoes only its job. The same holds when the
// transaction itself breaks (SQLite rolls a whole transaction back on some
// errors, such as a full disk): the jobs that had not failed run again
// without the job that broke it.
func (c *committer) run(batch []*job) {
	guarded := false
	for len(batch) > 0 {
		broke, err := c.try(batch, guarded)
		if err == nil {
			return
		}
		if broke < 0 { // BEGIN failed: no job can be told apart
			for _, j := range batch {
				if j.err == nil {
					j.err = err
				}
			}
			return
		}
		batch[broke].err = err
		rest := make([]*job, 0, len(batch)-1)
		for _, j := range batch {
			if j.err == nil {
				rest = append(rest, j)
			}
		}
		batch, guarded = rest, true
	}
}

// try runs the jobs of batch whose error is not set in one transaction,
// each in a savepoint if guarded and there are several. On success it
// returns a nil error, the jobs that failed in their savepoint carrying
// their errors. Otherwise it has rolled the transaction back and returns
// the index of the job that failed or broke it with that job's error, or
// -1 if the transaction could not begin.
func (c *committer) try(batch []*job, guarded bool) (broke int, err error) {
	ctx := context.Background() // statements of an accepted job are not cancelled
	if c.stmts == nil {
		// Prepared at the first write, not at Open: the writer connection
		// is free here, and a file is only written at its latest schema.
		if c.stmts, err = prepare(c.w); err != nil {
			return -1, &txError{err}
		}
	}
	tx, err := c.w.BeginTx(ctx, nil)
	if err != nil {
		return -1, &txError{err}
	}
	savepoints := guarded && len(batch) > 1
	wrote := 0
	for i, j := range batch {
		j.ran = false
		if j.err != nil {
			continue
		}
		if err := j.ctx.Err(); err != nil {
			j.err = err
			continue
		}
		if !savepoints {
			if ferr := j.fn(tx); ferr != nil {
				_ = tx.Rollback()
				return i, ferr
			}
			j.ran = true
			wrote++
			continue
		}
		if _, err := tx.StmtContext(ctx, c.stmts.savepoint).ExecContext(ctx); err != nil {
			_ = tx.Rollback()
			return i, &txError{err}
		}
		if ferr := j.fn(tx); ferr != nil {
			if _, err := tx.StmtContext(ctx, c.stmts.rollbackTo).ExecContext(ctx); err != nil {
				_ = tx.Rollback()
				return i, ferr
			}
			j.err = ferr
		} else {
			j.ran = true
			wrote++
		}
		if _, err := tx.StmtContext(ctx, c.stmts.release).ExecContext(ctx); err != nil {
			_ = tx.Rollback()
			if j.err == nil {
				return i, &txError{err}
			}
			return i, j.err
		}
	}
	if wrote == 0 {
		_ = tx.Rollback()
		return 0, nil
	}
	if err := tx.Commit(); err != nil {
		for _, j := range batch {
			if j.ran {
				j.err = &txError{err}
			}
		}
	}
	return 0, nil
}

// txError is an error of the batch's own statements (BEGIN, SAVEPOINT,
// RELEASE, COMMIT), which the write that gets it wraps for its operation.
type txError struct{ err error }

func (e *txError) Error() string { return e.err.Error() }
func (e *txError) Unwrap() error { return e.err }

// statements are the writer connection's prepared statements: the ones
// every write runs, prepared once for the life of the store. Only the
// committer uses them (the jobs' functions run on it).
type statements struct {
	savepoint, rollbackTo, release *sql.Stmt
	leaseLive, leaseToken          *sql.Stmt
	swapFree, swapLeased           *sql.Stmt
	insertMessage, indexMessage    *sql.Stmt
}

// prepare prepares the statements on w.
func prepare(w *sql.DB) (*statements, error) {
	var (
		st  statements
		err error
	)
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&st.savepoint, `SAVEPOINT w`},
		{&st.rollbackTo, `ROLLBACK TO w`},
		{&st.release, `RELEASE w`},
		{&st.leaseLive, `SELECT expires_at > ? FROM leases WHERE session_id = ?`},
		{&st.leaseToken, `SELECT token, expires_at > ? FROM leases WHERE session_id = ?`},
		// The version compare-and-swap with the lease check of the write in
		// the same statement: ?1 now, ?2 and ?3 the advance of the position
		// and message counters, ?4 the session, ?5 its version, ?6 the
		// lease's token.
		{&st.swapFree, `
			UPDATE sessions SET version = version + 1, updated_at = ?1, next_pos = next_pos + ?2, message_count = message_count + ?3
			WHERE id = ?4 AND version = ?5
				AND NOT EXISTS (SELECT 1 FROM leases WHERE session_id = ?4 AND expires_at > ?1)
			RETURNING active_from, archived, message_count, next_pos, num, indexed`},
		{&st.swapLeased, `
			UPDATE sessions SET version = version + 1, updated_at = ?1, next_pos = next_pos + ?2, message_count = message_count + ?3
			WHERE id = ?4 AND version = ?5
				AND EXISTS (SELECT 1 FROM leases WHERE session_id = ?4 AND token = ?6 AND expires_at > ?1)
			RETURNING active_from, archived, message_count, next_pos, num, indexed`},
		{&st.insertMessage, `
			INSERT INTO messages (session_id, pos, seq, body) VALUES (?, ?, ?, ?)`},
		{&st.indexMessage, `
			INSERT INTO message_fts (rowid, text, tool, id, role, pos) VALUES (?, ?, ?, ?, ?, ?)`},
	} {
		if *p.stmt, err = w.Prepare(p.q); err != nil {
			return nil, errors.Join(fmt.Errorf("prepare: %w", err), st.close())
		}
	}
	return &st, nil
}

// close closes the prepared statements.
func (st *statements) close() error {
	var errs []error
	for _, s := range []*sql.Stmt{st.savepoint, st.rollbackTo, st.release, st.leaseLive, st.leaseToken, st.swapFree, st.swapLeased, st.insertMessage, st.indexMessage} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
