package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/leasing"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
)

// Store is a [history.Store] and a [history.Leaser] backed by a PostgreSQL
// database. It is safe for concurrent use, and any number of Stores, in one
// process or many, may share a database; see the package documentation.
type Store struct {
	*db
	// l is set for the store as a lease's holder sees it (Lease.Store):
	// it writes only to the lease's session, and every write checks the
	// lease in its transaction.
	l *lease
}

// db is the open database, shared by a Store and the stores of its leases.
type db struct {
	pool   *pgxpool.Pool
	url    string
	ttl    time.Duration
	holder string
	st     *sqlstore.State
	// lockTimeout is the lock_timeout of the store's transactions
	// (WithLockTimeout).
	lockTimeout time.Duration
	// bounds sets the bounds of every transaction of the store (txBounds).
	bounds string
	// hooks are the package's tests' ways into the store (WithHooks in
	// export_test.go); all nil otherwise.
	hooks hooks

	leases leasing.Registry[*lease] // live leases of this store, released by Close
	conns  conns                    // the pool's network connections, which Close may cut
}

var (
	_ history.Store  = (*Store)(nil)
	_ history.Leaser = (*Store)(nil)
)

// Option configures [Open].
type Option func(*options)

type options struct {
	ttl         time.Duration
	holder      string
	maxConns    int32
	lockTimeout time.Duration
	// migrations are the schema's migrations (tests open a database at an
	// older or a later schema with withMigrations, in export_test.go; the
	// package's list is never assigned, so stores opened at once all
	// migrate to one version).
	migrations []string
	hooks      hooks
}

// hooks are where the package's tests step into a store: only the options
// of export_test.go set them, so outside the tests every one is nil.
type hooks struct {
	// beforeCommit runs in every write transaction of inTx before it
	// commits, with the write's op (a holder that stops there).
	beforeCommit func(op string)
	// renewal runs before each renewal attempt of a lease of the store;
	// an error fails the attempt, as an unreachable database would.
	renewal func(session string) error
}

// DefaultLeaseTTL is how long a lease lives without being renewed unless
// [WithLeaseTTL] says otherwise.
const DefaultLeaseTTL = leasing.DefaultTTL

// WithLeaseTTL sets how long a lease taken by [Store.Acquire] lives without
// renewal; the lease renews itself every third of it. A process that stops
// (or cannot reach the database) loses its leases at most this long after
// its last renewal, and only then can another process take its sessions.
// The default is [DefaultLeaseTTL].
func WithLeaseTTL(d time.Duration) Option {
	return func(o *options) { o.ttl = d }
}

// WithHolder sets the name under which the store's leases are recorded, the
// name a [history.LeaseError] of another process reports. The default (and
// what an empty name means) is "<hostname>:<pid>".
func WithHolder(name string) Option {
	return func(o *options) { o.holder = name }
}

// WithMaxConns sets the maximum number of connections of the store's pool.
// The default is pgxpool's (the larger of 4 and the number of CPUs); a
// pool_max_conns parameter in the URL is overridden by this option.
func WithMaxConns(n int32) Option {
	return func(o *options) { o.maxConns = n }
}

// DefaultLockTimeout is how long a call of the store waits for a lock
// another transaction holds unless [WithLockTimeout] says otherwise.
const DefaultLockTimeout = time.Second

// WithLockTimeout sets how long a call of the store waits for a row or
// advisory lock that another transaction holds (a session's lease or
// sessions row, or a table a migration alters) before it gives up with an
// error wrapping [history.ErrBusy] (a *[history.BusyError] naming the
// session's lease holder). It is the PostgreSQL lock_timeout of every
// transaction of the store. The default is [DefaultLockTimeout]; a
// non-positive d is refused by Open.
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = d }
}

// idleInTx is how long a transaction of the store may wait for its client
// (its idle_in_transaction_session_timeout, txBounds) for a lease TTL: two
// thirds of it, the longest a holder that renews every third of the TTL
// can go without renewing before its lease expires. A process that stops
// (SIGSTOP, a stalled machine) inside a write transaction holds the row
// locks of its session and lease, and one that stops inside a read holds
// the lock that keeps a migration's ALTER TABLE (and every statement
// queued behind it) waiting; the server ends that transaction (and its
// connection) by the time the lease expires, and the call fails.
func idleInTx(ttl time.Duration) time.Duration { return max(2*ttl/3, time.Millisecond) }

// txBounds is what every transaction of a store with lease TTL ttl and lock
// timeout lock sets after its BEGIN (Store.begin): the bounds of its waits
// on the waiting side (lock_timeout) and on the holding side
// (idle_in_transaction_session_timeout). They are set per transaction, not
// per connection, so that they hold behind a pooler that shares server
// connections (PgBouncer in transaction mode) and reach no other client's
// transactions. A migration sets its own, shorter lock_timeout
// (migrationLockTimeout). The statements outside a transaction (a lease's
// renewal and release) are bounded by their contexts.
func txBounds(ttl, lock time.Duration) string {
	return fmt.Sprintf("SET LOCAL lock_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d",
		max(lock.Milliseconds(), 1), idleInTx(ttl).Milliseconds())
}

// defaultConnectTimeout bounds connection attempts when the URL sets no
// connect_timeout, so that an unreachable server fails Open instead of
// hanging on the operating system's TCP timeout.
const defaultConnectTimeout = 10 * time.Second

// ErrNewerSchema reports a database whose schema version is newer than this
// package knows; it was written by a newer sessionkit and is left untouched.
var ErrNewerSchema = errors.New("postgres: the database's schema is newer than this version of sessionkit supports")

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as pgx accepts) and brings its schema up to
// date: the first Open of an empty database creates the tables, so its user
// needs the right to create them there. It fails with an error wrapping
// [ErrNewerSchema] if the database was written by a newer schema. ctx
// bounds the connection and the migrations only. Close the Store when done.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	return open(ctx, url, false, opts)
}

// open is Open, and OpenReadOnly with readOnly set.
func open(ctx context.Context, url string, readOnly bool, opts []Option) (*Store, error) {
	o := options{ttl: DefaultLeaseTTL, lockTimeout: DefaultLockTimeout, migrations: migrations}
	for _, opt := range opts {
		opt(&o)
	}
	if o.holder == "" {
		o.holder = defaultHolder()
	}
	switch {
	case strings.TrimSpace(url) == "":
		return nil, errors.New("postgres: open: empty URL")
	case o.ttl <= 0:
		return nil, fmt.Errorf("postgres: open: invalid lease TTL %v", o.ttl)
	case o.lockTimeout <= 0:
		return nil, fmt.Errorf("postgres: open: invalid lock timeout %v", o.lockTimeout)
	case o.maxConns < 0:
		return nil, fmt.Errorf("postgres: open: invalid maximum of connections %d", o.maxConns)
	case !utf8.ValidString(o.holder) || strings.ContainsRune(o.holder, 0):
		return nil, fmt.Errorf("postgres: open: holder name %q is not UTF-8 text", o.holder)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: invalid URL: %w", err)
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "sessionkit"
	}
	st := &Store{db: &db{url: url, ttl: o.ttl, holder: o.holder, st: sqlstore.NewState("postgres", false),
		lockTimeout: o.lockTimeout, bounds: txBounds(o.ttl, o.lockTimeout), hooks: o.hooks}}
	st.conns.track(cfg.ConnConfig)
	if readOnly {
		// Every transaction of every connection, also a statement run
		// outside one, is read-only on the server.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, &connectError{msg: fmt.Sprintf("postgres: open: cannot connect to %s: %s", where(cfg), oneLine(err)), err: err}
	}
	if readOnly {
		err = checkReadable(ctx, pool)
	} else {
		err = migrate(ctx, pool, o.migrations, st.bounds)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", where(cfg), err)
	}
	st.pool = pool
	return st, nil
}

// connectError is a failed connection: one line of text (the causes of
// pgx's attempts, each once) over the error of pgx.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// oneLine is the text of a connection error of pgx on one line: its causes
// (the network error or the server's error of each attempt; pgx tries a
// host again without TLS, and each address of a name), each once, joined
// by "; ".
func oneLine(err error) string {
	var causes []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case *net.OpError, *pgconn.PgError: // a cause; its text names it
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
			return
		case interface{ Unwrap() error }:
			if inner := e.Unwrap(); inner != nil {
				walk(inner)
				return
			}
		}
		text := strings.Join(strings.Fields(err.Error()), " ")
		if !slices.Contains(causes, text) {
			causes = append(causes, text)
		}
	}
	walk(err)
	return strings.Join(causes, "; ")
}

// where names the database of cfg for error messages, without credentials.
func where(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("database %q on %s", c.Database, c.Host+":"+strconv.Itoa(int(c.Port)))
}

// defaultHolder is "<hostname>:<pid>".
func defaultHolder() string {
	return leasing.Hostname() + ":" + strconv.Itoa(os.Getpid())
}

// closeReleaseTimeout bounds how long Close spends releasing the store's
// leases before it closes the pool.
const closeReleaseTimeout = 2 * time.Second

// closeCallsTimeout bounds how long Close then waits for the calls in
// flight before it cuts their connections.
const closeCallsTimeout = time.Second

// CloseTimeout bounds how long [Store.Close] takes, whatever the state of
// the database and of the calls in flight.
const CloseTimeout = closeReleaseTimeout + closeCallsTimeout

// Close closes the store; every later call fails with [history.ErrClosed].
// It stops the renewals of the store's leases and releases them (best
// effort, for at most 2 s: leases it cannot release expire after their
// TTL). Calls in progress then have 1 s to finish; after that Close cuts
// their connections and they fail with [history.ErrClosed] (a write cut so
// may have committed, as after any lost connection). Close returns within
// [CloseTimeout] even when the database does not answer. Closing twice is
// a no-op, and so is closing a lease's view of the store (Lease.Store).
func (s *Store) Close() error {
	if s.l != nil || s.st.Close() {
		return nil
	}
	leases := s.leases.Close()
	ctx, cancel := context.WithTimeout(context.Background(), closeReleaseTimeout)
	defer cancel()
	for l := range leases {
		_ = l.release(ctx) // best effort; see above
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.pool.Close() // waits for the connections of calls in flight
	}()
	t := time.NewTimer(closeCallsTimeout)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		s.conns.closeAll()
		<-closed
	}
	return nil
}

// conns is the set of a store's open network connections.
type conns struct {
	mu  sync.Mutex
	set map[*conn]struct{}
	cut bool // no more connections: the store closed
}

// conn is a network connection of a store's pool.
type conn struct {
	net.Conn
	of *conns
}

// Close implements net.Conn.
func (c *conn) Close() error {
	c.of.mu.Lock()
	delete(c.of.set, c)
	c.of.mu.Unlock()
	return c.Conn.Close()
}

// track makes the connections that cfg dials members of cs.
func (cs *conns) track(cfg *pgx.ConnConfig) {
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &conn{Conn: nc, of: cs}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.cut {
			_ = nc.Close()
			return nil, history.ErrClosed
		}
		if cs.set == nil {
			cs.set = map[*conn]struct{}{}
		}
		cs.set[c] = struct{}{}
		return c, nil
	}
}

// closeAll closes every connection of cs, and every one dialled later: a
// call waiting on one fails at once.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.cut = true
	all := slices.Collect(maps.Keys(cs.set))
	cs.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}

// admit checks a call's context and the store before it starts.
func (s *db) admit(ctx context.Context) error { return s.st.Admit(ctx) }

// fail wraps an error of the driver for op, reporting a closed store as
// [history.ErrClosed] and a finished context as the context's error.
func (s *db) fail(ctx context.Context, op string, err error) error { return s.st.Fail(ctx, op, err) }

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23505"
}
