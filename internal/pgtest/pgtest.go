// Package pgtest gives tests a real PostgreSQL server.
//
// [Database] returns the URL of a fresh, empty database for one test, created
// on a throwaway server that the test binary starts the first time it is
// needed and shares between its tests. [StartServer] starts a server of the
// test's own, for tests that kill it ([Server.Kill]) and start it again
// ([Server.Start]). A package that uses either calls [Main] from its TestMain,
// which stops the shared server when the tests are done:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Database(t) // postgres://…, dropped when the test ends
//		…
//	}
//
// # The servers
//
// A throwaway server runs the initdb and postgres binaries found in PATH or,
// failing that, in the newest /usr/lib/postgresql/<version>/bin (Debian's
// postgresql package). Its data directory is a new temporary directory; it
// listens on 127.0.0.1 only, on a free port, with no Unix socket, and trusts
// every connection from the loopback (user "postgres", no password). fsync is
// on, as in production, since the tests check durability. PostgreSQL refuses
// to run as root, so a test binary running as root runs it as the
// unprivileged user "postgres", or "nobody" when there is no such user. If
// the test binary dies without cleaning up, the kernel stops its servers
// (Linux), and the next server start removes their data directories.
//
// # Without PostgreSQL
//
// Set SESSIONKIT_TEST_POSTGRES_URL (see [EnvURL]) to a server's URL, such as
// postgres://user@host:5432/postgres, to run the tests against that server:
// [Database] then creates and drops its databases there (the user needs the
// CREATEDB privilege) and starts nothing. When no server can be started (the
// binaries are missing, or the start failed), the tests that need one are
// skipped with a message saying how to run them, except when the environment
// variable CI is set: there they fail, so that CI never passes without them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"
)

// EnvURL is the environment variable that names an existing PostgreSQL
// server for [Database]: a URL such as postgres://user@host:5432/postgres. Its
// user must be allowed to create databases.
const EnvURL = "SESSIONKIT_TEST_POSTGRES_URL"

// pgLibGlob is where Debian installs the server binaries of each version.
var pgLibGlob = "/usr/lib/postgresql/*/bin"

// opTimeout bounds one administrative operation on a server (connecting,
// CREATE DATABASE, DROP DATABASE).
const opTimeout = 30 * time.Second

// shared is the server that [Database] starts once per test binary.
var shared struct {
	mu      sync.Mutex
	srv     *server
	err     error // why it could not be started; sticky
	tried   bool
	logged  bool // the start failure's server log was logged
	started time.Duration
	starts  int // how many times a start was attempted (tests check it)
}

// Main runs the tests of m and exits with their result. It is meant for a
// package's TestMain. After the tests it stops the shared server of
// [Database], if one was started, and removes its data; then, if the tests
// passed, it checks that they leaked no goroutines, as
// goleak.VerifyTestMain does, and fails the run if they did.
func Main(m *testing.M) {
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping the shared server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func stopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	srv := shared.srv
	shared.srv = nil
	if srv == nil {
		return nil
	}
	return srv.destroy()
}

// Database returns the URL (postgres://…) of a new, empty database for the
// test t, and drops the database when t ends (forcibly: connections still
// open then are closed). The database is created on the server named by
// [EnvURL] if it is set, and otherwise on a throwaway server that the test
// binary starts on first use and [Main] stops. When there is no server, t
// is skipped (or fails when the environment variable CI is set); see the
// package documentation.
func Database(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		var err error
		if base, err = sharedURL(t); err != nil {
			unavailable(t, err)
		}
	}
	return createDatabase(t, base)
}

// sharedURL starts the shared server if it is not running yet and returns its
// administrative URL.
func sharedURL(t testing.TB) (string, error) {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.tried {
		shared.tried = true
		shared.starts++
		t0 := time.Now()
		shared.srv, shared.err = newServer()
		shared.started = time.Since(t0)
		if shared.err == nil {
			t.Logf("pgtest: started the shared PostgreSQL %s server in %v", shared.srv.version, shared.started.Round(time.Millisecond))
		}
	}
	if shared.err != nil {
		if !shared.logged {
			shared.logged = true
			logServerLog(t, shared.err)
		}
		return "", shared.err
	}
	if shared.srv == nil {
		return "", errors.New("the shared server was stopped (Database called after Main's tests ended)")
	}
	return shared.srv.adminURL(), nil
}

// unavailable ends t for want of a server: it fails when the environment
// variable CI is set, and is skipped otherwise.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("pgtest: cannot start a PostgreSQL server: %v", err)
	}
	t.Skipf("pgtest: cannot start a PostgreSQL server: %v\n"+
		"To run this test, install PostgreSQL (on Debian: apt-get install postgresql) "+
		"or set %s=postgres://user@host:port/db to a server where that user may create databases.", err, EnvURL)
}

// logServerLog logs the server log that a start error carries.
func logServerLog(t testing.TB, err error) {
	t.Helper()
	var se *startError
	if errors.As(err, &se) && se.log != "" {
		t.Logf("pgtest: %s:\n%s", se.what, se.log)
	}
}

// startError is a failure to initialize or start a server, with the output
// that explains it.
type startError struct {
	err  error
	what string // what log is: "server log", "initdb output"
	log  string
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

var dbCounter atomic.Uint64

// dbName returns a database name that no other test uses: a part of the
// test's name for whoever looks at the server, the process ID, a counter and
// a random suffix (servers named by EnvURL can be shared between machines).
func dbName(t testing.TB) string {
	var b strings.Builder
	b.WriteString("pgtest_")
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() >= 7+24 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	fmt.Fprintf(&b, "_%d_%d_%s", os.Getpid(), dbCounter.Add(1), hex.EncodeToString(rnd[:]))
	return b.String() // at most 31 + 1+10 + 1+20 + 1+6 < 63 bytes
}

// createDatabase creates a new database on the server of the administrative
// URL base and returns its URL; the database is dropped when t ends.
func createDatabase(t testing.TB, base string) string {
	t.Helper()
	name := dbName(t)
	dbURL, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	err = adminExec(base, "CREATE DATABASE "+ident+" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
	if err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(base, name); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return dbURL
}

// dropDatabase drops a database and closes the connections still open to it.
func dropDatabase(base, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	err := adminExec(base, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42601" { // syntax error: before PostgreSQL 13
		err = adminExec(base,
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "+quoteLiteral(name),
			"DROP DATABASE IF EXISTS "+ident)
	}
	return err
}

// adminExec runs statements, each in its own transaction, on a new
// connection to url.
func adminExec(url string, stmts ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(url), err)
	}
	defer func() { _ = conn.Close(ctx) }()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// withDatabase returns the URL base with its database replaced by name.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", fmt.Errorf("%q is not a postgres://user@host:port/db URL", redact(base))
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// redact hides the password of a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Server is a throwaway PostgreSQL server of one test, for tests that kill
// it and start it again. Its methods must be called from the test's
// goroutine (they end the test with t.Fatalf on failure).
type Server struct {
	t   testing.TB
	srv *server
	url string
}

// StartServer starts a new throwaway server for the test t, with an empty
// database named "sessionkit", and stops and removes it when t ends. It does
// not use [EnvURL]: a server that a test kills has to be its own. When no
// server can be started, t is skipped (or fails when the environment
// variable CI is set).
func StartServer(t testing.TB) *Server {
	t.Helper()
	srv, err := newServer()
	if err != nil {
		logServerLog(t, err)
		unavailable(t, err)
	}
	t.Cleanup(func() {
		if err := srv.destroy(); err != nil {
			t.Errorf("pgtest: stopping the server: %v", err)
		}
	})
	if err := adminExec(srv.adminURL(), "CREATE DATABASE sessionkit"); err != nil {
		t.Fatalf("pgtest: create database sessionkit: %v", err)
	}
	u, _ := withDatabase(srv.adminURL(), "sessionkit")
	return &Server{t: t, srv: srv, url: u}
}

// URL returns the URL (postgres://…) of the server's database "sessionkit".
// It stays the same across [Server.Kill] and [Server.Start].
func (s *Server) URL() string { return s.url }

// Port returns the TCP port the server listens on, on 127.0.0.1.
func (s *Server) Port() int { return s.srv.port }

// Kill kills the server as a power failure would: it freezes the postmaster
// (SIGSTOP), sends SIGKILL to each of its processes and to it, and returns
// when they are all gone. Committed transactions survive; [Server.Start]
// recovers them. Kill on a server that is not running does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.srv.kill(); err != nil {
		s.t.Fatalf("pgtest: kill: %v", err)
	}
}

// Start starts the server again on the same data directory and port after
// [Server.Kill] and returns when it accepts connections (after its crash
// recovery). It fails the test if the server is running.
func (s *Server) Start() {
	s.t.Helper()
	if s.srv.running() {
		s.t.Fatalf("pgtest: Start: the server is running")
	}
	if err := s.srv.start(true); err != nil {
		logServerLog(s.t, err)
		s.t.Fatalf("pgtest: start: %v", err)
	}
}

// Running reports whether the server's postmaster is running (it was not
// killed, or was started again).
func (s *Server) Running() bool { return s.srv.running() }

// versionLess orders /usr/lib/postgresql/<version>/bin by version: 9.6 < 10 < 15.
func versionLess(a, b string) bool {
	va := strings.Split(filepath.Base(filepath.Dir(a)), ".")
	vb := strings.Split(filepath.Base(filepath.Dir(b)), ".")
	for i := range min(len(va), len(vb)) {
		x, errx := strconv.Atoi(va[i])
		y, erry := strconv.Atoi(vb[i])
		if errx != nil || erry != nil {
			if va[i] != vb[i] {
				return va[i] < vb[i]
			}
			continue
		}
		if x != y {
			return x < y
		}
	}
	return len(va) < len(vb)
}

// Hold opens a connection to url as a psql session would (with none of a
// store's timeouts), runs stmts in a transaction that it leaves open, and
// returns the function that ends the transaction and the connection. The
// test ends them if it did not. Tests use it to hold a lock that a store
// call needs.
func Hold(t testing.TB, url string, stmts ...string) (end func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgtest: hold: connect to %s: %v", redact(url), err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		_ = conn.Close(ctx)
		t.Fatalf("pgtest: hold: %v", err)
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			_ = conn.Close(ctx)
			t.Fatalf("pgtest: hold: %s: %v", q, err)
		}
	}
	var once sync.Once
	end = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		})
	}
	t.Cleanup(end)
	return end
}
