package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Main also checks for leaked goroutines (goleak) once the tests pass.
func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func queryInt(t *testing.T, c *pgx.Conn, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, c.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// adminOf returns the administrative URL of the server Database uses.
func adminOf(t *testing.T) string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	u, err := sharedURL(t)
	require.NoError(t, err)
	return u
}

// userTables counts the relations of a database outside the system schemas.
const userTables = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`

func TestDatabase(t *testing.T) {
	ctx := context.Background()
	var (
		urls  []string
		names []string
		took  []time.Duration
	)
	shared.mu.Lock()
	startedHere := !shared.tried && os.Getenv(EnvURL) == ""
	shared.mu.Unlock()
	t.Run("create", func(t *testing.T) {
		for range 3 {
			t0 := time.Now()
			u := Database(t)
			took = append(took, time.Since(t0))
			urls = append(urls, u)
			pu, err := url.Parse(u)
			require.NoError(t, err)
			names = append(names, strings.TrimPrefix(pu.Path, "/"))
		}
		require.NotEqual(t, urls[0], urls[1])
		require.NotEqual(t, urls[1], urls[2])
		a, b := connect(t, urls[0]), connect(t, urls[1])
		for i, c := range []*pgx.Conn{a, b} {
			var db string
			require.NoError(t, c.QueryRow(ctx, "SELECT current_database()").Scan(&db))
			require.Equal(t, names[i], db)
			require.Zero(t, queryInt(t, c, userTables), "a new database is empty")
			var enc string
			require.NoError(t, c.QueryRow(ctx, "SHOW server_encoding").Scan(&enc))
			require.Equal(t, "UTF8", enc)
		}
		_, err := a.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)")
		require.NoError(t, err)
		require.Equal(t, 2, queryInt(t, a, "SELECT count(*) FROM t"))
		require.Zero(t, queryInt(t, b, userTables), "a table of one database shows in another")
		// A connection left open does not keep the database from being dropped.
		connect(t, urls[2])
	})
	admin := connect(t, adminOf(t))
	for _, name := range names {
		require.Zero(t, queryInt(t, admin, "SELECT count(*) FROM pg_database WHERE datname = $1", name), "database %s was not dropped", name)
	}
	shared.mu.Lock()
	started := shared.started
	shared.mu.Unlock()
	if startedHere {
		t.Logf("shared server start (initdb, postgres until it accepts connections): %v", started.Round(time.Millisecond))
		took[0] -= started
	}
	t.Logf("Database (connect, CREATE DATABASE): %v, %v, %v",
		took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), took[2].Round(time.Millisecond))
}

// TestDatabaseParallel calls Database from parallel tests, which may be the
// first to start the shared server.
func TestDatabaseParallel(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	t.Run("group", func(t *testing.T) {
		for i := range 4 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				u := Database(t)
				mu.Lock()
				require.False(t, seen[u])
				seen[u] = true
				mu.Unlock()
				c := connect(t, u)
				_, err := c.Exec(context.Background(), "CREATE TABLE t (x int)")
				require.NoError(t, err)
			})
		}
	})
	require.Len(t, seen, 4)
}

// TestServerKillStart checks that Kill loses no committed transaction and
// keeps no uncommitted one, and that Start recovers the data on the same URL.
func TestServerKillStart(t *testing.T) {
	ctx := context.Background()
	s := StartServer(t)
	require.True(t, s.Running())
	c, err := pgx.Connect(ctx, s.URL())
	require.NoError(t, err)
	_, err = c.Exec(ctx, "CREATE TABLE t (x int)")
	require.NoError(t, err)
	for i := range 50 {
		_, err = c.Exec(ctx, "INSERT INTO t VALUES ($1)", i)
		require.NoError(t, err)
	}
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO t VALUES (-1)")
	require.NoError(t, err)

	var pids []int
	rows, err := pgx.Connect(ctx, s.URL())
	require.NoError(t, err)
	defer rows.Close(ctx)
	r, err := rows.Query(ctx, "SELECT pid FROM pg_stat_activity")
	require.NoError(t, err)
	for r.Next() {
		var pid int
		require.NoError(t, r.Scan(&pid))
		pids = append(pids, pid)
	}
	require.NoError(t, r.Err())
	require.NotEmpty(t, pids)

	t0 := time.Now()
	s.Kill()
	killed := time.Since(t0)
	require.False(t, s.Running())
	for _, pid := range pids {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && runtime.GOOS == "linux" {
			require.Contains(t, string(b), ") Z ", "server process %d still runs after Kill", pid)
		}
	}
	require.Error(t, c.Ping(ctx), "the connection survived Kill")
	_ = c.Close(ctx)
	s.Kill() // does nothing

	t0 = time.Now()
	s.Start()
	started := time.Since(t0)
	require.True(t, s.Running())
	c2 := connect(t, s.URL())
	require.Equal(t, 50, queryInt(t, c2, "SELECT count(*) FROM t"))
	require.Equal(t, 49*50/2, queryInt(t, c2, "SELECT sum(x) FROM t"))
	t.Logf("Kill took %v, Start (with crash recovery) %v", killed.Round(time.Millisecond), started.Round(time.Millisecond))

	// And once more.
	s.Kill()
	s.Start()
	c3 := connect(t, s.URL())
	require.Equal(t, 50, queryInt(t, c3, "SELECT count(*) FROM t"))
}

// TestEnvURL checks that Database uses the server of EnvURL and starts none.
func TestEnvURL(t *testing.T) {
	s := StartServer(t)
	admin, err := withDatabase(s.URL(), "postgres")
	require.NoError(t, err)
	t.Setenv(EnvURL, admin)
	shared.mu.Lock()
	starts := shared.starts
	shared.mu.Unlock()

	u := Database(t)
	pu, err := url.Parse(u)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(s.Port()), pu.Port())
	name := strings.TrimPrefix(pu.Path, "/")
	require.Contains(t, name, "testenvurl")
	c := connect(t, u)
	require.Zero(t, queryInt(t, c, userTables))

	shared.mu.Lock()
	require.Equal(t, starts, shared.starts, "Database started a server with %s set", EnvURL)
	shared.mu.Unlock()

	t.Setenv(EnvURL, "host=localhost dbname=x")
	ft := runFake(t, func(ft *fakeTB) { Database(ft) })
	require.Contains(t, ft.fatal, "not a postgres://user@host:port/db URL")
}

// fakeTB records how a test ended.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (*fakeTB) Helper()                           {}
func (f *fakeTB) Name() string                    { return f.TB.Name() }
func (f *fakeTB) Cleanup(fn func())               { f.TB.Cleanup(fn) }
func (f *fakeTB) Logf(format string, args ...any) { f.TB.Logf(format, args...) }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runFake runs fn with a fakeTB on its own goroutine, as a test runs.
func runFake(t *testing.T, fn func(*fakeTB)) *fakeTB {
	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ft)
	}()
	<-done
	return ft
}

// TestUnavailable checks that a missing server skips a test, with a message
// saying how to run it, except on CI, where it fails.
func TestUnavailable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("throwaway servers run on Unix systems only")
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "")
	old := pgLibGlob
	pgLibGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { pgLibGlob = old })

	ft := runFake(t, func(ft *fakeTB) { StartServer(ft) })
	require.Empty(t, ft.fatal)
	require.Contains(t, ft.skip, "no PostgreSQL server binaries")
	require.Contains(t, ft.skip, "apt-get install postgresql")
	require.Contains(t, ft.skip, EnvURL+"=postgres://")

	t.Setenv("CI", "true")
	ft = runFake(t, func(ft *fakeTB) { StartServer(ft) })
	require.Empty(t, ft.skip)
	require.Contains(t, ft.fatal, "no PostgreSQL server binaries")
}

func TestVersionLess(t *testing.T) {
	dirs := []string{"/u/15/bin", "/u/9.6/bin", "/u/10/bin", "/u/16/bin", "/u/9.5/bin"}
	for i := range dirs {
		for j := range dirs {
			want := map[string]int{"/u/9.5/bin": 0, "/u/9.6/bin": 1, "/u/10/bin": 2, "/u/15/bin": 3, "/u/16/bin": 4}
			require.Equal(t, want[dirs[i]] < want[dirs[j]], versionLess(dirs[i], dirs[j]), "%s < %s", dirs[i], dirs[j])
		}
	}
}
