// Package provider defines how a session talks to a model: one [Request] in,
// one [Response] out, with text deltas streamed on the way.
//
// Four implementations ship with sessionkit:
//
//   - provider/openai: any OpenAI-compatible Chat Completions endpoint;
//   - provider/anthropic: Anthropic's Messages API (Claude models);
//   - provider/offline: the embedded default, deterministic and without network;
//   - provider/providertest: a scripted fake for tests.
//
// A request has a [Purpose]: [PurposeTurn] for a step of a conversation turn,
// [PurposeSummary] for the one summary call of a compaction. A summary
// request is an ordinary request: System holds the summarizer instructions
// and Messages one user message, the conversation to summarize rendered as a
// transcript (by the compact package); the session's own system prompt and
// tools are never part of it. A provider that sends System and Messages to
// its model therefore summarizes correctly without knowing about compaction
// (see the example).
//
//	resp, err := p.Complete(ctx, &provider.Request{
//		Purpose:  provider.PurposeTurn,
//		System:   "You are terse.",
//		Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "hi"}},
//	}, func(delta string) { fmt.Print(delta) })
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessionkit/sessionkit/history"
)

// Purpose says why a request is made.
type Purpose string

// Request purposes.
const (
	PurposeTurn    Purpose = "turn"
	PurposeSummary Purpose = "summary"
)

// ToolSpec declares a tool the model may call.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema
}

// Request is one model request.
type Request struct {
	Purpose Purpose
	// Model is the model to ask; "" means the provider's configured model.
	// A provider that serves one model only may ignore it.
	Model     string
	System    string            // system prompt (turns) or summarizer instructions (summary)
	Summary   string            // retained summary, "" when none (turns only)
	Messages  []history.Message // Active (turns) or the rendered prefix as one user message (summary)
	Tools     []ToolSpec
	MaxTokens int // 0 = the provider's default
}

// Usage is the token usage a provider reported for one response.
//
// InputTokens is everything the request consumed as input, cached or not:
// the figure the automatic compaction trigger reads (docs/design.md §3.1).
// CacheReadTokens and CacheWriteTokens break down the part of it that was
// read from, or written to, the provider's prompt cache; a provider that
// reports no cache figures leaves them 0. Each provider package documents
// how it maps its own figures (for example, OpenAI's prompt_tokens already
// includes its cached tokens, while Anthropic's input_tokens excludes both
// cache figures, so provider/anthropic adds them).
type Usage struct {
	InputTokens      int // all input tokens of the request, cache reads and writes included
	OutputTokens     int
	CacheReadTokens  int // part of InputTokens read from the prompt cache
	CacheWriteTokens int // part of InputTokens written to the prompt cache
}

// Total returns input plus output tokens: the context a conversation holds
// after the response (docs/design.md §3.1).
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// ErrContextOverflow means the request is longer than the model's context:
// the provider rejected it without answering. Providers wrap it in the error
// they return, so errors.Is(err, ErrContextOverflow) finds it; a session can
// compact and try again (docs/design.md §3.5).
var ErrContextOverflow = errors.New("provider: the request is longer than the model's context")

// Response is a complete model response.
type Response struct {
	Message history.Message // role assistant
	Usage   Usage
	// Model is the model that answered, as the provider reported it; ""
	// when it reported none.
	Model string
}

// Info names a provider and the model it uses, for records such as the
// Segment a summary made (see [Describe]).
type Info struct {
	Name  string // "openai", "anthropic", "offline", ...
	Model string // "" when the provider has no model name
}

// Describer is implemented by providers that name themselves and their
// model. The providers of sessionkit do.
type Describer interface {
	Info() Info
}

// Describe returns p's Info: the one it gives when it is a [Describer],
// otherwise its Go type as the name and no model.
func Describe(p Provider) Info {
	if d, ok := p.(Describer); ok {
		return d.Info()
	}
	if p == nil {
		return Info{}
	}
	return Info{Name: fmt.Sprintf("%T", p)}
}

// Provider makes one model request. onDelta, when non-nil, receives text
// deltas of the assistant message as they arrive; the Response holds the
// complete message. Implementations must return promptly when ctx is done,
// with an error wrapping ctx.Err().
//
// Providers leave Message.ID and CreatedAt to the caller when they have no
// better value; the session assigns both before committing.
//
// The request, its messages and their tool calls are shared with the
// session (it does not copy Active for every request): a Provider must not
// modify them, and may keep them after Complete returns.
type Provider interface {
	Complete(ctx context.Context, req *Request, onDelta func(text string)) (*Response, error)
}

// SummaryPreamble introduces the retained summary when a turn request carries
// one (docs/design.md §4.10). Providers put it, followed by the summary, before
// Active, as context the model reads and does not answer.
const SummaryPreamble = "The conversation so far has been compacted. The following is a summary of the earlier part of the conversation, written for you to continue from; it is context, not a message to reply to."
