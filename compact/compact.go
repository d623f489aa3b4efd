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
// prompt (summarizer.md); its one user message holds the previous summary,
// the prefix rendered as a transcript (tool outputs cut to a bounded size),
// and the configured and per-request instructions (input.tmpl). The session's
// own system prompt and tool definitions are never part of it. A reply that is
// empty or only white space is an error: no fallback summary exists.
package compact

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"text/template"
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

//go:embed input.tmpl
var inputText string

var inputTemplate = template.Must(template.New("input").Parse(inputText))

// SystemPrompt returns the summarizer's system prompt.
func SystemPrompt() string { return systemPrompt }

// Request builds the one summary request for in, without sending it.
func (c *Composer) Request(in Input) (*provider.Request, error) {
	var instr []string
	for _, s := range []string{c.Instructions, in.Instructions} {
		if s = strings.TrimSpace(s); s != "" {
			instr = append(instr, s)
		}
	}
	data := struct {
		PreviousSummary, Transcript, Instructions string
	}{
		PreviousSummary: strings.TrimSpace(in.PreviousSummary),
		Transcript:      Transcript(in.Prefix, c.maxToolOutput()),
		Instructions:    strings.Join(instr, "\n\n"),
	}
	var b strings.Builder
	b.Grow(len(data.PreviousSummary) + len(data.Transcript) + len(data.Instructions) + len(inputText))
	err := inputTemplate.Execute(&b, data)
	if err != nil {
		return nil, fmt.Errorf("compact: render summary input: %w", err)
	}
	return &provider.Request{
		Purpose:   provider.PurposeSummary,
		System:    systemPrompt,
		Messages:  []history.Message{{ID: "summary-input", Role: history.RoleUser, Text: b.String()}},
		MaxTokens: c.MaxTokens,
	}, nil
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
	names := map[string]string{}
	var b strings.Builder
	size := 0
	for i := range msgs {
		size += len(msgs[i].Text) + 32
		for _, tc := range msgs[i].ToolCalls {
			size += len(tc.Arguments) + len(tc.Name) + 32
		}
	}
	b.Grow(size) // one allocation for the whole transcript
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case history.RoleUser:
			if m.Steer {
				entry(&b, "user, steer", m.Text)
			} else {
				entry(&b, "user", m.Text)
			}
		case history.RoleAssistant:
			if strings.TrimSpace(m.Text) != "" || len(m.ToolCalls) == 0 {
				entry(&b, "assistant", m.Text)
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				args := strings.TrimSpace(string(tc.Arguments))
				if args == "" {
					args = "{}"
				}
				entry(&b, "assistant → tool "+tc.Name, truncate(args, maxToolOutput))
			}
		case history.RoleTool:
			name := names[m.ToolCallID]
			if name == "" {
				name = m.ToolCallID
			}
			entry(&b, "tool "+name, truncate(m.Text, maxToolOutput))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func entry(b *strings.Builder, label, text string) {
	b.WriteString("[")
	b.WriteString(label)
	b.WriteString("] ")
	// A message cannot close the transcript section early.
	b.WriteString(strings.ReplaceAll(strings.TrimSpace(text), "</transcript>", "<\\/transcript>"))
	b.WriteString("\n")
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
