package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/plural"
)

// timeFormat is how the text output shows times.
const timeFormat = "2006-01-02 15:04:05"

func showTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(timeFormat)
}

// listPage is the page size of runSessions (tests make it small).
var listPage = history.MaxListLimit

// runSessions lists the sessions, newest first, page by page through
// history.Lister.
func runSessions(ctx context.Context, r *reader, _ string, o *options, stdout, _ io.Writer) error {
	var list []sessionJSON
	opts := history.ListOptions{Cwd: o.cwd, Limit: listPage}
	for {
		page, err := r.st.ListSessions(ctx, opts)
		if err != nil {
			return err
		}
		for _, info := range page.Sessions {
			if o.limit > 0 && len(list) == o.limit {
				break
			}
			s := sessionJSON{ID: info.ID, Title: text(info.Title), Cwd: text(info.Cwd), CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt, Messages: info.Messages,
				ForkOf: info.ForkOf, ForkAt: info.ForkAt}
			if snap, err := r.st.Load(ctx, info.ID); err == nil {
				s.Active, s.Archived = len(snap.Active), snap.Archived
			} else {
				return err
			}
			lease, err := r.served(ctx, info.ID)
			if err != nil {
				return err
			}
			s.ServedBy = toLease(lease)
			list = append(list, s)
		}
		if page.Next == "" || o.limit > 0 && len(list) == o.limit {
			break
		}
		opts.Cursor = page.Next
	}
	if o.json {
		if list == nil {
			list = []sessionJSON{}
		}
		return writeJSON(stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no sessions")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tMESSAGES\tACTIVE\tARCHIVED\tSERVED BY\tTITLE\tCWD")
	for _, row := range forkTree(list) {
		s := row.s
		served := "-"
		if s.ServedBy != nil {
			served = s.ServedBy.Holder
		}
		id := s.ID
		if row.depth > 0 {
			id = strings.Repeat("  ", row.depth-1) + "└ " + id + " (fork at " + orDash(s.ForkAt) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", id, showTime(s.UpdatedAt), s.Messages, s.Active, s.Archived,
			served, oneLine(string(s.Title), 60), orDash(string(s.Cwd)))
	}
	return tw.Flush()
}

// treeRow is one line of the sessions table: a session and how deep it
// is among the forks of a listed source (0: no fork of one listed).
type treeRow struct {
	s     *sessionJSON
	depth int
}

// forkTree orders list (newest first) so that each fork follows its source,
// its own forks after it, newest first among siblings; a fork whose
// source is not listed (deleted, or on another page) stands on its own.
func forkTree(list []sessionJSON) []treeRow {
	listed := make(map[string]bool, len(list))
	for _, s := range list {
		listed[s.ID] = true
	}
	forks := map[string][]*sessionJSON{}
	for i := range list {
		if s := &list[i]; s.ForkOf != "" && listed[s.ForkOf] && s.ForkOf != s.ID {
			forks[s.ForkOf] = append(forks[s.ForkOf], s)
		}
	}
	var out []treeRow
	seen := map[string]bool{}
	var add func(s *sessionJSON, depth int)
	add = func(s *sessionJSON, depth int) {
		if seen[s.ID] {
			return
		}
		seen[s.ID] = true
		out = append(out, treeRow{s, depth})
		for _, f := range forks[s.ID] {
			add(f, depth+1)
		}
	}
	for i := range list {
		if s := &list[i]; s.ForkOf == "" || !listed[s.ForkOf] {
			add(s, 0)
		}
	}
	for i := range list { // a cycle cannot be stored; list anything left all the same
		add(&list[i], 0)
	}
	return out
}

// runShow prints a session's settings, retained summary and Active history.
func runShow(ctx context.Context, r *reader, id string, o *options, stdout, stderr io.Writer) error {
	snap, lease, err := r.load(ctx, id, stderr)
	if err != nil {
		return err
	}
	usage, err := readUsage(ctx, r.st, id)
	if err != nil {
		return err
	}
	if o.json {
		out := toShow(snap, lease)
		out.Usage = toUsage(usage)
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "session   %s\n", snap.ID)
	fmt.Fprintf(stdout, "title     %s\n", orDash(snap.Title))
	fmt.Fprintf(stdout, "cwd       %s\n", orDash(snap.Cwd))
	if snap.ForkOf != "" {
		fmt.Fprintf(stdout, "fork of   %s at message %s (its timeline position %d)\n", snap.ForkOf, orDash(snap.ForkAt), snap.ForkPosition)
	}
	if lease != nil {
		fmt.Fprintf(stdout, "served    by %s (lease expires %s unless renewed)\n", lease.Holder, showTime(lease.Expires))
	} else {
		fmt.Fprintln(stdout, "served    no")
	}
	fmt.Fprintf(stdout, "messages  %d active, %d archived\n", len(snap.Active), snap.Archived)
	segs, err := readAll(ctx, r, id, stderr, r.st.Segments)
	if err != nil {
		return err
	}
	for i := range segs {
		if s := &segs[i]; grew(s) {
			fmt.Fprintf(stdout, "GREW      compaction %s (segment %d, %s) grew the context: %d tokens before, about %d after\n", s.CompactID, i+1, s.Trigger, s.ContextBefore, s.ContextAfter)
		}
	}
	fmt.Fprintln(stdout, "\nusage (every provider response, compactions included)")
	printUsage(stdout, usage)
	fmt.Fprintln(stdout, "\nsettings")
	printSettings(stdout, snap.Config)
	fmt.Fprintln(stdout, "\nretained summary")
	if snap.Summary == "" {
		fmt.Fprintln(stdout, "  (none: the session was never compacted)")
	} else {
		fmt.Fprintln(stdout, indent(snap.Summary, "  "))
	}
	fmt.Fprintf(stdout, "\nactive history (%s)\n", plural.Count(len(snap.Active), "message"))
	for i := range snap.Active {
		printMessage(stdout, &snap.Active[i], "  ")
	}
	return nil
}

// printSettings prints the stored settings, one per line, sorted by name.
func printSettings(w io.Writer, config json.RawMessage) {
	var set map[string]any
	if len(config) == 0 || json.Unmarshal(config, &set) != nil || len(set) == 0 {
		if len(config) > 0 && set == nil {
			fmt.Fprintf(w, "  %s\n", config) // not an object: as stored
			return
		}
		fmt.Fprintln(w, "  (none stored: the defaults of the program that serves it)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v, _ := json.Marshal(set[k])
		fmt.Fprintf(tw, "  %s\t%s\n", k, v)
	}
	_ = tw.Flush()
}

// readAll loads session id (load reports its state on stderr), then reads
// its list through get.
func readAll[T any](ctx context.Context, r *reader, id string, stderr io.Writer, get func(context.Context, string) ([]T, error)) ([]T, error) {
	if _, _, err := r.load(ctx, id, stderr); err != nil {
		return nil, err
	}
	return get(ctx, id)
}

// writeJSONList writes items as a JSON array of their conv values.
func writeJSONList[T, J any](w io.Writer, items []T, conv func(*T) J) error {
	out := make([]J, len(items))
	for i := range items {
		out[i] = conv(&items[i])
	}
	return writeJSON(w, out)
}

// runSegments prints each Segment of a session: its trigger, when it was
// made, the token figures of its summary call, its summary and, with
// --messages, the archived messages verbatim.
func runSegments(ctx context.Context, r *reader, id string, o *options, stdout, stderr io.Writer) error {
	segs, err := readAll(ctx, r, id, stderr, r.st.Segments)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSONList(stdout, segs, func(s *history.Segment) segmentJSON {
			out := toSegment(s)
			if !o.messages {
				out.Messages = nil
			}
			return out
		})
	}
	if len(segs) == 0 {
		fmt.Fprintf(stdout, "session %s has no Segments: it was never compacted\n", id)
		return nil
	}
	for i := range segs {
		s := &segs[i]
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "segment %d  %s  trigger=%s  compaction=%s  position=%d\n", i+1, s.ID, s.Trigger, s.CompactID, s.Position)
		fmt.Fprintf(stdout, "  when      started %s, committed %s\n", showTime(s.StartedAt), showTime(s.CreatedAt))
		fmt.Fprintf(stdout, "  archived  %s\n", plural.Count(len(s.Messages), "message"))
		fmt.Fprintf(stdout, "  tokens    summary call: %d input, %d output\n", s.InputTokens, s.OutputTokens)
		if s.ContextBefore > 0 || s.ContextAfter > 0 {
			fmt.Fprintf(stdout, "  context   %d tokens before, about %d after%s\n", s.ContextBefore, s.ContextAfter, grewNote(s))
		}
		if s.SummaryProvider != "" {
			fmt.Fprintf(stdout, "  summary by %s (%s)\n", s.SummaryProvider, s.SummaryModel)
		}
		if line := fidelityLine(s.Fidelity); line != "" {
			fmt.Fprintln(stdout, line)
		}
		if line := filesLine(s.Files); line != "" {
			fmt.Fprintln(stdout, line)
		}
		if s.Undone() {
			fmt.Fprintf(stdout, "  undone    %s: its messages are active again\n", showTime(s.UndoneAt))
		}
		if s.Instructions != "" {
			fmt.Fprintf(stdout, "  instructions  %s\n", oneLine(s.Instructions, 100))
		}
		fmt.Fprintln(stdout, "  summary")
		fmt.Fprintln(stdout, indent(s.Summary, "    "))
		if o.messages {
			fmt.Fprintln(stdout, "  messages")
			for j := range s.Messages {
				printMessageVerbatim(stdout, &s.Messages[j], "    ")
			}
		}
	}
	return nil
}

// grew reports a compaction that did not make the context smaller: its
// estimate after is not below the provider's figure before (both known).
func grew(s *history.Segment) bool {
	return s.ContextBefore > 0 && s.ContextAfter >= s.ContextBefore
}

// grewNote is what segments adds to the context line of a compaction
// that grew the context.
func grewNote(s *history.Segment) string {
	if !grew(s) {
		return ""
	}
	return "  GREW: the summary is longer than what it archived"
}

// runTimeline prints every message and compaction in timeline order.
func runTimeline(ctx context.Context, r *reader, id string, o *options, stdout, stderr io.Writer) error {
	entries, err := readAll(ctx, r, id, stderr, r.st.Timeline)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSONList(stdout, entries, toEntry)
	}
	for i := range entries {
		e := &entries[i]
		if m := e.Message; m != nil {
			where := "active"
			if e.Archived {
				where = "archived" // in a Segment
			}
			fmt.Fprintf(stdout, "%5d %-8s ", e.Position, where)
			printMessage(stdout, m, "")
			continue
		}
		if u := e.Uncompaction; u != nil {
			fmt.Fprintf(stdout, "%5d %-8s uncompaction %s of %s: %s restored\n", e.Position, "", u.ID, u.CompactID, plural.Count(u.Restored, "message"))
			continue
		}
		if cf := e.Config; cf != nil {
			fmt.Fprintf(stdout, "%5d %-8s settings %s\n", e.Position, "", oneLine(string(cf.Data), 100))
			continue
		}
		c := e.Compaction
		line := fmt.Sprintf("%5d %-8s compaction %-9s %-6s %s", e.Position, "", string(c.Status), c.Trigger, c.CompactID)
		switch {
		case c.Error != "":
			line += ": " + oneLine(c.Error, 80)
		case c.Summary != "":
			line += ": " + oneLine(c.Summary, 80)
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// runExport writes the whole session as one JSON document.
func runExport(ctx context.Context, r *reader, id string, _ *options, stdout, stderr io.Writer) error {
	snap, lease, err := r.load(ctx, id, stderr)
	if err != nil {
		return err
	}
	segs, err := r.st.Segments(ctx, id)
	if err != nil {
		return err
	}
	entries, err := r.st.Timeline(ctx, id)
	if err != nil {
		return err
	}
	doc := exportJSON{Format: exportFormat, showJSON: toShow(snap, lease), Segments: make([]segmentJSON, len(segs)), Timeline: make([]entryJSON, len(entries))}
	for i := range segs {
		doc.Segments[i] = toSegment(&segs[i])
	}
	for i := range entries {
		doc.Timeline[i] = toEntry(&entries[i])
	}
	return writeJSON(stdout, doc)
}

// printMessage prints a message on one line: its role, text and tool calls.
func printMessage(w io.Writer, m *history.Message, prefix string) {
	var b strings.Builder
	if m.ToolCallID != "" {
		fmt.Fprintf(&b, "[%s] ", m.ToolCallID)
	}
	b.WriteString(m.Text)
	for _, c := range m.ToolCalls {
		fmt.Fprintf(&b, " → %s(%s)", c.Name, c.Arguments)
	}
	for i := range m.Attachments {
		fmt.Fprintf(&b, " %s", attachmentLabel(&m.Attachments[i]))
	}
	fmt.Fprintf(w, "%s%-9s %s\n", prefix, roleLabel(m), oneLine(b.String(), 110))
}

// roleLabel is "steer" for a steer, else the message's role.
func roleLabel(m *history.Message) string {
	if m.Steer {
		return "steer"
	}
	return string(m.Role)
}

// printMessageVerbatim prints a message whole: a header line, then its text
// and tool calls as stored.
func printMessageVerbatim(w io.Writer, m *history.Message, prefix string) {
	head := fmt.Sprintf("%s── %s %s", prefix, m.Role, m.ID)
	if m.Steer {
		head += " (steer)"
	}
	if m.ToolCallID != "" {
		head += " answers " + m.ToolCallID
	}
	fmt.Fprintf(w, "%s  %s\n", head, showTime(m.CreatedAt))
	if m.Text != "" {
		fmt.Fprintln(w, indent(m.Text, prefix+"   "))
	}
	for _, c := range m.ToolCalls {
		fmt.Fprintf(w, "%s   → %s %s %s\n", prefix, c.ID, c.Name, c.Arguments)
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		fmt.Fprintf(w, "%s   + at %d %s\n", prefix, a.At, attachmentLabel(a))
		if a.Kind == history.AttachResource && a.Text != "" {
			fmt.Fprintln(w, indent(a.Text, prefix+"     "))
		}
	}
}

// attachmentLabel names an attachment on one line: "[link: name, uri]",
// "[resource: uri]" or "[image: mime, N bytes]".
func attachmentLabel(a *history.Attachment) string {
	switch a.Kind {
	case history.AttachLink:
		return fmt.Sprintf("[link: %s, %s]", a.Name, a.URI)
	case history.AttachResource:
		return fmt.Sprintf("[resource: %s]", a.URI)
	case history.AttachImage:
		return fmt.Sprintf("[image: %s, %d bytes]", a.MIMEType, len(a.Data))
	}
	return fmt.Sprintf("[%s]", a.Kind)
}

// oneLine makes s one line, runs of white space one space, cut to n runes
// (the last one "…" when cut).
func oneLine(s string, n int) string {
	var b strings.Builder
	runes := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			word = " " + word
		}
		if k := utf8.RuneCountInString(word); runes+k > n {
			b.WriteString(string([]rune(word)[:max(0, n-1-runes)]) + "…")
			return b.String()
		} else {
			runes += k
		}
		b.WriteString(word)
	}
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
