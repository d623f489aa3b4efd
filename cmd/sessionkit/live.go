package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/logref"
)

// Live updates: a session's page follows the store's event log
// (history.EventLog) through server-sent events. Every poll reads the
// events logged after the last one sent; when there are some, the page
// gets the timeline entries they name rendered as on the page (a message,
// a compaction as it starts and as it finishes, with its summary, an
// undo), the chart drawn again, and who serves the session. No
// connection to the agent is needed: the store is all serve reads.

// livePoll is how often a live page reads the event log (tests shorten it).
var livePoll = 500 * time.Millisecond

// liveUpdate is one server-sent event of a live page.
type liveUpdate struct {
	Seq     uint64    `json:"seq"`
	Rows    []liveRow `json:"rows"`
	Chart   string    `json:"chart"`
	Served  string    `json:"served"` // the lease holder, "" when nobody serves it
	Entries int       `json:"entries"`
}

// liveRow is one timeline entry, rendered.
type liveRow struct {
	Pos  int64  `json:"pos"`
	HTML string `json:"html"`
}

// loggedPosition is the timeline position a logged compaction or undo
// names ("position"; an undo is logged as "Position", which the decoder
// matches as well).
type loggedPosition struct {
	Position *int64 `json:"position"`
}

// loggedAt is the timeline position logged event e (a message, a
// compaction or an undo) names; false when it names none. A message is
// logged as a reference (internal/logref), the others as JSON.
func loggedAt(e history.LoggedEvent) (int64, bool) {
	if e.Kind == "message" {
		r, err := logref.Parse(e.Data)
		return r.Position, err == nil
	}
	var lp loggedPosition
	if json.Unmarshal(e.Data, &lp) != nil || lp.Position == nil {
		return 0, false
	}
	return *lp.Position, true
}

// live streams the updates of session id after ?after=SEQ.
func (s *server) live(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	id := req.PathValue("id")
	el := s.r.st
	// A reconnecting EventSource names the last event it got.
	from := req.URL.Query().Get("after")
	if last := req.Header.Get("Last-Event-ID"); last != "" {
		from = last
	}
	after, err := strconv.ParseUint(from, 10, 64)
	if err != nil && from != "" {
		s.fail(w, req, &httpError{http.StatusBadRequest, "after: give the sequence number of the last event seen"})
		return
	}
	if _, err := s.r.st.Load(ctx, id); err != nil {
		s.fail(w, req, notFound(id, err))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, "retry: 2000\n\n")
	_ = rc.Flush()
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	idle := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		evs, err := el.Events(ctx, id, after, eventPage)
		if err != nil {
			if ctx.Err() == nil {
				sendEvent(w, rc, "failure", map[string]string{"error": "the store cannot be read: " + err.Error()})
			}
			return
		}
		if len(evs) == 0 {
			if idle++; idle%30 == 0 {
				_, _ = fmt.Fprint(w, ": idle\n\n") // finds a client that went away
				if rc.Flush() != nil {
					return
				}
			}
			continue
		}
		after = evs[len(evs)-1].Seq
		up, err := s.update(req, id, evs)
		if err != nil {
			if ctx.Err() == nil {
				sendEvent(w, rc, "failure", map[string]string{"error": "the store cannot be read: " + err.Error()})
			}
			return
		}
		up.Seq = after
		if _, err := fmt.Fprintf(w, "id: %d\n", after); err != nil || !sendEvent(w, rc, "update", up) {
			return
		}
	}
}

// update renders what evs changed on the page of session id.
func (s *server) update(req *http.Request, id string, evs []history.LoggedEvent) (*liveUpdate, error) {
	v, err := s.view(req.Context(), id)
	if err != nil {
		return nil, err
	}
	up := &liveUpdate{Entries: len(v.entries)}
	if v.lease != nil {
		up.Served = v.lease.Holder
	}
	seen := map[int64]bool{}
	tmpl := s.pages["session"]
	for _, e := range evs {
		switch e.Kind {
		case "message", "compaction", "uncompact":
		default:
			continue
		}
		pos, ok := loggedAt(e)
		if !ok || pos < 0 || seen[pos] {
			continue
		}
		seen[pos] = true
		i := v.index(pos)
		if i < 0 {
			continue
		}
		ev := v.entryView(i)
		ev.Live = true
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, "entry", ev); err != nil {
			return nil, err
		}
		up.Rows = append(up.Rows, liveRow{Pos: pos, HTML: b.String()})
	}
	up.Chart = string(v.curve.svg(func(pos int64) string { return v.link(pos, false) }, threshold(v.snap.Config)))
	return up, nil
}

// sendEvent writes one server-sent event; false when the client is gone.
func sendEvent(w http.ResponseWriter, rc *http.ResponseController, name string, v any) bool {
	data, err := json.Marshal(v)
	if err != nil {
		return false
	}
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return false
	}
	return rc.Flush() == nil
}
