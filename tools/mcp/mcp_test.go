package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/mcp"
)

// stdio is the configuration of a test server run as a subprocess (this
// test binary, see TestMain).
func stdio(t testing.TB, name, mode string) mcp.Server {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return mcp.Server{Name: name, Command: exe, Env: []string{serverEnv + "=" + mode}}
}

// httpServer serves the test server of mode over the streamable HTTP
// transport; requests without the header X-Token: secret get 401.
func httpServer(t testing.TB, mode string) string {
	t.Helper()
	srv := testServer(mode)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "secret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// options returns Options whose HTTP client the test ends.
func options(t *testing.T) mcp.Options {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return mcp.Options{HTTPClient: &http.Client{Transport: tr}}
}

func connect(t *testing.T, o mcp.Options, servers ...mcp.Server) *mcp.Set {
	t.Helper()
	set, err := o.Connect(context.Background(), servers)
	require.NoError(t, err)
	t.Cleanup(func() { set.Close() })
	return set
}

func tool(t *testing.T, set *mcp.Set, name string) session.Tool {
	t.Helper()
	for _, tl := range set.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %v", name, names(set))
	return session.Tool{}
}

func names(set *mcp.Set) []string {
	var out []string
	for _, tl := range set.Tools() {
		out = append(out, tl.Name)
	}
	return out
}

func run(t *testing.T, tl session.Tool, args string) (string, error) {
	t.Helper()
	return tl.Run(context.Background(), json.RawMessage(args))
}

// Both transports: the tools are listed under mcp__<server>__<tool> with
// the server's schema and description, called with their arguments, and
// their results mapped to text.
func TestToolsOverStdioAndHTTP(t *testing.T) {
	url := httpServer(t, "remote")
	set := connect(t, options(t),
		stdio(t, "local", "local"),
		mcp.Server{Name: "remote", URL: url, Headers: http.Header{"X-Token": {"secret"}}})
	require.Empty(t, set.Failed())
	want := []string{"echo", "fail", "media", "structured", "big", "slow", "getenv", "die", "spawn"}
	var all []string
	for _, server := range []string{"local", "remote"} {
		for _, w := range want {
			all = append(all, "mcp__"+server+"__"+w)
		}
	}
	assert.ElementsMatch(t, all, names(set))
	for i, st := range set.Servers() {
		assert.Equal(t, []string{"local", "remote"}[i], st.Name)
		assert.Nil(t, st.Err)
		assert.Len(t, st.Tools, len(want))
	}

	for _, server := range []string{"local", "remote"} {
		o, ok := set.Origin("mcp__" + server + "__echo")
		require.True(t, ok)
		assert.Equal(t, mcp.Origin{Server: server, Tool: "echo"}, o, "where a tool comes from")
	}
	_, ok := set.Origin("mcp__local__nope")
	assert.False(t, ok)

	for _, server := range []string{"local", "remote"} {
		echo := tool(t, set, "mcp__"+server+"__echo")
		assert.JSONEq(t, string(echoSchema), string(echo.Parameters))
		assert.Equal(t, "Say the text back.", echo.Description)
		out, err := run(t, echo, `{"text":"hi"}`)
		require.NoError(t, err)
		assert.Equal(t, server+" says hi", out)

		_, err = run(t, tool(t, set, "mcp__"+server+"__fail"), `{}`)
		require.Error(t, err)
		assert.Equal(t, "it broke", err.Error(), "an isError result is the tool's error")

		out, err = run(t, tool(t, set, "mcp__"+server+"__media"), ``)
		require.NoError(t, err)
		assert.Equal(t, "here:\n"+
			"[image image/png, 1234 bytes]\n"+
			"[audio audio/wav, 10 bytes]\n"+
			`[resource link file:///project/a.go "a.go", text/x-go]`+"\n"+
			"[resource file:///project/b.txt, text/plain]\nb's text\n"+
			"[resource file:///project/c.bin, application/octet-stream, 7 bytes]", out)

		out, err = run(t, tool(t, set, "mcp__"+server+"__structured"), `{}`)
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":7}`, out)
	}
}

// A tool's result is cut at MaxOutput, at a rune boundary, with a note.
func TestMaxOutput(t *testing.T) {
	o := options(t)
	o.MaxOutput = 101
	set := connect(t, o, stdio(t, "local", "local"))
	out, err := run(t, tool(t, set, "mcp__local__big"), `{}`)
	require.NoError(t, err)
	kept, note, ok := strings.Cut(out, "\n")
	require.True(t, ok, out)
	assert.Equal(t, strings.Repeat("é", 50), kept)
	assert.Equal(t, "[output cut: the first 100 of 10000 bytes shown]", note)
	assert.True(t, utf8.ValidString(out))
}

// Servers that fail to start (no such program, a program that exits at
// once, an HTTP server that refuses the request) are named with why, the
// end of their stderr included, and the others work.
func TestFailedToStart(t *testing.T) {
	url := httpServer(t, "remote")
	set := connect(t, options(t),
		mcp.Server{Name: "missing", Command: "/nonexistent/mcp-server"},
		stdio(t, "crash", "crash"),
		stdio(t, "good", "good"),
		mcp.Server{Name: "noauth", URL: url})
	failed := set.Failed()
	require.Len(t, failed, 3)
	assert.Equal(t, "missing", failed[0].Server)
	assert.Contains(t, failed[0].Error(), `mcp server "missing": cannot start /nonexistent/mcp-server:`)
	assert.Equal(t, "crash", failed[1].Server)
	assert.Contains(t, failed[1].Error(), "exit status 1")
	assert.Equal(t, "starting up | fatal: missing API key", failed[1].Stderr)
	assert.Contains(t, failed[1].Error(), "its stderr ends: starting up | fatal: missing API key")
	assert.Equal(t, "noauth", failed[2].Server)
	assert.Contains(t, failed[2].Error(), "Unauthorized")

	st := set.Servers()
	require.Len(t, st, 4)
	assert.Same(t, failed[0], st[0].Err)
	assert.Nil(t, st[2].Err)
	assert.Empty(t, st[0].Tools)
	for _, n := range names(set) {
		assert.True(t, strings.HasPrefix(n, "mcp__good__"), n)
	}
	out, err := run(t, tool(t, set, "mcp__good__echo"), `{"text":"still here"}`)
	require.NoError(t, err)
	assert.Equal(t, "good says still here", out)
}

// A server that dies mid-session: the call in flight and every later call
// of its tools fail with why (its exit status and stderr), OnExit hears of
// it once, and the other server goes on.
func TestServerDiesMidSession(t *testing.T) {
	exits := make(chan *mcp.ServerError, 4)
	o := options(t)
	o.OnExit = func(e *mcp.ServerError) { exits <- e }
	set := connect(t, o, stdio(t, "doomed", "doomed"), stdio(t, "other", "other"))

	_, err := run(t, tool(t, set, "mcp__doomed__die"), `{}`)
	require.Error(t, err)
	var se *mcp.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "doomed", se.Server)
	assert.ErrorIs(t, err, mcp.ErrEnded)
	assert.Equal(t, `mcp server "doomed": the server has ended: it exited: exit status 3; its stderr ends: dying: out of cheese`, err.Error())

	_, err2 := run(t, tool(t, set, "mcp__doomed__echo"), `{"text":"x"}`)
	assert.Same(t, se, err2, "a dead server's tools answer why at once")

	select {
	case e := <-exits:
		assert.Same(t, se, e)
	case <-time.After(10 * time.Second):
		t.Fatal("OnExit was not called")
	}
	assert.Same(t, se, set.Servers()[0].Err)
	assert.Nil(t, set.Servers()[1].Err)
	out, err := run(t, tool(t, set, "mcp__other__echo"), `{"text":"alive"}`)
	require.NoError(t, err)
	assert.Equal(t, "other says alive", out)

	set.Close()
	assert.Empty(t, exits, "OnExit once, and not for Close")
}

// gone reports whether the process pid has ended (a zombie waiting for
// init counts as ended).
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	return len(rest) > 0 && rest[0] == 'Z'
}

// Close ends a stdio server's whole process group: the server and the
// child it started, which holds its stdout and stderr; its tools then
// answer ErrClosed.
func TestCloseEndsProcessGroup(t *testing.T) {
	o := options(t)
	o.StopGrace = 10 * time.Second
	set, err := o.Connect(context.Background(), []mcp.Server{stdio(t, "local", "local")})
	require.NoError(t, err)
	spawn := tool(t, set, "mcp__local__spawn")
	out, err := run(t, spawn, `{}`)
	require.NoError(t, err)
	fields := strings.Fields(out)
	require.Len(t, fields, 2, out)
	server, _ := strconv.Atoi(fields[0])
	child, _ := strconv.Atoi(fields[1])
	require.False(t, gone(server))
	require.False(t, gone(child))

	start := time.Now()
	require.NoError(t, set.Close())
	assert.Less(t, time.Since(start), o.StopGrace, "the server ends when its stdin closes, before any signal")
	assert.True(t, gone(server), "the server")
	// The child is killed with the group; init may take a moment to reap it.
	poll.Until(t, 5*time.Second, func() bool { return gone(child) }, "the server's child")

	_, err = run(t, spawn, `{}`)
	assert.ErrorIs(t, err, mcp.ErrClosed)
	require.NoError(t, set.Close(), "Close is idempotent")
}

// lineWriter collects a server's stderr and tells when a line appears.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wants map[string]chan struct{}
}

func newLineWriter(lines ...string) *lineWriter {
	w := &lineWriter{wants: map[string]chan struct{}{}}
	for _, l := range lines {
		w.wants[l] = make(chan struct{})
	}
	return w
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for l, ch := range w.wants {
		if strings.Contains(w.buf.String(), l+"\n") {
			close(ch)
			delete(w.wants, l)
		}
	}
	return len(p), nil
}

func (w *lineWriter) wait(t *testing.T, line string) {
	t.Helper()
	w.mu.Lock()
	ch := w.wants[line]
	w.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("the server did not write %q", line)
	}
}

// Cancelling the ctx of a call ends it promptly, and the server hears of
// it (notifications/cancelled ends the handler's ctx); the server's stderr
// reaches Server.Stderr.
func TestCancelSlowCall(t *testing.T) {
	stderr := newLineWriter("slow started", "slow cancelled")
	cfg := stdio(t, "local", "local")
	cfg.Stderr = stderr
	set := connect(t, options(t), cfg)
	slow := tool(t, set, "mcp__local__slow")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := slow.Run(ctx, json.RawMessage(`{}`))
		done <- err
	}()
	stderr.wait(t, "slow started")
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), `mcp server "local": slow:`)
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end with its ctx")
	}
	stderr.wait(t, "slow cancelled")

	out, err := run(t, tool(t, set, "mcp__local__echo"), `{"text":"after"}`)
	require.NoError(t, err)
	assert.Equal(t, "local says after", out)
}

var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// A server's names and descriptions are untrusted: every name is one the
// providers accept and unique, names that would collide or are too long
// end in a hash, descriptions show their control and bidi characters
// escaped and are cut,
// and what cannot be offered is left out with a note.
func TestHostileServer(t *testing.T) {
	set := connect(t, options(t), stdio(t, "bad.server name", "hostile"))
	require.Empty(t, set.Failed())
	seen := map[string]bool{}
	for _, tl := range set.Tools() {
		assert.Regexp(t, providerName, tl.Name)
		assert.False(t, seen[tl.Name], "unique: %s", tl.Name)
		seen[tl.Name] = true
		assert.LessOrEqual(t, len(tl.Description), mcp.DefaultMaxDescription)
		assert.True(t, strings.HasPrefix(tl.Description, `ok\x1b[2J\u202eevil\x00\rddd`), "%q", tl.Description[:30])
		assert.True(t, strings.HasSuffix(tl.Description, "…"))
		assert.True(t, utf8.ValidString(tl.Description))
		o, ok := set.Origin(tl.Name)
		require.True(t, ok, tl.Name)
		assert.Equal(t, "bad.server name", o.Server)
		assert.False(t, strings.ContainsFunc(o.Tool, func(r rune) bool { return r < ' ' || r == 0x7f || unicode.Is(unicode.Cf, r) }), "the tool's own name, cleaned of control and bidi characters: %q", o.Tool)
	}
	got := names(set)
	require.Len(t, got, 6, got)
	assert.Contains(t, got, "mcp__bad_server_name__fine")
	assert.Contains(t, got, "mcp__bad_server_name__bad__31mname_")
	hashed := regexp.MustCompile(`^mcp__bad_server_name__[a-zA-Z0-9_]*_[0-9a-f]{8}$`)
	n := 0
	for _, name := range got {
		if hashed.MatchString(name) {
			n++
		}
	}
	assert.Equal(t, 4, n, "a.b and a_b collide; the two long names are cut: %v", got)

	st := set.Servers()[0]
	assert.Equal(t, got, st.Tools)
	require.Len(t, st.Notes, 2, st.Notes)
	assert.Equal(t, "a tool without a name was left out", st.Notes[0])
	assert.Contains(t, st.Notes[1], `tool "huge" was left out: its input schema is`)

	// Each name calls its own tool.
	for i, want := range []string{"a.b", "a_b"} {
		out, err := run(t, tool(t, set, got[i]), `{}`)
		require.NoError(t, err)
		assert.Equal(t, "called "+want, out)
	}

	again := connect(t, options(t), stdio(t, "bad.server name", "hostile"))
	assert.Equal(t, got, names(again), "the same names on every run")
}

// A malformed list is refused with an error naming each bad entry, and
// nothing starts.
func TestConfigErrors(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		servers []mcp.Server
		want    []string
	}{
		{[]mcp.Server{{Command: exe}}, []string{`server 1 (""): no name`}},
		{[]mcp.Server{{Name: " ", URL: "http://localhost:1/mcp"}}, []string{`server 1 (" "): no name`}},
		{[]mcp.Server{{Name: "x", Command: exe, URL: "http://localhost:1/mcp"}}, []string{`server 1 ("x"): both a command and a URL`}},
		{[]mcp.Server{{Name: "x"}}, []string{`server 1 ("x"): neither a command nor a URL`}},
		{[]mcp.Server{{Name: "x", Command: exe}, {Name: "x", Command: exe}}, []string{`server 2 ("x"): a second server of this name`}},
		{[]mcp.Server{{Name: "x", URL: "ftp://host/mcp"}}, []string{`server 1 ("x"): URL "ftp://host/mcp" is not an http or https URL`}},
		{[]mcp.Server{{Name: "x", Command: exe, Env: []string{"NOEQUALS"}}}, []string{`server 1 ("x"): Env entry "NOEQUALS" is not KEY=value`}},
		{[]mcp.Server{{Name: "x", URL: "http://h/mcp", Args: []string{"-v"}}}, []string{`Args, Env and Dir are for a command`}},
		{[]mcp.Server{{Name: "x", Command: exe, Headers: http.Header{"A": {"b"}}}}, []string{`Headers are for a URL`}},
		{[]mcp.Server{{Name: "ok", Command: exe}, {}, {Name: "y"}}, []string{`server 2 (""): no name`, `server 2 (""): neither`, `server 3 ("y"): neither`}},
	} {
		set, err := mcp.Connect(context.Background(), tc.servers)
		assert.Nil(t, set)
		require.ErrorIs(t, err, mcp.ErrConfig)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w)
		}
	}
}

// Connect returns ctx's error when ctx ends before the servers started,
// and ends those it started.
func TestConnectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	set, err := options(t).Connect(ctx, []mcp.Server{stdio(t, "local", "local")})
	assert.Nil(t, set)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

// Close during a call: the call ends with ErrClosed and Close does not
// wait for the tool.
func TestCloseDuringCall(t *testing.T) {
	stderr := newLineWriter("slow started")
	cfg := stdio(t, "local", "local")
	cfg.Stderr = stderr
	set, err := options(t).Connect(context.Background(), []mcp.Server{cfg})
	require.NoError(t, err)
	slow := tool(t, set, "mcp__local__slow")
	done := make(chan error, 1)
	go func() {
		_, err := slow.Run(context.Background(), json.RawMessage(`{}`))
		done <- err
	}()
	stderr.wait(t, "slow started")
	closed := make(chan struct{})
	go func() {
		set.Close()
		close(closed)
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, mcp.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end with Close")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// An HTTP server that goes away: its tool's error names it, and the
// other server goes on.
func TestHTTPServerGone(t *testing.T) {
	srv := testServer("remote")
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	set := connect(t, options(t), mcp.Server{Name: "remote", URL: ts.URL}, stdio(t, "local", "local"))
	echo := tool(t, set, "mcp__remote__echo")
	_, err := run(t, echo, `{"text":"x"}`)
	require.NoError(t, err)

	ts.CloseClientConnections()
	ts.Listener.Close()
	_, err = run(t, echo, `{"text":"x"}`)
	require.Error(t, err)
	var se *mcp.ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "remote", se.Server)
	assert.Contains(t, err.Error(), `mcp server "remote": echo: `)

	out, err := run(t, tool(t, set, "mcp__local__echo"), `{"text":"on"}`)
	require.NoError(t, err)
	assert.Equal(t, "local says on", out)
	set.Close()
	for ss := range srv.Sessions() { // the server's side, which heard no DELETE
		_ = ss.Close()
	}
}

// A stdio server starts with Options.Environ (this program's environment
// when nil) and its own Env on top.
func TestEnvironment(t *testing.T) {
	t.Setenv("SESSIONKIT_MCP_TEST_SECRET", "hunter2")
	cfg := stdio(t, "local", "local")
	cfg.Env = append(cfg.Env, "GIVEN=1", "GIVEN=2")
	inherit := connect(t, options(t), cfg)
	o := options(t)
	o.Environ = []string{"ONLY=this"}
	filtered := connect(t, o, cfg)
	for _, tc := range []struct {
		set        *mcp.Set
		name, want string
	}{
		{inherit, "SESSIONKIT_MCP_TEST_SECRET", `"hunter2" true`},
		{inherit, "GIVEN", `"2" true`},
		{filtered, "SESSIONKIT_MCP_TEST_SECRET", `"" false`},
		{filtered, "ONLY", `"this" true`},
		{filtered, "GIVEN", `"2" true`},
	} {
		out, err := run(t, tool(t, tc.set, "mcp__local__getenv"), `{"name":"`+tc.name+`"}`)
		require.NoError(t, err)
		assert.Equal(t, tc.want, out, tc.name)
	}
}

// A server that dies leaving a child outside its group that holds its
// stdout: the call in flight still ends with why, not when the child does.
func TestServerDiesLeavingAChild(t *testing.T) {
	set := connect(t, options(t), stdio(t, "doomed", "doomed"))
	out, err := run(t, tool(t, set, "mcp__doomed__spawn"), `{"setsid":true}`)
	require.NoError(t, err)
	fields := strings.Fields(out)
	require.Len(t, fields, 2, out)
	child, _ := strconv.Atoi(fields[1])
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	done := make(chan error, 1)
	go func() {
		_, err := run(t, tool(t, set, "mcp__doomed__die"), `{}`)
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, mcp.ErrEnded)
		assert.Contains(t, err.Error(), "exit status 3")
	case <-time.After(10 * time.Second):
		t.Fatal("the call waits for the child that holds the server's stdout")
	}
	assert.False(t, gone(child), "a child that left the group is not found (docs/mcp.md)")
}

// A server that does not exit when its stdin closes gets SIGTERM after
// StopGrace, and SIGKILL after StopGrace again when it ignores that.
func TestCloseEscalates(t *testing.T) {
	const grace = 200 * time.Millisecond
	stderr := newLineWriter("terminated")
	term := stdio(t, "term", "term")
	term.Stderr = stderr
	o := options(t)
	o.StopGrace = grace
	set, err := o.Connect(context.Background(), []mcp.Server{term, stdio(t, "stubborn", "stubborn")})
	require.NoError(t, err)
	require.Empty(t, set.Failed())
	start := time.Now()
	set.Close()
	took := time.Since(start)
	stderr.wait(t, "terminated")
	assert.GreaterOrEqual(t, took, 2*grace, "SIGKILL only after SIGTERM and a second grace")
	assert.Less(t, took, 2*grace+5*time.Second)
}
