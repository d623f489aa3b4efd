package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/leasing"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// Store is a [history.Store] and a [history.Leaser]
// backed by one SQLite file. It is safe for concurrent use; see the package
// documentation.
type Store struct {
	*db
	// l is set for the store as a lease's holder sees it (Lease.Store):
	// every write checks the lease in its transaction.
	l *lease
}

// db is the open file, shared by a Store and the fenced views of its leases.
type db struct {
	path   string
	w      *sql.DB     // the one writer connection
	c      *committer  // runs every write transaction of the Store and its leases
	r      *sql.DB     // read-only pool
	raw    *rawReaders // the readers of Load, Search, Window and replays (view.go); nil for a copy in memory (OpenReadOnly)
	st     *sqlstore.State
	ttl    time.Duration
	holder string
	// busyTimeout is how long a write waits for the file's write lock.
	busyTimeout time.Duration
	host        string // where this process runs (whereAmI), and
	pid         int    // this process, as the leases record them
	// checkable: a holder recorded with this host can be judged by its pid
	checkable bool

	leases leasing.Registry[*lease] // live leases of this store, released by Close

	// hooks are the package's tests' ways into the store (export_test.go);
	// all zero otherwise.
	hooks hooks
}

var (
	_ history.Store  = (*Store)(nil)
	_ history.Leaser = (*Store)(nil)
)

// Option configures [Open].
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	readConns   int
	ttl         time.Duration
	holder      string
	immutable   bool // OpenReadOnly only
	// migrations are the schema's migrations (tests open a file at an
	// older or a later schema with withMigrations, in export_test.go; the
	// package's list is never assigned, so stores opened at once all
	// migrate to one version).
	migrations []string
	hooks      hooks
}

// hooks are where the package's tests step into a store: only the options
// of export_test.go set them, so outside the tests they are all zero.
type hooks struct {
	// onBatch is called by the committer with the number of jobs of each
	// batch before it runs them.
	onBatch func(n int)
	// noIndex leaves appended messages out of the search index (for the
	// benchmark that weighs what the index costs).
	noIndex bool
	// indexBound, if set, replaces maxTail: an Append whose session's
	// unindexed tail grows past it indexes the tail (0: every Append
	// indexes its messages).
	indexBound *int
	// noIdleIndex: the committer never indexes in its idle time.
	noIdleIndex bool
	// noHurry: a search that reads a long tail does not ask the committer
	// to index it (Store.hurry).
	noHurry bool
	// onIndexed is called by the committer with the number of messages
	// each idle-time index transaction indexed, after it committed.
	onIndexed func(n int)
}

// newOptions is the options of Open and OpenReadOnly: the defaults, then
// opts.
func newOptions(opts []Option) options {
	o := options{busyTimeout: 5 * time.Second, readConns: max(4, runtime.GOMAXPROCS(0)), ttl: DefaultLeaseTTL, migrations: migrations}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// DefaultLeaseTTL is how long a lease lives without being renewed unless
// [WithLeaseTTL] says otherwise.
const DefaultLeaseTTL = leasing.DefaultTTL

// WithLeaseTTL sets how long a lease taken by [Store.Acquire] lives without
// renewal; the lease renews itself every third of it. A process that stops
// loses its leases at most this long after its last renewal, and only then
// can another process take its sessions. The default is [DefaultLeaseTTL].
func WithLeaseTTL(d time.Duration) Option {
	return func(o *options) { o.ttl = d }
}

// WithHolder sets the name under which the store's leases are recorded, the
// name a [history.LeaseError] of another Store reports. The default (and
// what an empty name means) is "<hostname>:<pid>:<n>", n counting the
// Stores this process opened, so that two Stores of one process are two
// holders.
func WithHolder(name string) Option {
	return func(o *options) { o.holder = name }
}

// opened counts the Stores of this process, for their default holder names.
var opened atomic.Int64

// defaultHolder is "<hostname>:<pid>:<n>".
func defaultHolder() string {
	return leasing.Hostname() + ":" + strconv.Itoa(os.Getpid()) + ":" + strconv.FormatInt(opened.Add(1), 10)
}

// WithBusyTimeout sets how long a statement waits for a lock held by another
// connection to the same file (another Store or process) before failing. The
// default is 5 seconds.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithReadConns sets the maximum number of connections of each of the
// store's two read pools: the raw readers of Load, Search, Window and a
// replay's reads, and the pool of every other read. The default is the
// larger of 4 and GOMAXPROCS.
func WithReadConns(n int) Option {
	return func(o *options) { o.readConns = n }
}

// ErrNewerSchema reports a file whose schema version is newer than this
// package knows; it was written by a newer sessionkit and is left untouched.
var ErrNewerSchema = errors.New("sqlite: the file's schema is newer than this version of sessionkit supports")

// Open opens the SQLite file at path, creating it (mode 0600) if it does not
// exist, and brings its schema up to date ([OpenReadOnly] does neither). The parent directory must exist.
// It fails with an error wrapping [ErrNewerSchema] if the file was written by
// a newer schema, and with one wrapping [ErrNotAStore] for a file that is
// not a SQLite database. Close the Store when done.
func Open(path string, opts ...Option) (*Store, error) {
	o := newOptions(opts)
	if path == "" {
		return nil, errors.New("sqlite: open: empty path")
	}
	if o.busyTimeout < 0 || o.readConns < 1 || o.ttl <= 0 {
		return nil, fmt.Errorf("sqlite: open: invalid options (busy timeout %v, read connections %d, lease TTL %v)", o.busyTimeout, o.readConns, o.ttl)
	}
	if o.holder == "" {
		o.holder = defaultHolder()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	if err := createFile(abs); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}

	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", o.busyTimeout.Milliseconds())
	w, err := sql.Open("sqlite", dsn(abs, busy, "_pragma=journal_mode(WAL)", "_pragma=synchronous(FULL)", "_pragma=foreign_keys(1)", "_txlock=immediate"))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(w, o.migrations); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", path, notADatabase(err)), w.Close())
	}

	r, err := sql.Open("sqlite", dsn(abs, busy, "_pragma=synchronous(FULL)", "_pragma=foreign_keys(1)", "_pragma=query_only(1)"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open: %w", err), w.Close())
	}
	r.SetMaxOpenConns(o.readConns)
	r.SetMaxIdleConns(o.readConns)
	raw, err := openRawReaders(dsn(abs, "mode=ro"), o.busyTimeout, o.readConns)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: open %s: %w", path, err), r.Close(), w.Close())
	}
	host, checkable := whereAmI()
	s := &Store{db: &db{
		path: abs, w: w, r: r, raw: raw, st: sqlstore.NewState("sqlite", true),
		ttl: o.ttl, holder: o.holder, busyTimeout: o.busyTimeout, host: host, pid: os.Getpid(), checkable: checkable,
		hooks: o.hooks,
	}}
	s.c = startCommitter(w, o.hooks.onBatch, s.indexIdle)
	return s, nil
}

// sqliteNotADB is SQLite's SQLITE_NOTADB: the file is not a database.
const sqliteNotADB = 26

// notADatabase is err, or for SQLite's "file is not a database (26)" an
// error wrapping [ErrNotAStore] that says so in words.
func notADatabase(err error) error {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteNotADB {
		return fmt.Errorf("%w: the file is not a SQLite database (a file of another program, or a damaged or encrypted one): give the path of a sessionkit store, or of a file that does not exist yet", ErrNotAStore)
	}
	return err
}

// createFile creates path with mode 0600 unless it exists. It never creates
// a directory, and refuses one (SQLite would only say "unable to open
// database file").
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory, not a SQLite file", path)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn builds a SQLite URI for the absolute path with the given driver
// parameters.
func dsn(path string, params ...string) string {
	// SQLite decodes %HH escapes in URI file names; escape the characters
	// that would end the path or start an escape.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	if !strings.HasPrefix(p, "/") { // a Windows volume: file:/C:/…
		p = "/" + p
	}
	return "file:" + p + "?" + strings.Join(params, "&")
}

// Close closes the store; every later call fails with [history.ErrClosed].
// It releases the store's leases first. Calls in progress finish first.
// Closing twice is a no-op, and so is closing a lease's view of the store
// (Lease.Store).
func (s *Store) Close() error {
	if s.l != nil || s.st.Close() {
		return nil
	}
	s.releaseAll()
	s.c.stop()
	var raw error
	if s.raw != nil {
		raw = s.raw.close()
	}
	if s.w == nil { // opened read-only
		return errors.Join(raw, s.r.Close())
	}
	return errors.Join(raw, s.r.Close(), s.w.Close())
}

// admit checks a call's context and the store before it starts.
func (s *Store) admit(ctx context.Context) error { return s.st.Admit(ctx) }

// fail wraps an error of the driver for op, reporting a closed store as
// [history.ErrClosed] (without database/sql's "sql: database is closed")
// and a finished context as the context's error.
func (s *Store) fail(ctx context.Context, op string, err error) error { return s.st.Fail(ctx, op, err) }
