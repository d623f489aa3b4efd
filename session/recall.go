package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/plural"
	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/provider"
)

// ErrCannotSearch was the error of Search (and of the recall tool) on a
// session whose store could not search.
//
// Deprecated: every history.Store searches now; nothing returns it.
var ErrCannotSearch = errors.New("session: the store cannot search messages (it implements no history.Searcher)")

// ErrUnknownMessage is wrapped by the error of Messages for a message ID the
// session does not hold, archived or active.
var ErrUnknownMessage = errors.New("session: no such message in the session")

// SearchRequest is one search of a session's messages ([Session.Search]).
type SearchRequest struct {
	// Query is what to find, typically a question ("why did we drop
	// cobra"); it is never parsed as an expression. It must not be blank.
	Query string
	// Limit is the most hits; 0 = history.DefaultSearchLimit; above
	// history.MaxSearchLimit it is history.MaxSearchLimit.
	Limit int
	// Neighbors is how many messages before and after each hit to return
	// with it (SearchHit.Neighbors, history.SearchHit.Neighbors): 0 to
	// history.MaxNeighbors. A question's hit then carries the answer
	// that followed it.
	Neighbors int
}

// SearchHit is one message a search found: the store's hit, which says
// where the message sits (its Segment and the number of the compaction that
// archived it, history.SearchHit.Compaction), and with
// SearchRequest.Neighbors its neighbours (history.SearchHit.Neighbors).
type SearchHit struct {
	history.SearchHit
}

// MessagesRequest asks for the messages around one ([Session.Messages]).
type MessagesRequest struct {
	// Around is the ID of a message of the session, archived or active.
	Around string
	// Before and After are how many messages before and after it to read
	// as well (fewer at the ends of the history); not negative.
	Before, After int
}

// Search searches the session's messages, archived and active, with the
// store's search (history.Reader.Search): the best hits first, each with
// the Segment and the compaction that archived it. With Config.Embedder
// the query is embedded too, and the ranking by words and the store's
// nearest vectors (history.VectorIndex.Nearest) are fused by reciprocal
// rank fusion (docs/compaction.md, "Search with an embedder"); a hit's
// Score is then its fused score, and a hit found by its vector alone has
// the start of the message as its Snippet. When the query cannot be
// embedded, or no message has a vector yet, the ranking is by words, as
// without an embedder. Like Segments it reads
// the store in the caller's goroutine, in one store call (a search never
// holds the session up); it also works after Close while the store is
// open. Errors: ErrInvalid for a blank query, a negative limit or
// Neighbors outside 0..history.MaxNeighbors, ctx's error, or the store's.
func (s *Session) Search(ctx context.Context, req SearchRequest) ([]SearchHit, error) {
	switch {
	case strings.TrimSpace(req.Query) == "":
		return nil, invalid("search query is empty")
	case req.Limit < 0:
		return nil, invalid("search limit %d is negative", req.Limit)
	case req.Neighbors < 0 || req.Neighbors > history.MaxNeighbors:
		return nil, invalid("search Neighbors %d is outside 0..%d", req.Neighbors, history.MaxNeighbors)
	}
	if s.embed != nil {
		if vec := s.embed.queryVector(ctx, req.Query); vec != nil {
			hits, ok, err := s.fusedSearch(ctx, req, vec)
			if err != nil {
				return nil, fmt.Errorf("session: search: %w", err)
			}
			if ok {
				return hits, nil
			}
		}
	}
	page, err := s.store.Search(ctx, s.id, history.SearchQuery{Text: req.Query, Limit: min(req.Limit, history.MaxSearchLimit), Neighbors: req.Neighbors})
	if err != nil {
		return nil, fmt.Errorf("session: search: %w", err)
	}
	hits := make([]SearchHit, len(page.Hits))
	for i, h := range page.Hits {
		hits[i].SearchHit = h
	}
	return hits, nil
}

// Messages reads messages of the session verbatim, archived or active: the
// message req.Around and up to req.Before before and req.After after it, in
// timeline order (as a search hit's MessageID names it, or a pruned tool
// result's line). It reads the window in one store call in the caller's
// goroutine (history.Reader.Window), whose cost grows with the window, not
// with the session. Errors: ErrInvalid for an empty Around or a negative
// bound, an error wrapping ErrInvalid and ErrUnknownMessage for an ID the
// session does not hold, ctx's error, or the store's.
func (s *Session) Messages(ctx context.Context, req MessagesRequest) ([]history.Message, error) {
	w, err := s.window(ctx, req)
	if err != nil {
		return nil, err
	}
	msgs := make([]history.Message, len(w))
	for i := range w {
		msgs[i] = w[i].Message
	}
	return msgs, nil
}

// window is Messages as the store reads it: each message with where it
// sits and the tool a tool result answers.
func (s *Session) window(ctx context.Context, req MessagesRequest) ([]history.WindowMessage, error) {
	switch {
	case req.Around == "":
		return nil, invalid("Messages needs a message ID (Around)")
	case req.Before < 0 || req.After < 0:
		return nil, invalid("Messages: Before (%d) and After (%d) must not be negative", req.Before, req.After)
	}
	q := history.WindowQuery{Around: req.Around, Before: min(req.Before, history.MaxWindow), After: min(req.After, history.MaxWindow)}
	w, err := s.store.Window(ctx, s.id, q)
	if errors.Is(err, history.ErrUnknownMessage) {
		return nil, fmt.Errorf("%w: %w: %q", ErrInvalid, ErrUnknownMessage, req.Around)
	}
	if err != nil {
		return nil, fmt.Errorf("session: read messages: %w", err)
	}
	return w, nil
}

// The recall tool's bounds.
const (
	recallHits          = 5   // hits a query returns
	recallNeighbors     = 1   // messages on each side of a hit it returns
	recallNeighborRunes = 400 // the most of a neighbour's text it shows
)

// recallSpec is how the model is told about the recall tool.
var recallSpec = provider.ToolSpec{
	Name: RecallTool,
	Description: "Searches this conversation's earlier messages, including those a compaction archived and the summary replaced, " +
		`and reads them back verbatim. {"query": "a question or keywords"} returns the best matching messages with their IDs, each with the message before and after it; ` +
		`{"message_id": "ID", "before": 2, "after": 2} returns that message and its neighbours word for word.`,
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"what to find, e.g. a question"},` +
		`"message_id":{"type":"string","description":"the ID of a message to read"},` +
		`"before":{"type":"integer","minimum":0,"maximum":10,"description":"messages before message_id to read too"},` +
		`"after":{"type":"integer","minimum":0,"maximum":10,"description":"messages after message_id to read too"}}}`),
}

// recallArgs are the recall tool's arguments.
type recallArgs struct {
	Query     string `json:"query"`
	MessageID string `json:"message_id"`
	Before    int    `json:"before"`
	After     int    `json:"after"`
}

// recallTool is the built-in tool of Config.Recall: it runs on the
// session's tool goroutine and reads the store through Search and
// Messages, as any caller does. Its searches leave out the messages of
// exclude (the turn's own: the question and the calls asking it, which the
// model has in view).
func (s *Session) recallTool(limit int, exclude map[string]bool) Tool {
	return Tool{
		Name:        recallSpec.Name,
		Description: recallSpec.Description,
		Parameters:  recallSpec.Parameters,
		Run: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a recallArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return "", fmt.Errorf("arguments: %w", err)
			}
			a.Query = strings.TrimSpace(a.Query)
			switch {
			case a.Query != "" && a.MessageID != "":
				return "", errors.New(`give either "query" or "message_id", not both`)
			case a.MessageID != "":
				// The model's window is clamped, so that the message it asked
				// for is never cut off the end of the bounded output.
				before, after := min(a.Before, maxRecallWindow), min(a.After, maxRecallWindow)
				w, err := s.window(ctx, MessagesRequest{Around: a.MessageID, Before: before, After: after})
				if err != nil {
					return "", err
				}
				return bound(recallMessages(a.MessageID, w), limit), nil
			case a.Query != "":
				hits, err := s.Search(ctx, SearchRequest{Query: a.Query, Limit: recallHits + len(exclude), Neighbors: recallNeighbors})
				if err != nil {
					return "", err
				}
				hits = slices.DeleteFunc(hits, func(h SearchHit) bool { return exclude[h.MessageID] })
				for i := range hits {
					dropNeighbors(&hits[i].SearchHit, exclude)
				}
				return bound(recallHitsText(a.Query, hits[:min(len(hits), recallHits)]), limit), nil
			}
			return "", errors.New(`give "query" (what to find) or "message_id" (what to read)`)
		},
	}
}

// recallHitsText is the recall tool's answer to a query.
func recallHitsText(query string, hits []SearchHit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No earlier message matches %q.", query)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s match %q, best first (read one in full with {\"message_id\": ID, \"before\": 2, \"after\": 2}):\n", plural.Count(len(hits), "message"), query)
	for _, h := range hits {
		who := string(h.Role)
		if h.ToolName != "" {
			who = "tool " + h.ToolName
		}
		where := "in the active history"
		if h.SegmentID != "" {
			where = fmt.Sprintf("archived by compaction %d", h.Compaction)
		}
		fmt.Fprintf(&b, "- message %s [%s], %s: %s\n", h.MessageID, who, where, strings.Join(strings.Fields(h.Snippet), " "))
		for k := range h.Neighbors {
			side := "after"
			if k < h.NeighborsBefore {
				side = "before"
			}
			m := &h.Neighbors[k]
			fmt.Fprintf(&b, "  %s it, message %s [%s]: %s\n", side, m.ID, m.Role, neighborText(m))
		}
	}
	return b.String()
}

// neighborText is a neighbour of a hit as the recall tool shows it: its
// text on one line, cut to recallNeighborRunes, or the tools it called.
func neighborText(m *history.Message) string {
	text := strings.Join(strings.Fields(m.Text), " ")
	if text == "" {
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Name)
		}
		if len(calls) > 0 {
			return "(called " + strings.Join(calls, ", ") + ")"
		}
	}
	if kept, cut := textcut.Runes(text, recallNeighborRunes); cut {
		return kept + "…"
	}
	return text
}

// dropNeighbors removes the messages of exclude from h's neighbours.
func dropNeighbors(h *history.SearchHit, exclude map[string]bool) {
	var kept []history.Message
	before := 0
	for k, m := range h.Neighbors {
		if exclude[m.ID] {
			continue
		}
		if k < h.NeighborsBefore {
			before++
		}
		kept = append(kept, m)
	}
	h.Neighbors, h.NeighborsBefore = kept, before
}

// recallMessages is the recall tool's answer to a read: each message with
// its ID and role, verbatim (a user message's attachments as the model
// first read them, images named).
func recallMessages(around string, w []history.WindowMessage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s around message %s, verbatim:\n", plural.Count(len(w), "message"), around)
	for i := range w {
		m := &w[i].Message
		switch m.Role {
		case history.RoleTool:
			name := w[i].ToolName
			if name == "" {
				name = "a tool"
			}
			fmt.Fprintf(&b, "\n[message %s, result of %s]\n%s\n", m.ID, name, m.Text)
		default:
			// A user message's attachments read as text where they stand
			// (an image named, not sent again).
			fmt.Fprintf(&b, "\n[message %s, %s]\n%s\n", m.ID, m.Role, provider.Content(m, false)[0].Text)
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "(called %s %s)\n", c.Name, c.Arguments)
			}
		}
	}
	return b.String()
}

// maxRecallWindow bounds the messages a recall read takes on each side
// of the one it names (the schema says so too).
const maxRecallWindow = 10

// bound cuts a tool's text to at most limit bytes, the note that says so
// included.
func bound(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	note := func(cut int) string {
		return fmt.Sprintf("\n… cut at %d of %d bytes (MaxToolOutput): read fewer messages", cut, len(text))
	}
	cut := max(0, limit-len(note(limit))) // the note of any cut ≤ limit is no longer
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + note(cut)
}

// recallLimit is the bound of the recall tool's output.
func (l *loop) recallLimit() int {
	if l.maxTool > 0 {
		return l.maxTool
	}
	return compact.DefaultMaxToolOutput
}

// requestTools are the tools a turn request offers: those of Config.Tools
// that are offered now (Tool.Offered), and recall when it is on.
func (l *loop) requestTools() []provider.ToolSpec {
	specs := l.offeredSpecs()
	if !l.set.Recall {
		return specs
	}
	return append(slices.Clip(specs), recallSpec)
}

// offeredSpecs are the specs of Config.Tools without those whose Offered
// reports false; l.specs itself when none is left out.
func (l *loop) offeredSpecs() []provider.ToolSpec {
	var out []provider.ToolSpec
	for i, sp := range l.specs {
		if f := l.tools[sp.Name].Offered; f != nil && !f() {
			if out == nil {
				out = make([]provider.ToolSpec, i, len(l.specs))
				copy(out, l.specs[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, sp)
		}
	}
	if out == nil {
		return l.specs
	}
	return out
}

// runnable are the tools a turn may run now.
func (l *loop) runnable() map[string]Tool {
	if !l.set.Recall {
		return l.tools
	}
	m := make(map[string]Tool, len(l.tools)+1)
	for k, v := range l.tools {
		m[k] = v
	}
	exclude := map[string]bool{}
	if l.turn != nil {
		for _, msg := range l.turn.messages {
			exclude[msg.ID] = true
		}
	}
	m[RecallTool] = l.s.recallTool(l.recallLimit(), exclude)
	return m
}

// requestSummary is the retained summary as a turn request carries it:
// followed by the files read and changed before it (filesNote), and with
// Recall on by a line that says how many earlier messages are archived
// and searchable.
//
// With a plan (Config.Plan) whose last call is no longer in Active (a
// compaction archived it), the plan follows: the model never loses it
// to a summary. Once the model calls the tool again, Active has the plan
// and the summary is sent without it.
func (l *loop) requestSummary() string {
	s := l.summary
	if s == "" {
		return ""
	}
	if l.filesNote != "" {
		s += "\n\n" + l.filesNote
	}
	if l.set.Recall && l.archived > 0 {
		s += "\n\n" + archiveNote(l.archived)
	}
	if len(l.set.Plan) > 0 && l.activePlans == 0 {
		s += "\n\n" + planText(l.set.Plan)
	}
	return s
}

// archiveNote is the line after the retained summary in a turn request of a
// session with Config.Recall: n earlier messages are archived and
// searchable with the recall tool.
func archiveNote(n int64) string {
	noun := "messages are"
	if n == 1 {
		noun = "message is"
	}
	// Short: it is in every request (the tool's description says how).
	return fmt.Sprintf("(%d earlier %s archived and searchable with %s.)", n, noun, RecallTool)
}

// requestMessages are Active as a turn request carries it: with
// Config.PruneToolResults, old long tool results replaced (see
// [PruneConfig]); Active itself is never changed.
func (l *loop) requestMessages() []history.Message {
	msgs := l.shareActive(len(l.active))
	if l.prune.KeepRecent <= 0 {
		return msgs
	}
	return prune(msgs, l.prune, l.set.Recall)
}

// prune returns msgs as a turn request carries them with p (see
// [PruneConfig]): msgs itself when nothing is pruned, else a copy in which
// each pruned tool result's text is one line naming the tool, the size and
// the message ID (and, with recall, how to read it back).
func prune(msgs []history.Message, p PruneConfig, recall bool) []history.Message {
	k := p.KeepRecent
	if k <= 0 {
		return msgs
	}
	var results []int
	for i := range msgs {
		if msgs[i].Role == history.RoleTool {
			results = append(results, i)
		}
	}
	// The oldest results, a multiple of k of them, leaving at least k.
	n := 0
	if len(results) >= 2*k {
		n = (len(results) - k) / k * k
	}
	if n == 0 {
		return msgs
	}
	names := map[string]string{}
	var out []history.Message
	next := 0
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			names[c.ID] = c.Name
		}
		if next >= n || i != results[next] {
			continue
		}
		next++
		m := &msgs[i]
		if len(m.Text) <= p.MinBytes {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i].Text = prunedLine(names[m.ToolCallID], m, recall)
	}
	if out == nil {
		return msgs
	}
	return out
}

// prunedLine is what a turn request carries for a pruned tool result m.
func prunedLine(tool string, m *history.Message, recall bool) string {
	if tool == "" {
		tool = "a tool"
	}
	line := fmt.Sprintf("[pruned from this request: the result of %s, %d bytes, message %s", tool, len(m.Text), m.ID)
	if recall {
		return line + fmt.Sprintf(`; {"message_id": %q} with the %s tool reads it back]`, m.ID, RecallTool)
	}
	return line + "]"
}
