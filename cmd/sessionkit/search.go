package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sessionkit/sessionkit/history"
)

// searchHitJSON is one hit of search --json.
type searchHitJSON struct {
	MessageID string       `json:"message_id"`
	SegmentID string       `json:"segment_id,omitempty"` // "" while Active
	Position  int64        `json:"position"`
	Role      history.Role `json:"role"`
	ToolName  string       `json:"tool_name,omitempty"`
	Snippet   text         `json:"snippet"`
	Score     float64      `json:"score"`
}

// fidelityJSON is a Segment's fidelity in segments --json and export.
type fidelityJSON struct {
	Facts   int    `json:"facts"`
	Kept    int    `json:"kept"`
	Missing []text `json:"missing"`
}

func toFidelity(f history.Fidelity) fidelityJSON {
	out := fidelityJSON{Facts: f.Facts, Kept: f.Kept, Missing: make([]text, len(f.Missing))}
	for i, m := range f.Missing {
		out.Missing[i] = text(m)
	}
	return out
}

// fidelityLine is a Segment's fidelity in the text output of segments, ""
// when none was recorded.
func fidelityLine(f history.Fidelity) string {
	if f.Facts == 0 {
		return ""
	}
	line := fmt.Sprintf("  fidelity  the summary kept %d of %d facts", f.Kept, f.Facts)
	if len(f.Missing) > 0 {
		quoted := make([]string, len(f.Missing))
		for i, m := range f.Missing {
			quoted[i] = oneLine(m, 60)
		}
		line += "; missing: " + strings.Join(quoted, ", ")
	}
	return line
}

// runSearch prints the messages of a session, archived or Active, that
// hold words of the query, best first (history.Reader.Search): at most --limit
// hits (default history.DefaultSearchLimit).
func runSearch(ctx context.Context, r *reader, id string, o *options, stdout, stderr io.Writer) error {
	if _, _, err := r.load(ctx, id, stderr); err != nil {
		return err
	}
	want := o.limit
	if want == 0 {
		want = history.DefaultSearchLimit
	}
	var hits []history.SearchHit
	q := history.SearchQuery{Text: o.query}
	for len(hits) < want {
		q.Limit = min(want-len(hits), history.MaxSearchLimit)
		page, err := r.st.Search(ctx, id, q)
		if err != nil {
			return err
		}
		hits = append(hits, page.Hits...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if o.json {
		return writeJSONList(stdout, hits, func(h *history.SearchHit) searchHitJSON {
			return searchHitJSON{MessageID: h.MessageID, SegmentID: h.SegmentID, Position: h.Position, Role: h.Role, ToolName: h.ToolName, Snippet: text(h.Snippet), Score: h.Score}
		})
	}
	if len(hits) == 0 {
		fmt.Fprintf(stdout, "no message of session %s holds a word of %q\n", id, o.query)
		return nil
	}
	for i := range hits {
		h := &hits[i]
		where := "active"
		if h.SegmentID != "" {
			where = "archived in " + h.SegmentID
		}
		role := string(h.Role)
		if h.ToolName != "" {
			role += " (" + h.ToolName + ")"
		}
		fmt.Fprintf(stdout, "%2d. %s  %s  %s  position %d  score %.2f\n", i+1, h.MessageID, role, where, h.Position, h.Score)
		fmt.Fprintf(stdout, "    %s\n", oneLine(h.Snippet, 300))
	}
	return nil
}

// maxFilesShown bounds the paths filesLine names.
const maxFilesShown = 12

// filesLine is the line of a Segment's files in `segments`: the changed
// ones, then the ones only read, newest first, at most maxFilesShown
// paths; "" for none.
func filesLine(files []history.FileState) string {
	if len(files) == 0 {
		return ""
	}
	var changed, read []string
	for i := range files {
		if len(changed)+len(read) == maxFilesShown {
			break
		}
		p := oneLine(files[i].Path, 80)
		if files[i].Changed {
			changed = append(changed, p)
		} else {
			read = append(read, p)
		}
	}
	var parts []string
	if len(changed) > 0 {
		parts = append(parts, "changed "+strings.Join(changed, ", "))
	}
	if len(read) > 0 {
		parts = append(parts, "read "+strings.Join(read, ", "))
	}
	line := "  files     " + strings.Join(parts, "; ")
	if n := len(files) - len(changed) - len(read); n > 0 {
		line += fmt.Sprintf("; and %d more", n)
	}
	return line
}
