package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	sqlite3 "modernc.org/sqlite/lib"
)

// The readers of Load. Load reads every Active message of a session: at
// 5,000 rows it is most of a reopen (docs/performance.md). Through
// database/sql and the driver each row costs the driver's connection mutex
// (taken around every column call; the driver opens every connection
// SQLITE_OPEN_FULLMUTEX), its boxing of the value as a driver.Value and
// database/sql's own locking. A raw reader calls SQLite's C interface, as
// the driver does, on a read-only connection of its own opened
// SQLITE_OPEN_NOMUTEX: it is used by one goroutine at a time (the one that
// took it from its pool), so SQLite need not lock it. Each body is copied
// once, out of SQLite's memory into the Go string the message's fields
// share, as the driver does.

// rawReaders is a store's pool of raw readers of its file: at most max
// are open, as [WithReadConns] bounds the store's other readers.
type rawReaders struct {
	uri   string        // the file's URI, with its mode=ro or immutable=1
	busy  int32         // busy timeout, milliseconds
	slots chan struct{} // one for each reader in use

	mu     sync.Mutex
	idle   []*rawReader
	closed bool
}

// openRawReaders returns the pool of readers of uri, with one reader open:
// the file is one SQLite can open.
func openRawReaders(uri string, busy time.Duration, max int) (*rawReaders, error) {
	p := &rawReaders{uri: uri, busy: int32(min(busy.Milliseconds(), 1<<31-1)), slots: make(chan struct{}, max)}
	r, err := p.get(context.Background())
	if err != nil {
		return nil, err
	}
	p.put(r, false)
	return p, nil
}

// get takes an idle reader or opens a new one, once fewer than max are in
// use.
func (p *rawReaders) get(ctx context.Context) (*rawReader, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, errReadersClosed
	}
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return r, nil
	}
	p.mu.Unlock()
	r, err := openRawReader(p.uri, p.busy)
	if err != nil {
		<-p.slots
	}
	return r, err
}

// put gives r back, or closes it if the pool is closed or r is broken.
func (p *rawReaders) put(r *rawReader, broken bool) {
	p.mu.Lock()
	if !broken && !p.closed {
		p.idle = append(p.idle, r)
		p.mu.Unlock()
		<-p.slots
		return
	}
	p.mu.Unlock()
	_ = r.close()
	<-p.slots
}

// close closes the idle readers; a reader in use is closed when it is put
// back.
func (p *rawReaders) close() error {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	for _, r := range idle {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}

var errReadersClosed = errors.New("the store's readers are closed")

// rawError is an error of SQLite's C interface: its result code and
// message, as the driver reports them.
type rawError struct {
	code int
	msg  string
}

func (e *rawError) Error() string { return fmt.Sprintf("%s (%d)", e.msg, e.code) }

// Code is the SQLite (extended) result code, as the driver's Error.Code.
func (e *rawError) Code() int { return e.code }

// rawReader is one read-only connection without SQLite's connection mutex:
// one goroutine at a time uses it.
type rawReader struct {
	tls   *libc.TLS
	db    uintptr
	stmts map[string]uintptr // prepared statements, by their SQL
}

// openRawReader opens a read-only connection to uri.
func openRawReader(uri string, busyMs int32) (*rawReader, error) {
	r := &rawReader{tls: libc.NewTLS(), stmts: map[string]uintptr{}}
	name, err := libc.CString(uri)
	if err != nil {
		r.tls.Close()
		return nil, err
	}
	defer libc.Xfree(r.tls, name)
	var rc int32
	r.db, rc = r.out(func(pdb uintptr) int32 {
		return sqlite3.Xsqlite3_open_v2(r.tls, name, pdb, sqlite3.SQLITE_OPEN_READONLY|sqlite3.SQLITE_OPEN_NOMUTEX|sqlite3.SQLITE_OPEN_URI, 0)
	})
	if rc != sqlite3.SQLITE_OK {
		err := r.err(rc)
		_ = r.close()
		return nil, err
	}
	sqlite3.Xsqlite3_extended_result_codes(r.tls, r.db, 1)
	if rc := sqlite3.Xsqlite3_busy_timeout(r.tls, r.db, busyMs); rc != sqlite3.SQLITE_OK {
		err := r.err(rc)
		_ = r.close()
		return nil, err
	}
	// The query planner's stability guarantee: a plan does not depend on
	// the values bound to its parameters. Without it, SQLite marks a
	// statement whose planning looked at a bound value to be prepared
	// again at its next step after a new binding, and its planner looks at
	// them for most of the store's reads (to compare a parameter with a
	// partial index's condition, for one; the queries of the FTS5 table
	// were marked too): that undid the statement cache below, and a search spent
	// about a tenth of its time preparing statements again
	// (docs/performance.md; TestRawStatementsStayPrepared). No read of the
	// store needs a bound value to get its plan (TestQueryPlans checks the
	// plans on these readers too).
	va := libc.NewVaList(int32(1), uintptr(0))
	rc = sqlite3.Xsqlite3_db_config(r.tls, r.db, sqlite3.SQLITE_DBCONFIG_ENABLE_QPSG, va)
	libc.Xfree(r.tls, va)
	if rc != sqlite3.SQLITE_OK {
		err := r.err(rc)
		_ = r.close()
		return nil, err
	}
	return r, nil
}

// out calls f with the address of a pointer out-parameter in SQLite's
// memory, and returns what f left there and f's result code.
func (r *rawReader) out(f func(pp uintptr) int32) (uintptr, int32) {
	pp := libc.Xmalloc(r.tls, types.Size_t(unsafe.Sizeof(uintptr(0))))
	if pp == 0 {
		return 0, sqlite3.SQLITE_NOMEM
	}
	defer libc.Xfree(r.tls, pp)
	*(*uintptr)(at(pp)) = 0
	rc := f(pp)
	return *(*uintptr)(at(pp)), rc
}

// at is address p of SQLite's memory (libc's heap, never Go's) as a
// pointer. Through the uintptr's own address, so that vet's check of
// uintptr conversions (meant for Go memory, which may move) is not needed.
func at(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// err is the error of result code rc, with the connection's message.
func (r *rawReader) err(rc int32) error {
	msg := libc.GoString(sqlite3.Xsqlite3_errstr(r.tls, rc))
	if r.db != 0 {
		if m := libc.GoString(sqlite3.Xsqlite3_errmsg(r.tls, r.db)); m != "" && m != msg {
			msg += ": " + m
		}
	}
	return &rawError{code: int(rc), msg: msg}
}

// close finalizes the statements and closes the connection.
func (r *rawReader) close() error {
	for _, p := range r.stmts {
		sqlite3.Xsqlite3_finalize(r.tls, p)
	}
	r.stmts = nil
	var err error
	if r.db != 0 {
		if rc := sqlite3.Xsqlite3_close_v2(r.tls, r.db); rc != sqlite3.SQLITE_OK {
			err = r.err(rc)
		}
		r.db = 0
	}
	r.tls.Close()
	return err
}

// stmt returns the prepared statement of query, reset and bound to args
// (strings, int64s, ints and byte slices).
func (r *rawReader) stmt(query string, args ...any) (rawStmt, error) {
	p, ok := r.stmts[query]
	if !ok {
		q, err := libc.CString(query)
		if err != nil {
			return rawStmt{}, err
		}
		var rc int32
		p, rc = r.out(func(pp uintptr) int32 { return sqlite3.Xsqlite3_prepare_v2(r.tls, r.db, q, -1, pp, 0) })
		libc.Xfree(r.tls, q)
		if rc != sqlite3.SQLITE_OK {
			return rawStmt{}, r.err(rc)
		}
		r.stmts[query] = p
	}
	s := rawStmt{r: r, p: p}
	for i, a := range args {
		var rc int32
		switch v := a.(type) {
		case string:
			rc = bind(s, int32(i+1), v, sqlite3.Xsqlite3_bind_text)
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(r.tls, p, int32(i+1), v)
		case int:
			rc = sqlite3.Xsqlite3_bind_int64(r.tls, p, int32(i+1), int64(v))
		case []byte:
			rc = bind(s, int32(i+1), v, sqlite3.Xsqlite3_bind_blob)
		default:
			return rawStmt{}, fmt.Errorf("sqlite: argument %d of type %T", i+1, a)
		}
		if rc != sqlite3.SQLITE_OK {
			return rawStmt{}, r.err(rc)
		}
	}
	return s, nil
}

// exec runs a statement without rows (BEGIN, ROLLBACK).
func (r *rawReader) exec(query string) error {
	s, err := r.stmt(query)
	if err != nil {
		return err
	}
	defer s.reset()
	_, err = s.step()
	return err
}

// rawStmt is a prepared statement of a rawReader, in use.
type rawStmt struct {
	r *rawReader
	p uintptr
}

// bind binds v to parameter i with f (sqlite3_bind_text or
// sqlite3_bind_blob); SQLite copies it (SQLITE_TRANSIENT).
func bind[T string | []byte](s rawStmt, i int32, v T, f func(*libc.TLS, uintptr, int32, uintptr, int32, uintptr) int32) int32 {
	p := libc.Xmalloc(s.r.tls, types.Size_t(max(len(v), 1))) // never NULL, for ""
	if p == 0 {
		return sqlite3.SQLITE_NOMEM
	}
	copy(unsafe.Slice((*byte)(at(p)), len(v)), v)
	rc := f(s.r.tls, s.p, i, p, int32(len(v)), ^uintptr(0)) // SQLITE_TRANSIENT
	libc.Xfree(s.r.tls, p)
	return rc
}

// step advances to the next row: true for a row, false when done.
func (s rawStmt) step() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(s.r.tls, s.p); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, s.r.err(rc)
	}
}

// reset makes the statement ready for its next use and clears its
// bindings.
func (s rawStmt) reset() {
	sqlite3.Xsqlite3_reset(s.r.tls, s.p)
	sqlite3.Xsqlite3_clear_bindings(s.r.tls, s.p)
}

// int64 is column i of the row as an integer.
func (s rawStmt) int64(i int32) int64 { return sqlite3.Xsqlite3_column_int64(s.r.tls, s.p, i) }

// mem is column i of the row in SQLite's memory, valid until the next
// step or reset: copy it out.
func (s rawStmt) mem(i int32) []byte {
	p := sqlite3.Xsqlite3_column_blob(s.r.tls, s.p, i)
	n := sqlite3.Xsqlite3_column_bytes(s.r.tls, s.p, i)
	if p == 0 || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(at(p)), n)
}

// text is column i of the row as a string: a copy of its bytes.
func (s rawStmt) text(i int32) string { return string(s.mem(i)) }

// bytes is column i of the row as a copy of its bytes, nil for NULL.
func (s rawStmt) bytes(i int32) []byte {
	if sqlite3.Xsqlite3_column_type(s.r.tls, s.p, i) == sqlite3.SQLITE_NULL {
		return nil
	}
	return append([]byte{}, s.mem(i)...)
}

// read runs fn in a read transaction of a raw reader: everything fn
// reads is of one snapshot of the file. ctx bounds the wait for a reader;
// fn checks it between rows.
func (p *rawReaders) read(ctx context.Context, fn func(r *rawReader) error) error {
	r, err := p.get(ctx)
	if err != nil {
		return err
	}
	if err := r.exec("BEGIN"); err != nil {
		p.put(r, true)
		return err
	}
	err = fn(r)
	if rerr := r.exec("ROLLBACK"); rerr != nil {
		p.put(r, true)
		return errors.Join(err, rerr)
	}
	p.put(r, false)
	return err
}
