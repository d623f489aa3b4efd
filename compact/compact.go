// Package compact is the compaction composer: it decides what a compaction
// archives ([Plan]) and produces the summary that replaces it
// ([Composer.Summarize]). Manual and automatic compaction share it
// (SEMANTICS §4); the session package runs it and commits the result.
//
//	plan := compact.PlanFor(active)
//	if plan.K == 0 {
//		// nothing_to_compact
//	}
//	c := &compact.Composer{Provider: p}
//	sum, err := c.Summarize(ctx, compact.Input{
//		PreviousSummary: summary,
//		Prefix:          active[:plan.Archive],
//	}, func(delta string) { fmt.Print(delta) })
//
// # The algorithm
//
// n is the number of Active messages whose role is user or assistant; tool
// messages are not counted. k = floor(n/2). The prefix is everything before
// the (k+1)-th counted message, so it holds the k oldest user and assistant
// messages and the tool results among them, and never separates a tool call
// from its results.
//
// # The summary call
//
// Summarize makes exactly one provider request with purpose
// [provider.PurposeSummary]. Its system prompt is the embedded summarizer
// prompt (summarizer.md); its one user message, the request's Input, holds
// the previous summary, the prefix rendered as a transcript (tool outputs
// cut to a bounded size), and the configured and per-request instructions
// (see [Composer.Request]); it is rendered on demand, never held whole by a
// streaming provider. The session's own system prompt and tool definitions
// are never part of it. A reply that is empty or only white space is an
// error: no fallback summary exists.
package compact

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Plan is what a compaction of a given Active would archive.
type Plan struct {
	N       int // user and assistant messages in Active
	K       int // floor(N/2): user and assistant messages archived
	Archive int // messages archived: the prefix length, tool messages included
}

// PlanFor computes the plan for active (SEMANTICS §4.1-§4.3). It is pure and
// runs in O(len(active)).
func PlanFor(active []history.Message) Plan {
	p := Plan{}
	for i := range active {
		if active[i].Counted() {
			p.N++
		}
	}
	p.K = p.N / 2
	if p.K == 0 {
		return p
	}
	seen := 0
	for i := range active {
		if !active[i].Counted() {
			continue
		}
		if seen == p.K {
			p.Archive = i
			return p
		}
		seen++
	}
	// Unreachable: K < N, so a (K+1)-th counted message exists.
	p.Archive = len(active)
	return p
}

// DefaultMaxToolOutput is how many characters of one tool output the
// transcript keeps when Composer.MaxToolOutput is zero.
const DefaultMaxToolOutput = 2000

// ErrEmptySummary is returned when the model's summary is empty or white space.
var ErrEmptySummary = errors.New("compact: the model returned an empty summary")

// Input is what one summary is made from.
type Input struct {
	PreviousSummary string            // the retained summary, "" before the first compaction
	Prefix          []history.Message // the messages to archive, oldest first
	Instructions    string            // the request's own instructions
}

// Summary is the outcome of a successful summary call.
type Summary struct {
	Text  string
	Usage provider.Usage
}

// Composer produces summaries. The zero value is not usable: Provider is
// required. A Composer is safe for concurrent use.
type Composer struct {
	Provider provider.Provider
	// Instructions are added to every summary request (the session's
	// Config.CompactInstructions).
	Instructions string
	// MaxToolOutput bounds each tool output in the transcript, in bytes;
	// 0 means DefaultMaxToolOutput.
	MaxToolOutput int
	// MaxTokens bounds the summary; 0 leaves it to the provider.
	MaxTokens int
}

//go:embed summarizer.md
var systemPrompt string

// SystemPrompt returns the summarizer's system prompt.
func SystemPrompt() string { return systemPrompt }

// inputFinal ends the summary input. testdata/input.tmpl is the whole
// input as a template; TestRequestMatchesTemplate keeps the two equal.
const inputFinal = "\n\nWrite the updated summary of the conversation above now.\n"

// Request builds the one summary request for in, without sending it. Its
// Input (a [provider.Text]) is, in this order: the previous summary in
// <previous-summary> tags (when there is one), the prefix as a [Transcript]
// in <transcript> tags, the instructions in <instructions> tags (when there
// are any), and a line asking for the summary. It is rendered on demand,
// a message at a time: a provider that streams its request never holds the
// transcript whole (for a large prefix it is the largest thing a
// compaction would build), and String renders it in one buffer sized up
// front.
func (c *Composer) Request(in Input) (*provider.Request, error) {
	var instr []string
	for _, s := range []string{c.Instructions, in.Instructions} {
		if s = strings.TrimSpace(s); s != "" {
			instr = append(instr, s)
		}
	}
	return &provider.Request{
		Purpose: provider.PurposeSummary,
		System:  systemPrompt,
		Input: &summaryInput{
			prev:         strings.TrimSpace(in.PreviousSummary),
			prefix:       in.Prefix,
			instructions: strings.Join(instr, "\n\n"),
			max:          c.maxToolOutput(),
		},
		MaxTokens: c.MaxTokens,
	}, nil
}

// summaryInput is the summary request's input, rendered on demand.
type summaryInput struct {
	prev, instructions string
	prefix             []history.Message
	max                int
}

var _ provider.Text = (*summaryInput)(nil)

// header emits what comes before the transcript's entries.
func (in *summaryInput) header(emit func(string)) {
	if in.prev != "" {
		emit("<previous-summary>\n")
		emit(in.prev)
		emit("\n</previous-summary>\n\n")
	}
	emit("<transcript>\n")
}

// footer emits what comes after the transcript's entries.
func (in *summaryInput) footer(emit func(string)) {
	emit("\n</transcript>")
	if in.instructions != "" {
		emit("\n\n<instructions>\n")
		emit(in.instructions)
		emit("\n</instructions>")
	}
	emit(inputFinal)
}

// String implements [provider.Text]: the whole input in one buffer.
func (in *summaryInput) String() string {
	var b strings.Builder
	b.Grow(len(in.prev) + transcriptSize(in.prefix, in.max) + len(in.instructions) + 128)
	emit := func(s string) { b.WriteString(s) }
	in.header(emit)
	t := newTranscriber(in.max)
	for i := range in.prefix {
		t.message(&in.prefix[i], emit)
	}
	in.footer(emit)
	return b.String()
}

// NewReader implements [provider.Text]: a reader that renders the input a
// message at a time, holding only the pieces of the current message (which
// point into the messages; nothing is copied until Read).
func (in *summaryInput) NewReader() io.Reader {
	r := &inputReader{in: in, t: newTranscriber(in.max)}
	r.emit = func(s string) {
		if s != "" {
			r.pieces = append(r.pieces, s)
		}
	}
	return r
}

// inputReader reads a summaryInput; see NewReader.
type inputReader struct {
	in     *summaryInput
	t      *transcriber
	emit   func(string)
	stage  int      // 0 header, 1 messages, 2 footer, 3 done
	next   int      // the next message of the prefix
	pieces []string // what is left of the current part
	store  []string // the pieces' backing array, reused for every part
	off    int      // bytes of pieces[0] already read
}

// Read implements io.Reader.
func (r *inputReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.pieces) == 0 {
			if !r.fill() {
				if n == 0 {
					return 0, io.EOF
				}
				break
			}
			continue
		}
		c := copy(p[n:], r.pieces[0][r.off:])
		n += c
		r.off += c
		if r.off == len(r.pieces[0]) {
			r.pieces, r.off = r.pieces[1:], 0
		}
	}
	return n, nil
}

// fill renders the next part (the header, one message or the footer) into
// pieces; it reports false at the end.
func (r *inputReader) fill() bool {
	r.pieces = r.store[:0]
	defer func() { r.store = r.pieces[:0] }()
	switch r.stage {
	case 0:
		r.in.header(r.emit)
		r.stage = 1
	case 1:
		if r.next == len(r.in.prefix) {
			r.stage = 2
			return true
		}
		r.t.message(&r.in.prefix[r.next], r.emit)
		r.next++
	case 2:
		r.in.footer(r.emit)
		r.stage = 3
	default:
		return false
	}
	return true
}

func (c *Composer) maxToolOutput() int {
	if c.MaxToolOutput > 0 {
		return c.MaxToolOutput
	}
	return DefaultMaxToolOutput
}

// Summarize makes exactly one provider call that summarizes in, forwarding
// text deltas to onDelta (which may be nil) as they arrive. It returns
// ErrEmptySummary for a blank reply, and the provider's error (wrapping
// ctx.Err() when cancelled) otherwise.
func (c *Composer) Summarize(ctx context.Context, in Input, onDelta func(string)) (*Summary, error) {
	if c.Provider == nil {
		return nil, errors.New("compact: composer has no provider")
	}
	req, err := c.Request(in)
	if err != nil {
		return nil, err
	}
	resp, err := c.Provider.Complete(ctx, req, onDelta)
	if err != nil {
		return nil, fmt.Errorf("compact: summary call: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("compact: summary call: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text)
	if text == "" {
		return nil, ErrEmptySummary
	}
	return &Summary{Text: text, Usage: resp.Usage}, nil
}

// Transcript renders messages as the transcript a summary is made from: one
// entry per message, each starting with its role in brackets, so the model
// reads it as a record to summarize rather than a conversation to continue.
// Tool outputs longer than maxToolOutput bytes are cut.
//
//	[user] fix the build
//	[assistant] Looking at the error.
//	[assistant → tool read_file] {"path":"main.go"}
//	[tool read_file] package main …
//	[user, steer] use Go 1.26
func Transcript(msgs []history.Message, maxToolOutput int) string {
	var b strings.Builder
	b.Grow(transcriptSize(msgs, maxToolOutput))
	emit := func(s string) { b.WriteString(s) }
	t := newTranscriber(maxToolOutput)
	for i := range msgs {
		t.message(&msgs[i], emit)
	}
	return b.String()
}

// transcriptSize is about the transcript's size in bytes (at least it,
// unless a label is unusually long), so that one allocation holds it.
func transcriptSize(msgs []history.Message, maxToolOutput int) int {
	const perEntry = 48 // label, brackets, newline, a truncation note
	size := 0
	for i := range msgs {
		m := &msgs[i]
		if m.Role == history.RoleTool {
			size += min(len(m.Text), maxToolOutput) + perEntry
		} else {
			size += len(m.Text) + perEntry
		}
		for _, tc := range m.ToolCalls {
			size += min(len(tc.Arguments), maxToolOutput) + len(tc.Name) + perEntry
		}
	}
	return size
}

// transcriber renders transcript entries a message at a time, as pieces
// passed to an emit function: the entries separated by newlines, without a
// newline after the last one. Transcript and the summary input's String and
// NewReader are all built on it, so they cannot differ.
type transcriber struct {
	names map[string]string // tool call ID → tool name, from the calls seen
	first bool
	max   int
}

func newTranscriber(maxToolOutput int) *transcriber {
	return &transcriber{names: map[string]string{}, first: true, max: maxToolOutput}
}

// message emits the entries of one message.
func (t *transcriber) message(m *history.Message, emit func(string)) {
	switch m.Role {
	case history.RoleUser:
		if m.Steer {
			t.entry(emit, "user, steer", m.Text)
		} else {
			t.entry(emit, "user", m.Text)
		}
	case history.RoleAssistant:
		if strings.TrimSpace(m.Text) != "" || len(m.ToolCalls) == 0 {
			t.entry(emit, "assistant", m.Text)
		}
		for _, tc := range m.ToolCalls {
			t.names[tc.ID] = tc.Name
			args := strings.TrimSpace(string(tc.Arguments))
			if args == "" {
				args = "{}"
			}
			t.entry(emit, "assistant → tool "+tc.Name, truncate(args, t.max))
		}
	case history.RoleTool:
		name := t.names[m.ToolCallID]
		if name == "" {
			name = m.ToolCallID
		}
		t.entry(emit, "tool "+name, truncate(m.Text, t.max))
	}
}

// entry emits one entry, after a newline unless it is the first.
func (t *transcriber) entry(emit func(string), label, text string) {
	if !t.first {
		emit("\n")
	}
	t.first = false
	emit("[")
	emit(label)
	emit("] ")
	// A message cannot close the transcript section early.
	const closing, escaped = "</transcript>", "<\\/transcript>"
	text = strings.TrimSpace(text)
	for {
		i := strings.Index(text, closing)
		if i < 0 {
			emit(text)
			return
		}
		emit(text[:i])
		emit(escaped)
		text = text[i+len(closing):]
	}
}

// truncate cuts s to at most max bytes on a rune boundary and says how much
// was cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [truncated %d chars]", s[:cut], len(s)-cut)
}
