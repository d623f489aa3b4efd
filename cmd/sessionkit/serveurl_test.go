package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeURL: serve prints the host --addr names (never the
// listener's "[::]" for 0.0.0.0), with the port the listener took.
func TestServeURL(t *testing.T) {
	any6 := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8123}
	for _, tc := range []struct {
		addr  string
		ln    net.Addr
		token string
		want  string
	}{
		{"0.0.0.0:8123", any6, "", "http://0.0.0.0:8123/"},
		{":8123", any6, "", "http://0.0.0.0:8123/"},
		{"[::]:8123", any6, "", "http://[::]:8123/"},
		{"127.0.0.1:0", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}, "", "http://127.0.0.1:40001/"},
		{"localhost:8123", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8123}, "", "http://localhost:8123/"},
		{"[::1]:8123", &net.TCPAddr{IP: net.IPv6loopback, Port: 8123}, "", "http://[::1]:8123/"},
		{"0.0.0.0:8123", any6, "0123456789abcdef", "http://0.0.0.0:8123/?token=0123456789abcdef"},
	} {
		assert.Equal(t, tc.want, serveURL(tc.addr, tc.ln, tc.token), tc.addr)
	}
}

// TestServeCounts: the session page counts in the singular for one.
func TestServeCounts(t *testing.T) {
	srv, _ := serveStore(t, writeArchive(t))
	status, body := get(t, srv.URL+"/s/s1")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "1 Segment ·")
	assert.Contains(t, body, "4 archived messages ·")
	assert.NotContains(t, body, "1 Segments")
	assert.False(t, strings.Contains(body, " 1 messages"), "no \"1 messages\"")
}

// TestImmutableNote: the note names the WAL file and what it holds only
// when there is one with changes in it.
func TestImmutableNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	note := immutableNote(path, path)
	assert.Contains(t, note, "reading the file as immutable")
	assert.NotContains(t, note, "-wal")
	require.NoError(t, os.WriteFile(path+"-wal", []byte("frames"), 0o600))
	note = immutableNote(path, path)
	assert.Contains(t, note, "changes still in its WAL ("+path+"-wal)")
}
