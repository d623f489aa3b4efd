package main

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
	"github.com/sessionkit/sessionkit/internal/plural"
	"github.com/sessionkit/sessionkit/session"
)

// The pages of sessionkit serve. Every page is rendered on the server from
// what the store holds when the request arrives; nothing is kept between
// requests but a cache of the last sessions' timelines, keyed by the
// session's version and last logged event, so that paging through a long
// session reads it once.

//go:embed web
var webFS embed.FS

// Page sizes (tests make them small).
var (
	sessionsPage = 50  // sessions on a page of the list
	timelinePage = 200 // timeline entries on a page of a session
	searchPage   = 20  // hits on a page of a search
	// filterScan bounds how many sessions a filtered list reads for one
	// page, so that a filter nothing matches on a large store still
	// answers promptly (the page then offers to go on).
	filterScan = 5000
	filterRead = 500 // sessions a filtered list reads at a time
)

// server serves the pages of one store.
type server struct {
	r     *reader
	cfg   serveConfig
	pages map[string]*template.Template
	css   template.CSS // the style sheet, inlined into an exported page
	mux   *http.ServeMux
	h     http.Handler // mux behind guard
	cache viewCache
}

// ServeHTTP implements http.Handler.
func (s *server) ServeHTTP(w http.ResponseWriter, req *http.Request) { s.h.ServeHTTP(w, req) }

// newServer returns the handler of sessionkit serve on r: the pages behind
// guard (serve.go).
func newServer(r *reader, cfg serveConfig) *server {
	s := &server{r: r, cfg: cfg, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	css, err := webFS.ReadFile("web/assets/style.css")
	if err != nil {
		panic(err) // embedded: present in every build
	}
	s.css = template.CSS(css)
	for _, name := range []string{"sessions", "session", "segment", "search", "error", "export"} {
		s.pages[name] = template.Must(template.New("").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html", "web/templates/entry.html", "web/templates/parts.html", "web/templates/"+name+".html"))
	}
	assets, _ := fs.Sub(webFS, "web/assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	s.mux.HandleFunc("GET /{$}", s.handle(s.sessions))
	s.mux.HandleFunc("GET /s/{id}", s.handle(s.session))
	s.mux.HandleFunc("GET /s/{id}/segments/{seg}", s.handle(s.segment))
	s.mux.HandleFunc("GET /s/{id}/search", s.handle(s.search))
	s.mux.HandleFunc("GET /s/{id}/export.json", s.handle(s.exportJSON))
	s.mux.HandleFunc("GET /s/{id}/export.html", s.handle(s.exportHTML))
	s.mux.HandleFunc("GET /s/{id}/events", s.live)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		s.fail(w, req, &httpError{http.StatusNotFound, "no such page: " + req.URL.Path})
	})
	s.h = secured(guard(cfg, s.mux))
	return s
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"showTime":  showTime,
	"costText":  costText,
	"usageRow":  func(name string, t session.UsageTotals) usageRow { return usageRow{Name: name, UsageTotals: t} },
	"oneLine":   oneLine,
	"roleLabel": roleLabel,
	"pathEsc":   pathEsc,
	"add":       func(a, b int) int { return a + b },
	"count":     count, // {{count 1 "Segment"}}: 1 Segment
	"grew":      grew,  // a compaction that did not make the context smaller
	"lines": func(s string) string {
		n := strings.Count(strings.TrimRight(s, "\n"), "\n") + 1
		if s == "" {
			n = 0
		}
		return plural.Count(n, "line")
	},
	// pretty indents a tool call's JSON arguments (as stored when they do
	// not indent).
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return string(raw)
		}
		return b.String()
	},
	"segView": func(id string, i int, seg history.Segment) segmentView {
		return segmentView{SessionID: id, Index: i + 1, Seg: &seg}
	},
}

// count is n (an int or int64) and noun, in the singular for one
// (plural.Count), for the templates.
func count(n any, noun string) (string, error) {
	switch n := n.(type) {
	case int:
		return plural.Count(n, noun), nil
	case int64:
		return plural.Count(int(n), noun), nil
	}
	return "", fmt.Errorf("count: %T is not a number", n)
}

// httpError is an error with the HTTP status it answers with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// handle adapts a page handler: a handler that panics or fails gets the
// error page, with 404 for what the store does not have and 503 for a
// store that cannot be read.
func (s *server) handle(h func(w http.ResponseWriter, req *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Printf("sessionkit serve: %s: panic: %v", req.URL.Path, v)
				s.fail(w, req, fmt.Errorf("internal error: %v", v))
			}
		}()
		if err := h(w, req); err != nil {
			s.fail(w, req, err)
		}
	}
}

// fail writes the error page.
func (s *server) fail(w http.ResponseWriter, req *http.Request, err error) {
	status := http.StatusServiceUnavailable
	msg := "the store cannot be read: " + err.Error()
	var he *httpError
	switch {
	case errors.As(err, &he):
		status, msg = he.status, he.msg
	case errors.Is(err, history.ErrNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, history.ErrInvalid):
		status, msg = http.StatusBadRequest, err.Error()
	case errors.Is(err, context.Canceled):
		return // the client went away
	}
	var b bytes.Buffer
	if terr := s.pages["error"].ExecuteTemplate(&b, "layout", page{Title: "Error", Body: errorView{Status: status, Text: http.StatusText(status), Message: msg}}); terr != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// render writes page name, or the error page when it fails to render
// (nothing is written before it rendered whole).
func (s *server) render(w http.ResponseWriter, name string, p page) error {
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err := w.Write(b.Bytes())
	return err
}

// page is what the layout renders.
type page struct {
	Title string
	// Inline makes the page self-contained: the style sheet inline, no
	// script, no link to the server (an exported session).
	Inline bool
	CSS    template.CSS
	Body   any
}

type errorView struct {
	Status        int
	Text, Message string
}

// sessionRow is one line of the session list.
type sessionRow struct {
	Info     history.SessionInfo
	Active   int
	Archived int64
	Segments int
	Lease    *history.LeaseInfo
}

type sessionsView struct {
	Rows   []sessionRow
	Filter string
	Cursor string // this page's cursor ("" = first)
	Next   string // the next page's cursor, "" = last
	// Scanned is set when a filter stopped reading after filterScan
	// sessions without filling the page.
	Scanned bool
}

// sessions is the list of sessions, newest first, a page at a time; the
// filter keeps those whose ID, title or cwd holds its text (any case).
func (s *server) sessions(w http.ResponseWriter, req *http.Request) error {
	ctx := req.Context()
	q := req.URL.Query()
	v := sessionsView{Filter: strings.TrimSpace(q.Get("q")), Cursor: q.Get("cursor")}
	opts := history.ListOptions{Cursor: v.Cursor, Limit: sessionsPage}
	needle := strings.ToLower(v.Filter)
	if needle != "" {
		opts.Limit = filterRead // a page of matches may take many sessions
	}
	scanned := 0
	for {
		pg, err := s.r.st.ListSessions(ctx, opts)
		if err != nil {
			return err
		}
		for i, info := range pg.Sessions {
			scanned++
			if needle != "" && !strings.Contains(strings.ToLower(info.ID+"\x00"+info.Title+"\x00"+info.Cwd), needle) {
				continue
			}
			row, err := s.row(ctx, info)
			if err != nil {
				return err
			}
			v.Rows = append(v.Rows, row)
			if len(v.Rows) == sessionsPage {
				if i < len(pg.Sessions)-1 {
					v.Next = storekit.ListPosition{UpdatedAt: info.UpdatedAt.UnixNano(), ID: info.ID}.Cursor()
				} else {
					v.Next = pg.Next
				}
				return s.render(w, "sessions", page{Title: "Sessions", Body: v})
			}
		}
		if pg.Next == "" {
			break
		}
		opts.Cursor = pg.Next
		if scanned >= filterScan {
			v.Next, v.Scanned = pg.Next, true
			break
		}
	}
	return s.render(w, "sessions", page{Title: "Sessions", Body: v})
}

// row reads what the list shows of a session beside its SessionInfo: its
// Active and archived counts, its Segments (read only when it has
// archived messages) and who serves it.
func (s *server) row(ctx context.Context, info history.SessionInfo) (sessionRow, error) {
	row := sessionRow{Info: info}
	snap, err := s.r.st.Load(ctx, info.ID)
	if err != nil {
		return row, err
	}
	row.Active, row.Archived = len(snap.Active), snap.Archived
	if snap.Archived > 0 {
		segs, err := s.r.st.Segments(ctx, info.ID)
		if err != nil {
			return row, err
		}
		row.Segments = len(segs)
	}
	row.Lease, err = s.r.served(ctx, info.ID)
	return row, err
}

// setting is one stored setting of a session.
type setting struct{ Name, Value string }

// settingsOf lists the stored settings, sorted by name.
func settingsOf(config json.RawMessage) (out []setting, raw string) {
	var set map[string]any
	if len(config) == 0 {
		return nil, ""
	}
	if json.Unmarshal(config, &set) != nil {
		return nil, string(config)
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		b, _ := json.Marshal(set[k])
		out = append(out, setting{k, string(b)})
	}
	return out, ""
}

// threshold is the automatic compaction threshold the stored settings
// give (as the session computes it), 0 when off.
func threshold(config json.RawMessage) int {
	var set struct {
		Tokens int     `json:"auto_compact_tokens"`
		Window int     `json:"context_window"`
		Ratio  float64 `json:"auto_compact_ratio"`
	}
	if json.Unmarshal(config, &set) != nil {
		return 0
	}
	if set.Tokens > 0 {
		return set.Tokens
	}
	if set.Window > 0 && set.Ratio > 0 {
		return int(float64(set.Window) * set.Ratio)
	}
	return 0
}

// entryView is one timeline entry as a page shows it.
type entryView struct {
	SessionID string
	history.Entry
	Segment *history.Segment // the Segment a completed compaction made
	Live    bool             // rendered for a live update
	Inline  bool             // in an exported page: links stay inside it
}

type sessionView struct {
	Snap        *history.Snapshot
	Lease       *history.LeaseInfo
	Settings    []setting
	RawSettings string
	Threshold   int
	Chart       template.HTML
	Curve       *curve
	Entries     []entryView
	Total       int
	Page, Pages int
	From        int // the first entry's index on this page
	Segments    []history.Segment
	LastSeq     uint64
	Inline      bool
	Usage       *usageView
	// Forks are the stored sessions that are forks of this one.
	Forks []history.SessionInfo
}

// pageOf is the page (1-based) that shows the entry at index i.
func pageOf(i int) int { return i/timelinePage + 1 }

// session is the page of one session.
func (s *server) session(w http.ResponseWriter, req *http.Request) error {
	v, err := s.view(req.Context(), req.PathValue("id"))
	if err != nil {
		return err
	}
	n := len(v.entries)
	pages := max(1, (n+timelinePage-1)/timelinePage)
	p := pages
	if q := req.URL.Query().Get("page"); q != "" {
		p, err = strconv.Atoi(q)
		if err != nil || p < 1 || p > pages {
			return &httpError{http.StatusBadRequest, fmt.Sprintf("page %q: give a number from 1 to %d", q, pages)}
		}
	}
	from, to := (p-1)*timelinePage, min(n, p*timelinePage)
	sv := s.sessionView(v, from, to)
	sv.Page, sv.Pages = p, pages
	if sv.Forks, err = s.forksOf(req.Context(), v.snap.ID); err != nil {
		return err
	}
	return s.render(w, "session", page{Title: "Session " + v.snap.ID, Body: sv})
}

// forksOf lists the stored forks of session id, newest first (every page
// of the store's listing of its forks, ListOptions.ForkOf).
func (s *server) forksOf(ctx context.Context, id string) ([]history.SessionInfo, error) {
	var out []history.SessionInfo
	opts := history.ListOptions{ForkOf: id, Limit: history.MaxListLimit}
	for {
		page, err := s.r.st.ListSessions(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Sessions...)
		if page.Next == "" {
			return out, nil
		}
		opts.Cursor = page.Next
	}
}

// sessionView is the page of a session with entries [from, to).
func (s *server) sessionView(v *view, from, to int) *sessionView {
	sv := &sessionView{Snap: v.snap, Lease: v.lease, Threshold: threshold(v.snap.Config), Curve: v.curve,
		Total: len(v.entries), From: from, Segments: v.segs, LastSeq: v.snap.LastSeq, Page: 1, Pages: 1, Usage: v.usage}
	sv.Settings, sv.RawSettings = settingsOf(v.snap.Config)
	sv.Chart = v.curve.svg(func(pos int64) string { return v.link(pos, false) }, sv.Threshold)
	for i := from; i < to; i++ {
		sv.Entries = append(sv.Entries, v.entryView(i))
	}
	return sv
}

// segmentView is the page of one Segment.
type segmentView struct {
	SessionID string
	Index     int // 1-based, oldest first
	Seg       *history.Segment
}

func (s *server) segment(w http.ResponseWriter, req *http.Request) error {
	id, segID := req.PathValue("id"), req.PathValue("seg")
	v, err := s.view(req.Context(), id)
	if err != nil {
		return err
	}
	for i := range v.segs {
		if v.segs[i].ID == segID {
			return s.render(w, "segment", page{Title: "Segment " + segID, Body: segmentView{SessionID: id, Index: i + 1, Seg: &v.segs[i]}})
		}
	}
	return &httpError{http.StatusNotFound, fmt.Sprintf("session %s has no Segment %q", id, segID)}
}

// searchView is the search page of a session.
type searchView struct {
	SessionID string
	Query     string
	Cursor    string
	Hits      []hitView
	Next      string
}

type hitView struct {
	history.SearchHit
	Snippet template.HTML // the snippet, escaped, matched words marked
	Link    string
}

// search is the store's search across a session's messages (history.Reader.Search).
func (s *server) search(w http.ResponseWriter, req *http.Request) error {
	ctx := req.Context()
	id := req.PathValue("id")
	q := req.URL.Query()
	v := searchView{SessionID: id, Query: q.Get("q"), Cursor: q.Get("cursor")}
	v2, err := s.view(ctx, id)
	if err != nil {
		return err
	}
	if strings.TrimSpace(v.Query) != "" {
		pg, err := s.r.st.Search(ctx, id, history.SearchQuery{Text: v.Query, Limit: searchPage, Cursor: v.Cursor})
		if err != nil {
			return err
		}
		v.Next = pg.Next
		for _, h := range pg.Hits {
			link := v2.link(h.Position, false)
			if h.SegmentID != "" {
				link = fmt.Sprintf("/s/%s/segments/%s#msg-%s", pathEsc(id), pathEsc(h.SegmentID), h.MessageID)
			}
			v.Hits = append(v.Hits, hitView{SearchHit: h, Snippet: markSnippet(h.Snippet), Link: link})
		}
	}
	return s.render(w, "search", page{Title: "Search", Body: v})
}

// markSnippet escapes a snippet and marks its «words».
func markSnippet(s string) template.HTML {
	e := template.HTMLEscapeString(s)
	e = strings.ReplaceAll(e, "«", "<mark>")
	e = strings.ReplaceAll(e, "»", "</mark>")
	if strings.Count(e, "<mark>") != strings.Count(e, "</mark>") {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return template.HTML(e)
}

// exportJSON is the document of `sessionkit export`.
func (s *server) exportJSON(w http.ResponseWriter, req *http.Request) error {
	id := req.PathValue("id")
	var b bytes.Buffer
	if err := runExport(req.Context(), s.r, id, &options{}, &b, io.Discard); err != nil {
		return notFound(id, err)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Disposition", attachment(id, "json"))
	_, err := w.Write(b.Bytes())
	return err
}

// exportHTML is the whole session as one self-contained HTML file: the
// style sheet inline, the chart inline, every entry, no script and no
// link to the server.
func (s *server) exportHTML(w http.ResponseWriter, req *http.Request) error {
	v, err := s.view(req.Context(), req.PathValue("id"))
	if err != nil {
		return err
	}
	sv := s.sessionView(v, 0, len(v.entries))
	sv.Inline = true
	for i := range sv.Entries {
		sv.Entries[i].Inline = true
	}
	sv.Chart = v.curve.svg(func(pos int64) string { return v.link(pos, true) }, sv.Threshold)
	var b bytes.Buffer
	if err := s.pages["export"].ExecuteTemplate(&b, "layout", page{Title: "Session " + v.snap.ID, Inline: true, CSS: s.css, Body: sv}); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Disposition", attachment(v.snap.ID, "html"))
	w.Header().Set("Content-Security-Policy", exportPolicy)
	_, err = w.Write(b.Bytes())
	return err
}

// attachment is a Content-Disposition naming the file session-ID.EXT,
// the ID kept to safe characters.
func attachment(id, ext string) string {
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, id)
	return fmt.Sprintf(`attachment; filename="session-%s.%s"`, safe, ext)
}

// notFound words a missing session as the other commands do.
func notFound(id string, err error) error {
	if errors.Is(err, history.ErrNotFound) {
		return &httpError{http.StatusNotFound, fmt.Sprintf("no session %q in the store", id)}
	}
	return err
}

// view is what the pages of one session read: its snapshot and lease
// (read on every request) and its Segments, timeline and context curve
// (cached while the session's version and last logged event stay).
type view struct {
	snap    *history.Snapshot
	lease   *history.LeaseInfo
	segs    []history.Segment
	entries []history.Entry
	byComp  map[string]*history.Segment
	curve   *curve
	usage   *usageView
}

// link is the URL of the timeline entry at position pos: on its page, or
// (inline) in the same document.
func (v *view) link(pos int64, inline bool) string {
	anchor := fmt.Sprintf("#pos-%d", pos)
	if inline {
		return anchor
	}
	i, _ := slices.BinarySearchFunc(v.entries, pos, func(e history.Entry, p int64) int { return cmp.Compare(e.Position, p) })
	return fmt.Sprintf("/s/%s?page=%d%s", pathEsc(v.snap.ID), pageOf(i), anchor)
}

// index is the index in the timeline of the entry at position pos, -1
// when there is none.
func (v *view) index(pos int64) int {
	i, ok := slices.BinarySearchFunc(v.entries, pos, func(e history.Entry, p int64) int { return cmp.Compare(e.Position, p) })
	if !ok {
		return -1
	}
	return i
}

// pathEsc escapes a path segment.
func pathEsc(s string) string { return url.PathEscape(s) }

// entryView is entry i for a page.
func (v *view) entryView(i int) entryView {
	e := entryView{SessionID: v.snap.ID, Entry: v.entries[i]}
	if c := e.Compaction; c != nil {
		e.Segment = v.byComp[c.CompactID]
	}
	return e
}

// viewCache keeps the last few sessions' views. It is the server's only
// state shared between requests, so a mutex guards it.
type viewCache struct {
	mu    sync.Mutex
	views map[string]*cached
}

type cached struct {
	version, lastSeq uint64
	v                *view
	used             time.Time
}

// cacheSize is how many sessions' views the cache keeps.
const cacheSize = 8

// view reads session id, from the cache when it has not changed.
func (s *server) view(ctx context.Context, id string) (*view, error) {
	snap, err := s.r.st.Load(ctx, id)
	if err != nil {
		return nil, notFound(id, err)
	}
	lease, err := s.r.served(ctx, id)
	if err != nil {
		return nil, err
	}
	s.cache.mu.Lock()
	c := s.cache.views[id]
	if c != nil && c.version == snap.Version && c.lastSeq == snap.LastSeq {
		c.used = time.Now()
		v := *c.v
		s.cache.mu.Unlock()
		v.snap, v.lease = snap, lease
		return &v, nil
	}
	s.cache.mu.Unlock()

	// The Segments, the timeline and the curve are read side by side, each
	// after the snapshot: they are at least as new as its version, so a
	// view cached under it is read again once the version moves on.
	v := &view{snap: snap, lease: lease, byComp: map[string]*history.Segment{}, curve: &curve{}}
	var wg sync.WaitGroup
	var segErr, tlErr, curveErr, usageErr error
	wg.Go(func() { v.segs, segErr = s.r.st.Segments(ctx, id) })
	wg.Go(func() { v.usage, usageErr = readUsage(ctx, s.r.st, id) })
	wg.Go(func() { v.entries, tlErr = s.r.st.Timeline(ctx, id) })
	wg.Go(func() {
		var c *curve
		if c, curveErr = readCurve(ctx, s.r.st, id); curveErr == nil {
			v.curve = c
		}
	})
	wg.Wait()
	if err := errors.Join(segErr, tlErr, curveErr, usageErr); err != nil {
		return nil, notFound(id, err)
	}
	for i := range v.segs {
		v.byComp[v.segs[i].CompactID] = &v.segs[i]
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if s.cache.views == nil {
		s.cache.views = map[string]*cached{}
	}
	if len(s.cache.views) >= cacheSize {
		var oldest string
		for k, c := range s.cache.views {
			if oldest == "" || c.used.Before(s.cache.views[oldest].used) {
				oldest = k
			}
		}
		delete(s.cache.views, oldest)
	}
	s.cache.views[id] = &cached{version: snap.Version, lastSeq: snap.LastSeq, v: v, used: time.Now()}
	return v, nil
}
