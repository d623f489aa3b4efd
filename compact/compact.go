// Package compact is the compaction composer: it decides what a compaction
// archives ([Cut]) and produces the summary that replaces it
// ([Composer.Summarize]). Manual and automatic compaction share it
// (docs/design.md §4); the session package runs it and commits the result.
//
//	cut := compact.CutFor(active)
//	if cut.K == 0 {
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
// [provider.PurposeSummary], an ordinary request: its System is the embedded
// summarizer prompt (summarizer.md) and its Messages are one user message
// that holds the previous summary, the prefix rendered as a transcript (tool
// outputs cut to a bounded size), and the configured and per-request
// instructions (see [Composer.Request]). Any provider summarizes it
// correctly without knowing about compaction. The session's own system
// prompt and tool definitions are never part of it. A reply that is empty or
// only white space is an error: no fallback summary exists.
package compact

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/transcript"
	"github.com/sessionkit/sessionkit/provider"
)

// Cut is what a compaction of a given Active would archive.
type Cut struct {
	N       int // user and assistant messages in Active
	K       int // floor(N/2): user and assistant messages archived
	Archive int // messages archived: the prefix length, tool messages included
}

// CutFor computes the cut of active (docs/design.md §4.1-§4.3). It is pure and
// runs in O(len(active)).
func CutFor(active []history.Message) Cut {
	p := Cut{}
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
	// Model is the model the provider reported in its response, "" when
	// it reported none.
	Model string
	// LeftOut is how many of the oldest prefix messages the context window
	// left out of the summary input (see Composer.ContextWindow).
	LeftOut int
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
	// MaxTokens bounds the summary; 0 leaves it to the provider (or, with
	// a ContextWindow, DefaultSummaryMaxTokens).
	MaxTokens int
	// ContextWindow, when positive, bounds the summary request: it stays
	// within ContextWindow minus the summary's maximum output, estimated
	// in tokens. Tool outputs are cut first (MaxToolOutput), then the
	// oldest messages are left out of the transcript behind a marker
	// saying how many (see Summary.LeftOut). 0 = no bound.
	ContextWindow int
	// Recall tells the summarizer that the archived messages stay
	// searchable: the agent has a recall tool (session.Config.Recall). The
	// request's instructions then begin with [RecallInstructions]. false =
	// the request is exactly as without recall.
	Recall bool
	// BytesPerToken calibrates the token estimate (see EstimateTokens);
	// 0 = DefaultBytesPerToken. A session derives it from the provider's
	// last reported context size.
	BytesPerToken float64
}

//go:embed summarizer.md
var systemPrompt string

// RecallInstructions open the instructions of a summary request when the
// agent can search its archive (Composer.Recall).
const RecallInstructions = "The messages of this transcript stay archived verbatim after the compaction, and the agent can search and read them with its recall tool. " +
	"Keep the goals, decisions, rules and open tasks in full; for details (file contents, long outputs, exact error text) a pointer is enough: what it was about and the names to search for."

// SystemPrompt returns the summarizer's system prompt.
func SystemPrompt() string { return systemPrompt }

// inputID is the ID of the one message of a summary request.
const inputID = "summary-input"

// Request builds the one summary request for in, without sending it: an
// ordinary [provider.Request] whose System is the summarizer prompt
// ([SystemPrompt]) and whose Messages are one user message holding, in this
// order, the previous summary in <previous-summary> tags (when there is
// one), the prefix as a [Transcript] in <transcript> tags, the configured
// and the request's instructions in <instructions> tags (when there are
// any), and a line asking for the summary. A provider needs to know nothing
// about compaction to summarize it. The error is always nil.
func (c *Composer) Request(in Input) (*provider.Request, error) {
	req, _ := c.request(in)
	return req, nil
}

// request is Request, also returning how many messages the context window
// left out.
func (c *Composer) request(in Input) (*provider.Request, int) {
	var instr []string
	if c.Recall {
		instr = append(instr, RecallInstructions)
	}
	for _, s := range []string{c.Instructions, in.Instructions} {
		if s = strings.TrimSpace(s); s != "" {
			instr = append(instr, s)
		}
	}
	instructions := strings.Join(instr, "\n\n")
	const framing = 64 // tags, the final line, the message's own overhead
	fixed := EstimateTokens(systemPrompt, c.BytesPerToken) + EstimateTokens(in.PreviousSummary, c.BytesPerToken) +
		EstimateTokens(instructions, c.BytesPerToken) + framing
	entries, leftOut := c.fit(in, fixed)
	text := transcript.Render(transcript.Document{
		Previous:     in.PreviousSummary,
		Entries:      entries,
		Instructions: instructions,
	})
	maxTokens := c.MaxTokens
	if c.ContextWindow > 0 {
		maxTokens = c.maxOutput()
	}
	return &provider.Request{
		Purpose:   provider.PurposeSummary,
		System:    systemPrompt,
		Messages:  []history.Message{{ID: inputID, Role: history.RoleUser, Text: text}},
		MaxTokens: maxTokens,
	}, leftOut
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
// ctx.Err() when cancelled) otherwise. When the provider answered, the
// Summary is returned with the error too, without Text: its Usage and
// Model say what the call used, which the provider billed (an empty
// summary, a cancel after the answer came).
func (c *Composer) Summarize(ctx context.Context, in Input, onDelta func(string)) (*Summary, error) {
	if c.Provider == nil {
		return nil, errors.New("compact: composer has no provider")
	}
	req, leftOut := c.request(in)
	resp, err := c.Provider.Complete(ctx, req, onDelta)
	if err != nil {
		return nil, fmt.Errorf("compact: summary call: %w", err)
	}
	if resp == nil {
		return nil, errors.New("compact: summary call: the provider returned no response")
	}
	// The provider answered, and billed the call, whatever comes next:
	// the usage goes back with an error too.
	billed := &Summary{Usage: resp.Usage, Model: resp.Model, LeftOut: leftOut}
	if err := ctx.Err(); err != nil {
		return billed, fmt.Errorf("compact: summary call: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text)
	if text == "" {
		return billed, ErrEmptySummary
	}
	billed.Text = text
	return billed, nil
}

// Transcript renders messages as the transcript a summary is made from: one
// entry per message, each starting with its role in brackets, so the model
// reads it as a record to summarize rather than a conversation to continue.
// Tool outputs and call arguments longer than maxToolOutput bytes are cut.
//
//	[user] fix the build
//	[assistant] Looking at the error.
//	[assistant → tool read_file] {"path":"main.go"}
//	[tool read_file] package main …
//	[user, steer] use Go 1.26
func Transcript(msgs []history.Message, maxToolOutput int) string {
	return transcript.RenderEntries(transcript.FromMessages(msgs, maxToolOutput))
}
