package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/sqlite"
)

// cliEnvArgs holds the command line (JSON) of a TestCLIChild process.
const cliEnvArgs = "SESSIONKIT_CLI_CHILD_ARGS"

// TestCLIChild runs the command line in $SESSIONKIT_CLI_CHILD_ARGS as
// sessionkit would and exits with its status; it does nothing unless
// started by TestReadOnlyStores.
func TestCLIChild(t *testing.T) {
	spec := os.Getenv(cliEnvArgs)
	if spec == "" {
		t.Skip("runs only as a child process of TestReadOnlyStores")
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(cli(context.Background(), args, console{in: os.Stdin, tty: isTerminal(os.Stdin.Fd())}, os.Stdout, os.Stderr))
}

// cliUser is how TestReadOnlyStores runs the CLI: as a user who cannot
// write the stores' directories.
type cliUser struct {
	bin  string              // a copy of the test binary the user can run
	cred *syscall.Credential // nil: this user (not root, so the modes bind it)
	// stdin is the process's standard input; nil: /dev/null
	stdin *os.File
}

// run runs sessionkit args as the user.
func (u cliUser) run(t *testing.T, args ...string) result {
	t.Helper()
	spec, err := json.Marshal(args)
	require.NoError(t, err)
	cmd := exec.Command(u.bin, "-test.run=^TestCLIChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), cliEnvArgs+"="+string(spec), "HOME=/nonexistent", "XDG_DATA_HOME=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	if u.stdin != nil {
		cmd.Stdin = u.stdin
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	status := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{status, out.String(), errOut.String()}
}

// canWrite reports whether the user can create a file in dir.
func (u cliUser) canWrite(t *testing.T, dir string) bool {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `: > "$1/probe" && rm -f "$1/probe"`, "sh", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	return cmd.Run() == nil
}

// newCLIUser copies the test binary where anyone can run it and picks the
// user: nobody when the test runs as root (root writes any directory).
func newCLIUser(t *testing.T) cliUser {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the read-only store test runs the CLI as another user on Linux only")
	}
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	bin := filepath.Join(base, "sessionkit.test")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, errors.Join(err, dst.Close()))
	u := cliUser{bin: bin}
	if os.Getuid() == 0 {
		u.cred = &syscall.Credential{Uid: 65534, Gid: 65534} // nobody
		probe := exec.Command(bin, "-test.run=^$")
		probe.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
		if out, err := probe.CombinedOutput(); err != nil {
			// CI (CI set) runs as root where nobody can run it: fail there.
			if os.Getenv("CI") != "" {
				t.Fatalf("cannot run the CLI as user nobody here: %v: %s", err, out)
			}
			t.Skipf("cannot run the CLI as user nobody here: %v: %s", err, out)
		}
	}
	return u
}

// storeDir makes a directory anyone can list and enter, for one store.
func storeDir(t *testing.T, name string) string {
	t.Helper()
	base := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
	require.NoError(t, os.Chmod(base, 0o755))
	dir := filepath.Join(base, name)
	require.NoError(t, os.Mkdir(dir, 0o755))
	return dir
}

// freeze makes dir and its files readable and not writable by anyone but
// root, and returns how it looks: every file's name, size and hash.
func freeze(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.Chmod(filepath.Join(dir, e.Name()), 0o444))
	}
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	return listing(t, dir)
}

// listing is every file of dir: name, size, SHA-256 of its bytes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var lines []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		lines = append(lines, fmt.Sprintf("%s %d %x", e.Name(), len(b), sha256.Sum256(b)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestReadOnlyStores: sessionkit reads stores that the user running it
// cannot write (a directory and files of another user, mode 0555 / 0444):
// one in WAL mode without its index file (read immutable, which stderr
// says), one at an older schema version (read, not migrated); it refuses a
// newer schema and an empty file with one line that names what is wrong.
// After every subcommand, the directory holds the same files with the same
// bytes: no -wal or -shm file, no schema, no lease.
func TestReadOnlyStores(t *testing.T) {
	if os.Getenv(cliEnvArgs) != "" {
		t.Skip("in the child process")
	}
	u := newCLIUser(t)

	// A store as an agent leaves it: WAL mode, closed (no -wal, no -shm).
	walDir := storeDir(t, "wal")
	wal := filepath.Join(walDir, "sessions.db")
	st, err := sqlite.Open(wal)
	require.NoError(t, err)
	id, _ := converse(t, st, "read me", false)
	require.NoError(t, st.Close())

	// The same at schema version 4 (before the event log).
	oldDir := storeDir(t, "old")
	old := filepath.Join(oldDir, "sessions.db")
	copyFile(t, wal, old)
	execSQL(t, old, undoMigrations5to7...)

	// At a schema version newer than this sessionkit knows, and empty.
	badDir := storeDir(t, "bad")
	newer, empty := filepath.Join(badDir, "newer.db"), filepath.Join(badDir, "empty.db")
	copyFile(t, wal, newer)
	execSQL(t, newer, `UPDATE schema_version SET version = 1000`)
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	dirs := map[string]string{}
	for _, d := range []string{walDir, oldDir, badDir} {
		dirs[d] = freeze(t, d)
		require.False(t, u.canWrite(t, d), "the CLI's user cannot write %s", d)
	}
	unchanged := func(args []string) {
		t.Helper()
		for d, before := range dirs {
			assert.Equal(t, before, listing(t, d), "%v changed %s", args, d)
		}
	}

	commands := [][]string{{"sessions"}, {"sessions", "--json"}, {"show", id}, {"show", id, "--json"}, {"segments", id, "--messages"}, {"timeline", id}, {"export", id}}
	for _, path := range []string{wal, old} {
		for _, c := range commands {
			args := append([]string{"--store", path}, c...)
			res := u.run(t, args...)
			assert.Equal(t, 0, res.status, "%v: %s", args, res.stderr)
			unchanged(args)
			if c[0] == "sessions" {
				assert.Contains(t, res.stdout, id, args)
			}
			if path == wal {
				assert.Contains(t, res.stderr, "reading the file as immutable", args)
				assert.Contains(t, res.stderr, "it has no WAL file beside it: every change is in the file", args)
				assert.NotContains(t, res.stderr, "-wal", "no -wal file is named that does not exist")
			}
		}
	}
	res := u.run(t, "--store", old, "export", id)
	require.Equal(t, 0, res.status, res.stderr)
	var doc exportJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &doc))
	assert.Equal(t, id, doc.ID)
	assert.NotEmpty(t, doc.Segments, "the old file's Segments are read")

	for _, tt := range []struct {
		path string
		want []string
	}{
		{newer, []string{"schema version 1000", "up to " + strconv.Itoa(schemaKnown(t, wal))}},
		{empty, []string{"not a sessionkit store"}},
	} {
		args := []string{"--store", tt.path, "sessions"}
		res := u.run(t, args...)
		assert.Equal(t, exitFailure, res.status, "%v: %s", args, res.stderr)
		assert.Empty(t, res.stdout)
		line := strings.TrimSuffix(res.stderr, "\n")
		assert.NotContains(t, line, "\n", "one line")
		for _, w := range tt.want {
			assert.Contains(t, line, w)
		}
		assert.Contains(t, line, "--store "+tt.path)
		unchanged(args)
	}
}

// schemaKnown reads the schema version of the store at path (written by
// this sessionkit: the version it knows).
func schemaKnown(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	require.NoError(t, err)
	defer db.Close()
	var v int
	require.NoError(t, db.QueryRow(`SELECT version FROM schema_version`).Scan(&v))
	return v
}

// copyFile copies the SQLite file src (closed, checkpointed) to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o600))
}

// execSQL runs statements on the SQLite file at path, then checkpoints it
// so that the file alone holds them.
func execSQL(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	for _, s := range append(stmts, `PRAGMA wal_checkpoint(TRUNCATE)`) {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	require.NoError(t, db.Close())
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(path + suffix)
	}
}

// TestNothingWritten: in a directory sessionkit could write, an empty file
// is refused and stays empty, and a store at an older schema version is
// read and stays at its version with the same bytes.
func TestNothingWritten(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "e.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	res := sk(t, "--store", empty, "sessions")
	assert.Equal(t, exitFailure, res.status)
	assert.Contains(t, res.stderr, "not a sessionkit store")
	b, err := os.ReadFile(empty)
	require.NoError(t, err)
	assert.Empty(t, b, "no schema written")

	path, ids := writeSessions(t)
	old := filepath.Join(dir, "old.db")
	copyFile(t, path, old)
	execSQL(t, old, undoMigrations5to7...)
	before, err := os.ReadFile(old)
	require.NoError(t, err)
	for _, args := range [][]string{{"sessions"}, {"show", ids[0]}, {"export", ids[1]}} {
		res := sk(t, append([]string{"--store", old}, args...)...)
		require.Equal(t, 0, res.status, res.stderr)
	}
	after, err := os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the file's bytes are unchanged")
	assert.Equal(t, 4, schemaKnown(t, old), "not migrated")
}

// TestMessagesNameFlagsAsHelp: every message names a flag as the help
// does (--store, --limit), never with one dash; --version prints the
// version.
func TestMessagesNameFlagsAsHelp(t *testing.T) {
	path, _ := writeSessions(t)
	for _, args := range [][]string{
		{"--store", filepath.Join(t.TempDir(), "none.db"), "sessions"},
		{"--store", filepath.Dir(path), "sessions"},
		{"--store", "postgres://u@[::1/db", "sessions"},
		{"--store", path, "sessions", "--limit", "-1"},
		{"--store", path, "sessions", "--limit", "x"},
		{"--store", path, "sessions", "--bogus"},
		{"--store", path, "show", "--json=maybe", "x"},
	} {
		res := sk(t, args...)
		require.NotEqual(t, 0, res.status, args)
		assert.Regexp(t, `--(store|limit|bogus|json)\b`, res.stderr, args)
		assert.NotRegexp(t, `(^|[^-])-(store|limit|bogus|json)\b`, res.stderr, args)
	}
	for _, args := range [][]string{{"--version"}, {"--version", "sessions"}} {
		res := sk(t, args...)
		assert.Equal(t, 0, res.status, res.stderr)
		assert.Regexp(t, `^sessionkit \d+\.\d+\.\d+( \(commit [0-9a-f]+\))?\n$`, res.stdout)
	}
}

// undoMigrations5to7 take a store file of the current schema version back
// to version 4: what the message IDs (20, which dropped the window read's
// index of 12, so neither is left), the usage totals (18), the vectors (17), the search index's watermark (16), the segments' files (14), the fork columns (13),
// the usage ledger (11, its index of 19 with it),
// the log's coverage, the configs migration (recorded settings changes), 7
// (fidelity), 6 (the search index) and 5 (the event log) added is dropped,
// so the file is what an older sessionkit wrote.
var undoMigrations5to7 = []string{
	`DROP TABLE message_ids`,
	`DROP TRIGGER usage_totals_add`,
	`DROP TABLE usage_totals`,
	`DROP TABLE vectors`,
	`ALTER TABLE sessions DROP COLUMN indexed`,
	`ALTER TABLE compactions DROP COLUMN files`,
	`DROP INDEX sessions_fork_of`,
	`ALTER TABLE sessions DROP COLUMN fork_of`,
	`ALTER TABLE sessions DROP COLUMN fork_pos`,
	`ALTER TABLE sessions DROP COLUMN fork_seq`,
	`ALTER TABLE sessions DROP COLUMN fork_at`,
	`ALTER TABLE sessions DROP COLUMN deleted`,
	`DROP TABLE usage_records`,
	`ALTER TABLE sessions DROP COLUMN log_covers`,
	`DROP TABLE configs`,
	`ALTER TABLE compactions DROP COLUMN fidelity_facts`,
	`ALTER TABLE compactions DROP COLUMN fidelity_kept`,
	`ALTER TABLE compactions DROP COLUMN fidelity_missing`,
	`DROP TABLE message_fts`,
	`DROP INDEX sessions_num`,
	`ALTER TABLE sessions DROP COLUMN num`,
	`DROP TABLE events`,
	`ALTER TABLE sessions DROP COLUMN last_seq`,
	`UPDATE schema_version SET version = 4`,
}
