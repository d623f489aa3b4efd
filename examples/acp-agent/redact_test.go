package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// TestOpenStoreNeverShowsAPassword: a store the agent cannot open is
// reported without its password, wherever the password was: in a URL's
// user info that does not parse (the parser quotes the ":secret" it took
// for a port), in its query, or in a mistyped key=value string taken for
// a SQLite path.
func TestOpenStoreNeverShowsAPassword(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	asDir := filepath.Join(dir, "host=db password=secret")
	require.NoError(t, os.Mkdir(asDir, 0o700))
	for _, spec := range []string{
		"postgres://u:secret/x@127.0.0.1:1/db",
		"postgres://u@[::1/db?password=secret",
		"postgres://u@127.0.0.1:1/db?password=secret&pool_max_conns=zero",
		"postgres://u@127.0.0.1:1/db?sslpassword=secret&connect_timeout=2",
		asDir,
	} {
		st, where, err := openStore(context.Background(), spec, time.Second)
		require.Error(t, err, spec)
		assert.Nil(t, st)
		assert.Empty(t, where)
		assert.NotContains(t, err.Error(), "secret", spec)
	}
}

// TestStartupLogHidesThePassword: the agent started on a PostgreSQL store
// whose URL carries a password in its user info and in its query logs
// where its store is without either.
func TestStartupLogHidesThePassword(t *testing.T) {
	srv := pgtest.StartServer(t) // trusts the loopback: any password does
	url := strings.Replace(srv.URL(), "postgres://postgres@", "postgres://postgres:secret1@", 1)
	require.Contains(t, url, "secret1", "the server's URL has the user info %s", srv.URL())
	if strings.Contains(url, "?") {
		url += "&password=secret2"
	} else {
		url += "?password=secret2"
	}
	cmd := exec.Command(agentBinary(t), "--store", url)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	require.NoError(t, cmd.Start())
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	require.NoError(t, err)
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the agent answers initialize: %v", lines.Err())
	require.NoError(t, stdin.Close())
	_, _ = io.Copy(io.Discard, stdout)
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	log := stderr.String()
	assert.Contains(t, log, "acp-agent starting")
	assert.Contains(t, log, "postgres:xxxxx@")
	assert.Contains(t, log, "password=xxxxx")
	assert.NotContains(t, log, "secret")
}
