package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// skWith runs the command line args in process with in as its console.
func skWith(t *testing.T, in console, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	status := cli(t.Context(), args, in, &out, &errOut)
	return result{status, out.String(), errOut.String()}
}

// stillThere asserts that session id is in the store at spec, as the
// read-only commands see it.
func stillThere(t *testing.T, spec, id string) {
	t.Helper()
	res := sk(t, "--store", spec, "show", id)
	assert.Equal(t, 0, res.status, "session %s was deleted: %s", id, res.stderr)
}

// gone asserts that session id is not in the store at spec: show, search
// and export fail, and sessions leaves it out.
func gone(t *testing.T, spec, id string) {
	t.Helper()
	for _, args := range [][]string{{"show", id}, {"timeline", id}, {"segments", id}, {"export", id}, {"search", id, "cobra"}} {
		res := sk(t, append([]string{"--store", spec}, args...)...)
		assert.Equal(t, exitFailure, res.status, args)
		assert.Contains(t, res.stderr, `no session "`+id+`"`, args)
	}
	res := sk(t, "--store", spec, "sessions")
	require.Equal(t, 0, res.status, res.stderr)
	assert.NotContains(t, res.stdout, id)
}

// TestDelete: delete --yes deletes the session from a real SQLite file,
// with its Segments, events and search rows, and leaves the other session
// as it was.
func TestDelete(t *testing.T) {
	path, ids := writeSessions(t)
	before := sk(t, "--store", path, "export", ids[1])
	require.Equal(t, 0, before.status, before.stderr)

	res := sk(t, "--store", path, "delete", ids[0], "--yes")
	require.Equal(t, 0, res.status, res.stderr)
	assert.Equal(t, "deleted session "+ids[0]+"\n", res.stdout)
	assert.Empty(t, res.stderr)
	gone(t, path, ids[0])

	after := sk(t, "--store", path, "export", ids[1])
	require.Equal(t, 0, after.status, after.stderr)
	assert.Equal(t, before.stdout, after.stdout, "the other session is untouched")

	// Under the CLI: nothing of it in the file.
	st, err := sqlite.OpenReadOnly(path)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Events(t.Context(), ids[0], 0, 0)
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = st.Search(t.Context(), ids[0], history.SearchQuery{Text: "cobra"})
	assert.ErrorIs(t, err, history.ErrNotFound)
	p, err := st.Search(t.Context(), ids[1], history.SearchQuery{Text: "cobra"})
	require.NoError(t, err)
	assert.NotEmpty(t, p.Hits)

	res = sk(t, "--store", path, "delete", "--yes", ids[0])
	assert.Equal(t, exitFailure, res.status)
	assert.Contains(t, res.stderr, `no session "`+ids[0]+`"`)
}

// TestDeleteAsks: on a terminal, delete asks and deletes only on yes; any
// other answer, or none, keeps the session and exits 1.
func TestDeleteAsks(t *testing.T) {
	path, ids := writeSessions(t)
	for _, answer := range []string{"n\n", "\n", "", "yes please\n", "nein\n"} {
		res := skWith(t, console{in: strings.NewReader(answer), tty: true}, "--store", path, "delete", ids[0])
		assert.Equal(t, exitFailure, res.status, "answer %q", answer)
		assert.Contains(t, res.stderr, "Delete session "+ids[0]+` "first session"`)
		assert.Contains(t, res.stderr, "[y/N]")
		assert.Contains(t, res.stderr, "not deleted")
		assert.Empty(t, res.stdout)
		stillThere(t, path, ids[0])
	}
	for i, answer := range []string{"y\n", " YES \n"} {
		res := skWith(t, console{in: strings.NewReader(answer), tty: true}, "--store", path, "delete", ids[i])
		require.Equal(t, 0, res.status, "answer %q: %s", answer, res.stderr)
		assert.Equal(t, "deleted session "+ids[i]+"\n", res.stdout)
		gone(t, path, ids[i])
	}
}

// TestDeleteWithoutTerminal: without a terminal and without --yes, delete
// refuses with a usage error (exit 2) that names --yes, and reads nothing
// from its input.
func TestDeleteWithoutTerminal(t *testing.T) {
	path, ids := writeSessions(t)
	res := skWith(t, console{in: strings.NewReader("y\n")}, "--store", path, "delete", ids[0])
	assert.Equal(t, exitUsage, res.status)
	assert.Contains(t, res.stderr, "not a terminal")
	assert.Contains(t, res.stderr, "--yes")
	assert.Empty(t, res.stdout)
	stillThere(t, path, ids[0])
}

// TestDeleteServed: a session an agent serves (its lease is live) is not
// deleted, with or without --yes: the error names the agent. An agent
// that takes the session while delete asks wins too: the delete's own
// transaction checks the lease.
func TestDeleteServed(t *testing.T) {
	path, ids := writeSessions(t)
	agent, err := sqlite.Open(path, sqlite.WithHolder("agent-on-tty7"))
	require.NoError(t, err)
	defer agent.Close()
	l, err := agent.Acquire(t.Context(), ids[0])
	require.NoError(t, err)

	for _, args := range [][]string{{"--yes"}, {}} { // without --yes: refused before it asks
		res := skWith(t, console{in: strings.NewReader("y\n"), tty: true}, append([]string{"--store", path, "delete", ids[0]}, args...)...)
		assert.Equal(t, exitFailure, res.status, res.stderr)
		assert.Equal(t, "sessionkit: session "+ids[0]+" is being served by agent-on-tty7", strings.SplitN(res.stderr, " (", 2)[0])
		assert.Contains(t, res.stderr, "nothing was deleted")
		assert.NotContains(t, res.stderr, "[y/N]")
		stillThere(t, path, ids[0])
	}
	require.NoError(t, l.Release(context.Background()))

	// The agent takes the session while the question waits for its answer.
	takes := &answerAfter{answer: "y\n", before: func() {
		l, err = agent.Acquire(context.Background(), ids[0]) // read below: confirm hands the line over on a channel
	}}
	res := skWith(t, console{in: takes, tty: true}, "--store", path, "delete", ids[0])
	require.NoError(t, err)
	assert.Equal(t, exitFailure, res.status, res.stderr)
	assert.Contains(t, res.stderr, "[y/N]")
	assert.Contains(t, res.stderr, "served by agent-on-tty7")
	assert.Contains(t, res.stderr, "nothing was deleted")
	stillThere(t, path, ids[0])

	require.NoError(t, l.Release(context.Background()))
	res = sk(t, "--store", path, "delete", "--yes", ids[0])
	require.Equal(t, 0, res.status, res.stderr)
	gone(t, path, ids[0])
}

// answerAfter is a terminal's input whose user answers once before has
// run.
type answerAfter struct {
	answer string
	before func()
	r      *strings.Reader
}

func (a *answerAfter) Read(p []byte) (int, error) {
	if a.r == nil {
		a.before()
		a.r = strings.NewReader(a.answer)
	}
	return a.r.Read(p)
}

// TestDeleteMalformed: bad command lines exit 2 and delete nothing; an
// unknown session or a missing store exits 1, and no file is created.
func TestDeleteMalformed(t *testing.T) {
	path, ids := writeSessions(t)
	missing := filepath.Join(t.TempDir(), "none.db")
	yes := console{in: strings.NewReader("y\n"), tty: true}
	for _, tt := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"delete"}, exitUsage, "delete needs a session ID"},
		{[]string{"delete", "--yes"}, exitUsage, "delete needs a session ID"},
		{[]string{"delete", ids[0], ids[1], "--yes"}, exitUsage, `unexpected "` + ids[1] + `"`},
		{[]string{"delete", ids[0], "--force"}, exitUsage, "--force"},
		{[]string{"delete", "-y", ids[0]}, exitUsage, "-y"},
		{[]string{"delete", "--yes=maybe", ids[0]}, exitUsage, "--yes"},
		{[]string{"delete", "--json", ids[0]}, exitUsage, "--json"},
		{[]string{"delete", "nope", "--yes"}, exitFailure, `no session "nope"`},
		{[]string{"delete", "nope"}, exitFailure, `no session "nope"`}, // found missing before it asks
		{[]string{"--store", missing, "delete", ids[0], "--yes"}, exitFailure, "no such file"},
		{[]string{"--store", filepath.Dir(path), "delete", ids[0], "--yes"}, exitUsage, "is a directory"},
	} {
		args := tt.args
		if args[0] == "delete" {
			args = append([]string{"--store", path}, args...)
		}
		res := skWith(t, yes, args...)
		assert.Equal(t, tt.status, res.status, "%v: %s", args, res.stderr)
		assert.Empty(t, res.stdout, args)
		line := strings.TrimSuffix(res.stderr, "\n")
		assert.NotContains(t, line, "\n", args)
		assert.Contains(t, line, tt.want, args)
	}
	assert.NoFileExists(t, missing)
	stillThere(t, path, ids[0])
	stillThere(t, path, ids[1])
}

// TestDeletePostgres: delete --yes on a PostgreSQL store.
func TestDeletePostgres(t *testing.T) {
	url := pgtest.Database(t)
	st, err := postgres.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	a, _ := converse(t, st, "on postgres", false)
	b, _ := converse(t, st, "kept", false)

	res := sk(t, "--store", url, "delete", a, "--yes")
	require.Equal(t, 0, res.status, res.stderr)
	gone(t, url, a)
	stillThere(t, url, b)
}

// TestDeleteChildWithoutTerminal runs delete in a process of its own whose
// standard input is not a terminal (/dev/null): without --yes it refuses.
func TestDeleteChildWithoutTerminal(t *testing.T) {
	path, ids := writeSessions(t)
	bin, err := os.Executable()
	require.NoError(t, err)
	res := cliUser{bin: bin}.run(t, "--store", path, "delete", ids[0])
	assert.Equal(t, exitUsage, res.status, res.stderr)
	assert.Contains(t, res.stderr, "not a terminal")
	stillThere(t, path, ids[0])
}
