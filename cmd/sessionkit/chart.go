package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// The context curve of a session: the context the conversation held after
// every model step, from the usage events the session logs (kind "usage",
// purpose "turn": session.UsageEvent.ContextTokens), with each committed
// compaction (kind "compaction", phase "finished", compacted) marked at the
// step it followed. The log's records are the session package's encoding
// (session/eventlog.go); serve decodes only the fields it draws.

// point is the context after one model step.
type point struct {
	Step   int // 1-based
	Tokens int
}

// marker is one committed compaction on the curve.
type marker struct {
	// Step is how many model steps came before the compaction: the marker
	// stands at that step's point (0: before the first step).
	Step          int
	CompactID     string
	Trigger       string
	Position      int64
	Before, After int
}

// curve is a session's context curve.
type curve struct {
	Points  []point
	Markers []marker
}

// loggedUsage and loggedCompactionEvent are the fields serve reads of the
// log's usage and compaction records.
type loggedUsage struct {
	Purpose       string
	ContextTokens int
}

type loggedCompactionEvent struct {
	CompactID string `json:"compact_id"`
	Trigger   string `json:"trigger"`
	Phase     string `json:"phase"`
	Position  int64  `json:"position"`
	Result    *struct {
		Compacted                   bool
		ContextBefore, ContextAfter int
	} `json:"result"`
}

// eventPage is how many logged events one read of the log takes.
const eventPage = 10000

// readCurve reads session id's event log into its curve.
func readCurve(ctx context.Context, el history.EventLog, id string) (*curve, error) {
	c := &curve{}
	var after uint64
	for {
		evs, err := el.Events(ctx, id, after, eventPage)
		if err != nil {
			return nil, notFound(id, err)
		}
		for _, e := range evs {
			c.add(e)
		}
		if len(evs) < eventPage {
			return c, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// add adds what event e says to the curve (nothing, for most kinds).
func (c *curve) add(e history.LoggedEvent) {
	switch e.Kind {
	case "usage":
		var u loggedUsage
		if json.Unmarshal(e.Data, &u) == nil && u.Purpose == "turn" && u.ContextTokens > 0 {
			c.Points = append(c.Points, point{Step: len(c.Points) + 1, Tokens: u.ContextTokens})
		}
	case "compaction":
		var lc loggedCompactionEvent
		if json.Unmarshal(e.Data, &lc) == nil && lc.Phase == "finished" && lc.Result != nil && lc.Result.Compacted {
			c.Markers = append(c.Markers, marker{Step: len(c.Points), CompactID: lc.CompactID, Trigger: lc.Trigger,
				Position: lc.Position, Before: lc.Result.ContextBefore, After: lc.Result.ContextAfter})
		}
	}
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH          = 900, 240
	chartLeft, chartRight   = 64, 16
	chartTop, chartBottom   = 16, 36
	maxDrawn                = 1000 // points drawn at most; more are thinned to their bucket's highest
	chartPlotW, chartPlotH  = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
	markerR, markerHitWidth = 5, 12
)

// svg draws the curve: the line of points, the threshold as a dashed line,
// and each marker as a link to its compaction in the timeline (link gives
// the URL of a timeline position).
func (c *curve) svg(link func(pos int64) string, threshold int) template.HTML {
	if len(c.Points) == 0 && len(c.Markers) == 0 {
		return template.HTML(`<p class="muted" id="chart-empty">No context figures logged yet: the curve needs the usage events a session logs to a store with an event log.</p>`)
	}
	steps := max(1, len(c.Points))
	top := threshold
	for _, p := range c.Points {
		top = max(top, p.Tokens)
	}
	for _, m := range c.Markers {
		top = max(top, m.Before)
	}
	top = niceCeil(max(top, 10))
	x := func(step int) float64 {
		if steps == 1 {
			return chartLeft + chartPlotW/2
		}
		return chartLeft + float64(step-1)*chartPlotW/float64(steps-1)
	}
	y := func(tokens int) float64 { return chartTop + chartPlotH - float64(tokens)*chartPlotH/float64(top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="chart" class="chart" viewBox="0 0 %d %d" role="img" aria-label="context tokens after every model step, %d steps, %d compactions" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, len(c.Points), len(c.Markers))
	// Axes and ticks.
	fmt.Fprintf(&b, `<g class="axis"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/>`,
		chartLeft, chartTop, chartLeft, chartTop+chartPlotH, chartLeft, chartTop+chartPlotH, chartLeft+chartPlotW, chartTop+chartPlotH)
	for _, t := range []int{0, top / 2, top} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%d</text>`, chartLeft-6, y(t), t)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="start">step 1</text><text x="%d" y="%d" text-anchor="end">step %d</text>`,
		chartLeft, chartH-8, chartLeft+chartPlotW, chartH-8, steps)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">context tokens after each model step</text></g>`, chartLeft+chartPlotW/2, chartH-8)
	if threshold > 0 {
		fmt.Fprintf(&b, `<g class="threshold" id="threshold" data-tokens="%d"><line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/><text x="%d" y="%.1f" text-anchor="start">auto compaction at %d</text></g>`,
			threshold, chartLeft, y(threshold), chartLeft+chartPlotW, y(threshold), chartLeft+6, y(threshold)-5, threshold)
	}
	if len(c.Points) > 0 {
		b.WriteString(`<polyline class="curve" points="`)
		for i, p := range thin(c.Points, maxDrawn) {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(p.Step), y(p.Tokens))
		}
		b.WriteString(`"/>`)
	}
	for _, m := range c.Markers {
		mx := x(max(1, m.Step))
		tokens := m.Before
		if m.Step >= 1 && m.Step <= len(c.Points) {
			tokens = c.Points[m.Step-1].Tokens
		}
		fmt.Fprintf(&b, `<a class="marker" href="%s" data-step="%d" data-compact="%s" data-position="%d">`,
			template.HTMLEscapeString(link(m.Position)), m.Step, template.HTMLEscapeString(m.CompactID), m.Position)
		fmt.Fprintf(&b, `<title>%s compaction %s after step %d: %d tokens before, about %d after</title>`,
			template.HTMLEscapeString(m.Trigger), template.HTMLEscapeString(m.CompactID), m.Step, m.Before, m.After)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke-width="%d" class="hit"/><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><circle cx="%.1f" cy="%.1f" r="%d"/>`,
			mx, chartTop, mx, chartTop+chartPlotH, markerHitWidth, mx, chartTop, mx, chartTop+chartPlotH, mx, y(tokens), markerR)
		if m.After > 0 { // the estimate of the context the compaction left
			fmt.Fprintf(&b, `<circle class="after" cx="%.1f" cy="%.1f" r="%d"/>`, mx, y(m.After), markerR-1)
		}
		b.WriteString(`</a>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// thin keeps at most n points: the highest of each of n buckets, so that
// no peak is lost.
func thin(ps []point, n int) []point {
	if len(ps) <= n {
		return ps
	}
	out := make([]point, 0, n)
	for i := range n {
		lo, hi := i*len(ps)/n, (i+1)*len(ps)/n
		best := ps[lo]
		for _, p := range ps[lo:hi] {
			if p.Tokens > best.Tokens {
				best = p
			}
		}
		out = append(out, best)
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v int) int {
	p := 1
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []int{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
