package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/pgtest"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// serveStore serves the store at spec as sessionkit serve does on the
// loopback address, and returns the server and its reader.
func serveStore(t testing.TB, spec string) (*httptest.Server, *reader) {
	t.Helper()
	r, err := openReader(context.Background(), spec, io.Discard)
	require.NoError(t, err)
	t.Cleanup(r.close)
	return serveReader(t, r), r
}

func serveReader(t testing.TB, r *reader) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newServer(r, serveConfig{addr: "127.0.0.1:0", loopback: true}))
	t.Cleanup(srv.Close)
	return srv
}

// get fetches u and returns its status and body.
func get(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestServePages: every page of a store written by a session with
// compactions, and the export that matches `sessionkit export`.
func TestServePages(t *testing.T) {
	path, ids := writeSessions(t)
	srv, r := serveStore(t, path)
	id := ids[0]

	status, body := get(t, srv.URL+"/")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "first session")
	assert.Less(t, strings.Index(body, ids[1]), strings.Index(body, ids[0]), "newest first")
	assert.Contains(t, body, "/src/falcon")

	segs, err := r.st.Segments(t.Context(), id)
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	status, body = get(t, srv.URL+"/s/"+id)
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "We decided to use the standard flag package, no cobra.")
	assert.Contains(t, body, `class="role role-compaction"`)
	assert.Contains(t, body, "keep the flag decisions", "a compaction's instructions")
	assert.Contains(t, body, `<details class="call"><summary>calls <b>read_file</b>`, "tool calls folded")
	assert.Contains(t, body, `<details class="result">`, "tool results folded")
	assert.Equal(t, len(segs), strings.Count(body, `<a class="marker"`), "a marker per compaction")
	assert.Contains(t, body, `id="threshold" data-tokens="120"`)
	assert.Contains(t, body, "auto_compact_tokens")
	assert.Contains(t, body, "Errors go to stderr &lt;with&gt; &#34;quotes&#34; &amp; tabs\there.")
	for _, s := range segs {
		assert.Contains(t, body, "/s/"+id+"/segments/"+s.ID)
	}

	seg := segs[len(segs)-1]
	status, body = get(t, srv.URL+"/s/"+id+"/segments/"+seg.ID)
	require.Equal(t, 200, status, body)
	withFiles := 0
	for _, sg := range segs {
		_, page := get(t, srv.URL+"/s/"+id+"/segments/"+sg.ID)
		if len(sg.Files) == 0 {
			assert.Contains(t, page, "None: its messages read and changed no file")
			continue
		}
		withFiles++
		assert.Contains(t, page, `<table id="seg-files">`)
		assert.Contains(t, page, "<td><code>main.go</code></td><td>read</td><td></td>", "the Segment's files")
	}
	assert.Positive(t, withFiles, "a Segment archived the read of main.go")
	for _, m := range seg.Messages {
		assert.Contains(t, body, `id="msg-`+m.ID+`"`)
		assert.Contains(t, body, escaped(m.Text))
	}
	assert.Contains(t, body, escaped(seg.Summary))
	assert.Contains(t, body, seg.SummaryProvider)
	status, _ = get(t, srv.URL+"/s/"+id+"/segments/nope")
	assert.Equal(t, 404, status)

	// No store of sessionkit implements history.Searcher in this build
	// unless it does: the page says which.
	status, body = get(t, srv.URL+"/s/"+id+"/search?q=cobra")
	require.Equal(t, 200, status, body)
	if _, ok := r.st.(history.Searcher); ok {
		assert.Contains(t, body, `id="hits"`)
	} else {
		assert.Contains(t, body, "needs history.Searcher")
	}

	res := sk(t, "--store", path, "export", id)
	require.Equal(t, 0, res.status, res.stderr)
	status, body = get(t, srv.URL+"/s/"+id+"/export.json")
	require.Equal(t, 200, status)
	assert.Equal(t, res.stdout, body, "the JSON of sessionkit export")

	status, body = get(t, srv.URL+"/s/"+id+"/export.html")
	require.Equal(t, 200, status)
	assert.NotContains(t, body, "<script")
	assert.NotContains(t, body, `href="/`, "no link to the server")
	assert.NotContains(t, body, `src=`)
	assert.Contains(t, body, "<style>")
	assert.Contains(t, body, `<a class="marker" href="#pos-`)
	for _, s := range segs {
		assert.Contains(t, body, `id="seg-`+s.ID+`"`, "every Segment inline")
		for _, m := range s.Messages {
			assert.Contains(t, body, `id="msg-`+m.ID+`"`)
		}
	}

	status, body = get(t, srv.URL+"/s/nope")
	assert.Equal(t, 404, status)
	assert.Contains(t, body, `no session &#34;nope&#34; in the store`)
	status, _ = get(t, srv.URL+"/no/such/page")
	assert.Equal(t, 404, status)
	status, _ = get(t, srv.URL+"/s/"+id+"?page=99")
	assert.Equal(t, 400, status)
}

// escaped is s as html/template escapes text.
func escaped(s string) string { return htmltemplate.HTMLEscapeString(s) }

// TestServeHostile: IDs, titles, texts and queries with markup in them
// are escaped on every page; nothing of them runs.
func TestServeHostile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	ctx := t.Context()
	const evil = `<script>alert("x")</script>`
	id := `a"><script>alert(1)</script>`
	snap, err := st.Create(ctx, history.NewSession{ID: id, Title: evil, Cwd: `/project/<img src=x onerror=alert(2)>`})
	require.NoError(t, err)
	_, err = st.Append(ctx, id, snap.Version, []history.Message{
		{ID: `m1"><svg onload=alert(3)>`, Role: history.RoleUser, Text: evil},
		{ID: "m2", Role: history.RoleAssistant, Text: "ok", ToolCalls: []history.ToolCall{{ID: "c<1>", Name: "<b>tool</b>", Arguments: json.RawMessage(`{"x":"</script><script>alert(4)</script>"}`)}}},
		{ID: "m3", Role: history.RoleTool, ToolCallID: "c<1>", Text: evil},
	})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	r, err := openReader(ctx, path, io.Discard)
	require.NoError(t, err)
	t.Cleanup(r.close)
	r.st = &fakeSearch{readStore: r.st}
	srv := serveReader(t, r)
	esc := url.PathEscape(id)
	for _, u := range []string{
		"/", "/?q=" + url.QueryEscape(evil), "/?q=" + url.QueryEscape("script"),
		"/s/" + esc, "/s/" + esc + "/search?q=" + url.QueryEscape(evil), "/s/" + esc + "/search?q=alert",
		"/s/" + esc + "/export.html", "/s/" + url.PathEscape(evil), "/s/" + esc + "/segments/" + url.PathEscape(evil),
		"/" + url.PathEscape(evil),
	} {
		_, body := get(t, srv.URL+u)
		for _, bad := range []string{"<script>alert", "<svg onload", "<img src=x", "<b>tool</b>", `a"><script`, `m1"><svg`} {
			assert.NotContains(t, body, bad, "%s holds %s unescaped", u, bad)
		}
		for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
			assert.Equal(t, `<script src="/assets/live.js">`, m, "%s: the only script is live.js", u)
		}
	}
	_, body := get(t, srv.URL+"/s/"+esc+"/search?q=alert")
	assert.Contains(t, body, "<mark>alert</mark>", "the matched word is marked, the rest escaped")
	_, body = get(t, srv.URL+"/?q=script")
	assert.Contains(t, body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "the filter finds it, escaped")
	resp, err := http.Get(srv.URL + "/s/" + esc + "/export.json")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, `attachment; filename="session-a___script_alert_1___script_.json"`, resp.Header.Get("Content-Disposition"))
}

// fakeSearch is a history.Searcher over a store's timeline for the tests
// of the search page (the stores' own search is tested in history): a hit
// for every message that holds the query, the word marked.
type fakeSearch struct{ readStore }

func (f *fakeSearch) Search(ctx context.Context, id string, q history.SearchQuery) (history.SearchPage, error) {
	entries, err := f.Timeline(ctx, id)
	if err != nil {
		return history.SearchPage{}, err
	}
	var page history.SearchPage
	for _, e := range entries {
		if m := e.Message; m != nil && strings.Contains(m.Text, q.Text) {
			page.Hits = append(page.Hits, history.SearchHit{MessageID: m.ID, Position: e.Position, Role: m.Role,
				Snippet: strings.ReplaceAll(m.Text, q.Text, "«"+q.Text+"»"), Score: 1})
		}
	}
	return page, nil
}

// TestServeAssets: the embedded assets, and nothing beside them.
func TestServeAssets(t *testing.T) {
	path, _ := writeSessions(t)
	srv, _ := serveStore(t, path)
	status, body := get(t, srv.URL+"/assets/style.css")
	require.Equal(t, 200, status)
	assert.Contains(t, body, "font")
	status, body = get(t, srv.URL+"/assets/live.js")
	require.Equal(t, 200, status)
	assert.Contains(t, body, "EventSource")
	for _, p := range []string{
		"/assets/../serve.go", "/assets/..%2fserve.go", "/assets/%2e%2e/serve.go", "/assets/%2e%2e%2fserve.go",
		"/assets/../../go.mod", "/assets/..%5cserve.go", "/assets/....//serve.go", "/assets/%2e%2e/templates/layout.html",
		"/assets/../templates/layout.html", "/assets//etc/passwd", "/assets/..%2f..%2f..%2fetc%2fpasswd", "/assets/..%2f..%2fserve.go",
	} {
		req, err := http.NewRequest("GET", srv.URL+"/", nil)
		require.NoError(t, err)
		req.URL.Opaque = p // sent as written, not cleaned by the client
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.NotContains(t, string(b), "package main", p)
		assert.NotContains(t, string(b), "module github.com", p)
		assert.NotContains(t, string(b), "root:", p)
		assert.NotContains(t, string(b), `{{define`, p)
	}
}

// TestServeStoreGone: a store that goes away while serving gets an error
// page that says so, on every page and on a live page; no panic.
func TestServeStoreGone(t *testing.T) {
	path, ids := writeSessions(t)
	livePoll = 10 * time.Millisecond
	t.Cleanup(func() { livePoll = 500 * time.Millisecond })
	srv, r := serveStore(t, path)
	status, _ := get(t, srv.URL+"/s/"+ids[0])
	require.Equal(t, 200, status)

	resp, err := http.Get(srv.URL + "/s/" + ids[0] + "/events?after=0")
	require.NoError(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	require.True(t, lines.Scan()) // the stream is open

	require.NoError(t, r.st.Close())
	for _, u := range []string{"/", "/s/" + ids[0], "/s/" + ids[0] + "/segments/x", "/s/" + ids[0] + "/search?q=a", "/s/" + ids[0] + "/export.json", "/s/" + ids[0] + "/export.html"} {
		status, body := get(t, srv.URL+u)
		assert.Equal(t, http.StatusServiceUnavailable, status, u)
		assert.Contains(t, body, "the store cannot be read", u)
		assert.Contains(t, body, "closed", u)
	}
	var failure string
	for lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "event: failure") {
			require.True(t, lines.Scan())
			failure = lines.Text()
			break
		}
	}
	assert.Contains(t, failure, "the store cannot be read")
}

// TestServeToken: on an address other than the loopback one, serve
// refuses every request without the token it printed; with it, the token
// moves to a cookie. On the loopback address without a token, a request
// for another host is refused.
func TestServeToken(t *testing.T) {
	path, ids := writeSessions(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", "0.0.0.0:0", "--store", path}, defaultStore(), &stdout, &stderr)
	}()
	var printed string
	poll.Until(t, 10*time.Second, func() bool {
		printed = regexp.MustCompile(`http://\S+`).FindString(stdout.String())
		return printed != ""
	}, "the server's address printed")
	u, err := url.Parse(printed)
	require.NoError(t, err)
	token := u.Query().Get("token")
	require.Len(t, token, 26)
	assert.Contains(t, stderr.String(), "the token is "+token)
	base := "http://127.0.0.1:" + u.Port()

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/", "/s/" + ids[0], "/assets/style.css", "/s/" + ids[0] + "/events", "/?token=wrong", "/?token=" + token[:25], "/?token=" + token + "x"} {
		resp, err := client.Get(base + p)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, p)
	}
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(&http.Cookie{Name: tokenCookie, Value: "wrong"})
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a wrong cookie")

	resp, err = client.Get(base + "/s/" + ids[0] + "?page=1&token=" + token)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/s/"+ids[0]+"?page=1", resp.Header.Get("Location"), "the token leaves the URL")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	assert.True(t, cookies[0].HttpOnly)
	req, _ = http.NewRequest("GET", base+"/s/"+ids[0], nil)
	req.AddCookie(cookies[0])
	resp, err = client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)

	// The loopback address without a token: only loopback hosts.
	srv, _ := serveStore(t, path)
	req, _ = http.NewRequest("GET", srv.URL+"/", nil)
	req.Host = "evil.example:7777"
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	for _, host := range []string{"localhost:7777", "127.0.0.1:7777", "[::1]:7777"} {
		req.Host = host
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode, host)
	}

	// Bad flags name the flag.
	for _, args := range [][]string{{"--addr", "7777"}, {"--token", "short"}, {"extra"}} {
		res := sk(t, append([]string{"--store", path, "serve"}, args...)...)
		assert.Equal(t, exitUsage, res.status, args)
	}
	res := sk(t, "--store", path, "serve", "--addr", "127.0.0.1:-1")
	assert.Equal(t, exitFailure, res.status)
	assert.Contains(t, res.stderr, "--addr 127.0.0.1:-1")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeLive: a session an agent serves updates its page: the live
// stream sends the new messages and the compaction, rendered, as the
// session writes them, read from the event log alone.
func TestServeLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	id, s := converse(t, st, "live", true)
	t.Cleanup(func() { _ = s.Close() })
	livePoll = 10 * time.Millisecond
	t.Cleanup(func() { livePoll = 500 * time.Millisecond })
	srv, r := serveStore(t, path)
	snap, err := r.st.Load(t.Context(), id)
	require.NoError(t, err)

	status, body := get(t, srv.URL+"/s/"+id)
	require.Equal(t, 200, status)
	assert.Contains(t, body, "served by <b>")
	reqCtx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a stream that never sends ends the test
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, "GET", fmt.Sprintf("%s/s/%s/events?after=%d", srv.URL, id, snap.LastSeq), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	ctx := t.Context()
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "A live <question> about falcon."})
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
	c, err := s.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	res, err := c.Wait(ctx)
	require.NoError(t, err)
	require.True(t, res.Compacted)
	u, err := s.Uncompact(ctx, session.UncompactRequest{})
	require.NoError(t, err)
	undo, err := u.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, undo.Err)

	var seenMessage, seenCompaction, seenUndo bool
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<24)
	lastID := ""
	for !(seenMessage && seenCompaction && seenUndo) && lines.Scan() {
		if id, ok := strings.CutPrefix(lines.Text(), "id: "); ok {
			lastID = id
		}
		l, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var up liveUpdate
		require.NoError(t, json.Unmarshal([]byte(l), &up))
		assert.Greater(t, up.Seq, snap.LastSeq)
		assert.Equal(t, strconv.FormatUint(up.Seq, 10), lastID, "the event's ID is its sequence number (Last-Event-ID)")
		assert.NotEmpty(t, up.Served)
		for _, row := range up.Rows {
			if strings.Contains(row.HTML, `class="entry message"`) && strings.Contains(row.HTML, "A live &lt;question&gt; about falcon.") {
				seenMessage = true
			}
			if strings.Contains(row.HTML, "completed") && strings.Contains(row.HTML, res.Segment.ID) {
				seenCompaction = true
				assert.Contains(t, row.HTML, escaped(res.Segment.Summary))
			}
			if strings.Contains(row.HTML, `class="entry undo"`) {
				seenUndo = true
				restored := fmt.Sprintf("%d messages", undo.Restored)
				if undo.Restored == 1 {
					restored = "1 message"
				}
				assert.Contains(t, row.HTML, fmt.Sprintf("restored %s of Segment <code>%s</code>", restored, undo.SegmentID))
			}
		}
	}
	assert.True(t, seenMessage, "the new message arrived")
	assert.True(t, seenCompaction, "the compaction arrived with its Segment and summary")
	assert.True(t, seenUndo, "the undo arrived")

	// The page shows the undone Segment and the undo.
	_, body = get(t, srv.URL+"/s/"+id)
	assert.Contains(t, body, `class="role role-undo"`)
	assert.Contains(t, body, "its messages are active again")
}

// TestServePostgres: the pages on a PostgreSQL store.
func TestServePostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	st, err := postgres.Open(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	id, _ := converse(t, st, "on postgres", false)
	srv, r := serveStore(t, dsn)
	segs, err := r.st.Segments(t.Context(), id)
	require.NoError(t, err)
	status, body := get(t, srv.URL+"/")
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, "on postgres")
	status, body = get(t, srv.URL+"/s/"+id)
	require.Equal(t, 200, status, body)
	assert.Equal(t, len(segs), strings.Count(body, `<a class="marker"`))
	status, body = get(t, srv.URL+"/s/"+id+"/segments/"+segs[0].ID)
	require.Equal(t, 200, status, body)
	assert.Contains(t, body, escaped(segs[0].Summary))
}

// TestServeManySessions: 10,000 sessions are listed page by page, each
// exactly once, newest first; the filter pages too.
func TestServeManySessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "many.db")
	const n = 10000
	start := time.Now()
	writeMany(t, path, n)
	t.Logf("wrote %d sessions in %v", n, time.Since(start))
	start = time.Now()
	defer func() { t.Logf("listed them in %v", time.Since(start)) }()
	srv, r := serveStore(t, path)

	seen := map[string]bool{}
	idRe := regexp.MustCompile(`<tr data-id="([^"]+)">`)
	next := regexp.MustCompile(`id="next" href="([^"]+)"`)
	u, pages := srv.URL+"/", 0
	var order []string
	for {
		status, body := get(t, u)
		require.Equal(t, 200, status, body)
		pages++
		rows := idRe.FindAllStringSubmatch(body, -1)
		require.NotEmpty(t, rows)
		for _, m := range rows {
			require.False(t, seen[m[1]], "listed twice: %s", m[1])
			seen[m[1]] = true
			order = append(order, m[1])
		}
		m := next.FindStringSubmatch(body)
		if m == nil {
			break
		}
		u = srv.URL + strings.ReplaceAll(m[1], "&amp;", "&")
	}
	assert.Len(t, seen, n)
	assert.Equal(t, n/sessionsPage, pages)
	var want []string // the store's own order: newest first
	for opts := (history.ListOptions{Limit: history.MaxListLimit}); ; {
		pg, err := r.st.ListSessions(t.Context(), opts)
		require.NoError(t, err)
		for _, info := range pg.Sessions {
			want = append(want, info.ID)
		}
		if opts.Cursor = pg.Next; pg.Next == "" {
			break
		}
	}
	assert.Equal(t, want, order, "newest first, as the store lists them")

	// Sessions whose title holds "title 123": 123, 1230..1239 (11).
	u, seen = srv.URL+"/?q=title+123", map[string]bool{}
	sessionsPage = 4
	t.Cleanup(func() { sessionsPage = 50 })
	for {
		_, body := get(t, u)
		for _, m := range idRe.FindAllStringSubmatch(body, -1) {
			seen[m[1]] = true
		}
		m := next.FindStringSubmatch(body)
		if m == nil {
			break
		}
		u = srv.URL + strings.ReplaceAll(m[1], "&amp;", "&")
	}
	assert.Len(t, seen, 11)
	assert.True(t, seen["many-00123"] && seen["many-01239"])
}

// writeMany writes n sessions with one message each, through the store's
// API (one Create and one Append each), from 8 writers at once so that
// the store commits them in groups.
func writeMany(t testing.TB, path string, n int) {
	t.Helper()
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("many-%05d", i)
				snap, err := st.Create(ctx, history.NewSession{ID: id, Title: fmt.Sprintf("title %d", i), Cwd: "/project"})
				if err == nil {
					_, err = st.Append(ctx, id, snap.Version, []history.Message{{ID: "m", Role: history.RoleUser, Text: "hello"}})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	require.NoError(t, <-errs)
}

// longSession writes a session of n messages (appended 1,000 at a time)
// and returns the store's path and the session's ID.
func longSession(t testing.TB, n int) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "long.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	snap, err := st.Create(ctx, history.NewSession{ID: "long", Title: "a long session"})
	require.NoError(t, err)
	v := snap.Version
	batch := make([]history.Message, 0, 1000)
	for i := range n {
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		batch = append(batch, history.Message{ID: fmt.Sprintf("m%06d", i), Role: role, Text: fmt.Sprintf("message %d of the long session", i)})
		if len(batch) == cap(batch) || i == n-1 {
			v, err = st.Append(ctx, "long", v, batch)
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
	return path, "long"
}

// TestServeLongSession: a session of 100,000 messages is shown a page of
// its timeline at a time, every page holding its own entries.
func TestServeLongSession(t *testing.T) {
	const n = 100000
	path, id := longSession(t, n)
	srv, _ := serveStore(t, path)
	pages := n / timelinePage
	for _, p := range []int{1, pages / 2, pages} {
		u := fmt.Sprintf("%s/s/%s?page=%d", srv.URL, id, p)
		if p == pages {
			u = srv.URL + "/s/" + id // the newest page by default
		}
		status, body := get(t, u)
		require.Equal(t, 200, status, body)
		assert.Equal(t, timelinePage, strings.Count(body, `<li id="pos-`), "page %d", p)
		first := (p - 1) * timelinePage
		assert.Contains(t, body, fmt.Sprintf(`id="pos-%d"`, first))
		assert.Contains(t, body, fmt.Sprintf(`id="pos-%d"`, first+timelinePage-1))
		assert.NotContains(t, body, fmt.Sprintf(`id="pos-%d"`, first+timelinePage))
		assert.Contains(t, body, fmt.Sprintf("page %d of %d", p, pages))
		assert.Equal(t, p == pages, strings.Contains(body, `data-last="true"`))
	}
}

// BenchmarkServeLongSession measures the page of a 100,000-message
// session: "cold" reads the session from the store (the first load, or
// the first after a write); "warm" is the next page of the same version.
func BenchmarkServeLongSession(b *testing.B) {
	path, id := longSession(b, 100000)
	srv, _ := serveStore(b, path)
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if mode == "cold" {
					b.StopTimer()
					s := srv.Config.Handler.(*server)
					s.cache.mu.Lock()
					s.cache.views = nil
					s.cache.mu.Unlock()
					b.StartTimer()
				}
				status, _ := get(b, fmt.Sprintf("%s/s/%s?page=%d", srv.URL, id, 1+i%500))
				if status != 200 {
					b.Fatal(status)
				}
			}
		})
	}
}

// TestServeWritesNothing: serving every page, the live stream included,
// leaves the store's bytes as they were, on a store at the current schema
// version and on one at an older version (not migrated), and takes no
// lease (a lease is a row of the file).
func TestServeWritesNothing(t *testing.T) {
	path, ids := writeSessions(t)
	old := filepath.Join(t.TempDir(), "old.db")
	copyFile(t, path, old)
	execSQL(t, old, undoMigrations5to7...)
	livePoll = 10 * time.Millisecond
	t.Cleanup(func() { livePoll = 500 * time.Millisecond })
	for _, file := range []string{path, old} {
		before, err := os.ReadFile(file)
		require.NoError(t, err)
		srv, r := serveStore(t, file)
		segs, err := r.st.Segments(t.Context(), ids[0])
		require.NoError(t, err)
		for _, u := range []string{"/", "/?q=falcon", "/s/" + ids[0], "/s/" + ids[1] + "?page=1", "/s/" + ids[0] + "/segments/" + segs[0].ID,
			"/s/" + ids[0] + "/search?q=cobra", "/s/" + ids[0] + "/export.json", "/s/" + ids[0] + "/export.html"} {
			status, body := get(t, srv.URL+u)
			require.Equal(t, 200, status, "%s %s: %s", file, u, body)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/s/"+ids[0]+"/events?after=0", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // until the deadline
			resp.Body.Close()
		}
		cancel()
		srv.Close()
		r.close()
		after, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, before, after, "%s: the file's bytes are unchanged", file)
	}
	assert.Equal(t, 4, schemaKnown(t, old), "not migrated")
}

// gatedSummary is the offline provider whose summary calls wait for the
// gate: a compaction stays in progress until the test opens it.
type gatedSummary struct {
	provider.Provider
	gate chan struct{}
}

func (g *gatedSummary) Complete(ctx context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Provider.Complete(ctx, req, onDelta)
}

// TestServeLiveCompactionInProgress: a live page gets a compaction when it
// starts (in progress) and the same entry again when it finishes, with its
// summary.
func TestServeLiveCompactionInProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlite.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	gate := make(chan struct{})
	ctx := t.Context()
	s, err := session.New(ctx, session.Config{Provider: offline.New(), SummaryProvider: &gatedSummary{offline.New(), gate}, Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	for _, p := range []string{"We use Go.", "We use the flag package.", "Errors go to stderr."} {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: p})
		require.NoError(t, err)
		_, err = h.Wait(ctx)
		require.NoError(t, err)
	}
	livePoll = 10 * time.Millisecond
	t.Cleanup(func() { livePoll = 500 * time.Millisecond })
	srv, r := serveStore(t, path)
	snap, err := r.st.Load(ctx, s.ID())
	require.NoError(t, err)
	reqCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, "GET", fmt.Sprintf("%s/s/%s/events?after=%d", srv.URL, s.ID(), snap.LastSeq), nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	c, err := s.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, 1<<24)
	var started, finished bool
	var pos int64 = -1
	for !finished && lines.Scan() {
		l, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var up liveUpdate
		require.NoError(t, json.Unmarshal([]byte(l), &up))
		for _, row := range up.Rows {
			if !strings.Contains(row.HTML, `class="entry compaction"`) {
				continue
			}
			switch {
			case strings.Contains(row.HTML, "status-in_progress"):
				if started {
					// Streamed summary chunks update the entry while it
					// is still in progress: the same entry again.
					assert.Equal(t, pos, row.Pos, "the same entry, updated")
					continue
				}
				started, pos = true, row.Pos
				close(gate) // the page has it in progress: let it finish
			case strings.Contains(row.HTML, "status-completed"):
				require.True(t, started, "seen in progress first")
				assert.Equal(t, pos, row.Pos, "the same entry, replaced")
				assert.Contains(t, row.HTML, "Summary of earlier conversation")
				finished = true
			}
		}
	}
	if !started {
		close(gate) // let the compaction end, so that the session closes
	}
	res, err := c.Wait(ctx)
	require.NoError(t, err)
	require.True(t, res.Compacted)
	assert.True(t, started, "the compaction arrived in progress")
	assert.True(t, finished, "the finished compaction arrived")
}

// TestServeSecurityHeaders: every response, the pages, the assets, the
// live events, a page not found and a refusal alike, carries the
// Content-Security-Policy, X-Frame-Options: DENY and Referrer-Policy:
// no-referrer; an exported page its own policy (its style inline, no
// script).
func TestServeSecurityHeaders(t *testing.T) {
	path, ids := writeSessions(t)
	srv, _ := serveStore(t, path)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, tc := range []struct {
		path, host string
		status     int
		policy     string
	}{
		{"/", "", 200, pagePolicy},
		{"/s/" + ids[0], "", 200, pagePolicy},
		{"/s/" + ids[0] + "/search?q=a", "", 200, pagePolicy},
		{"/assets/style.css", "", 200, pagePolicy},
		{"/assets/live.js", "", 200, pagePolicy},
		{"/s/" + ids[0] + "/events", "", 200, pagePolicy},
		{"/s/" + ids[0] + "/export.json", "", 200, pagePolicy},
		{"/s/" + ids[0] + "/export.html", "", 200, exportPolicy},
		{"/nowhere", "", 404, pagePolicy},
		{"/", "evil.example", 403, pagePolicy},
	} {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+tc.path, nil)
		require.NoError(t, err)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, tc.path)
		resp.Body.Close() // the live events too: their headers are what is checked
		assert.Equal(t, tc.status, resp.StatusCode, tc.path)
		assert.Equal(t, tc.policy, resp.Header.Get("Content-Security-Policy"), tc.path)
		assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), tc.path)
		assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), tc.path)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), tc.path)
	}
	assert.Contains(t, pagePolicy, "frame-ancestors 'none'")
	assert.NotContains(t, pagePolicy, "unsafe-inline")
	assert.NotContains(t, exportPolicy, "script-src")
}
