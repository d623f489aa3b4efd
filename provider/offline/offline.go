package offline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Defaults of a [Provider] built without options.
const (
	DefaultDeltaSize       = 3    // words per streamed delta
	DefaultMaxSummaryChars = 2000 // characters (runes) of a summary
)

// ErrInvalidRequest is returned, wrapped, for a nil request or a request with
// an unknown purpose.
var ErrInvalidRequest = errors.New("offline: invalid request")

// Provider is the offline provider. Build it with [New]; the zero value is
// also ready to use, with the defaults. It holds no mutable state and is safe
// for concurrent use.
type Provider struct {
	deltaSize       int
	maxSummaryChars int
}

var _ provider.Provider = (*Provider)(nil)

// Option configures a [Provider].
type Option func(*Provider)

// WithDeltaSize sets how many words each streamed delta carries (default
// [DefaultDeltaSize]). Values below 1 are ignored.
func WithDeltaSize(n int) Option {
	return func(p *Provider) {
		if n > 0 {
			p.deltaSize = n
		}
	}
}

// WithMaxSummaryChars bounds the length of a summary in characters (runes),
// default [DefaultMaxSummaryChars]. Whole bullets are dropped to fit; a limit
// smaller than the headings themselves cuts the text at the limit. Values
// below 1 are ignored.
func WithMaxSummaryChars(n int) Option {
	return func(p *Provider) {
		if n > 0 {
			p.maxSummaryChars = n
		}
	}
}

// New returns an offline provider configured by opts.
func New(opts ...Option) *Provider {
	p := &Provider{deltaSize: DefaultDeltaSize, maxSummaryChars: DefaultMaxSummaryChars}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (p *Provider) words() int {
	if p.deltaSize > 0 {
		return p.deltaSize
	}
	return DefaultDeltaSize
}

func (p *Provider) summaryLimit(maxTokens int) int {
	limit := DefaultMaxSummaryChars
	if p.maxSummaryChars > 0 {
		limit = p.maxSummaryChars
	}
	if maxTokens > 0 {
		limit = min(limit, 4*maxTokens)
	}
	return limit
}

// Complete answers req deterministically (see the package documentation). A
// request with an empty Purpose is treated as a turn. When req.MaxTokens is
// set, a summary is also bounded to about 4*MaxTokens characters.
//
// Complete returns an error wrapping [ErrInvalidRequest] for a nil request or
// an unknown purpose, and an error wrapping ctx.Err() when ctx is done before
// or while the reply is streamed.
func (p *Provider) Complete(ctx context.Context, req *provider.Request, onDelta func(text string)) (*provider.Response, error) {
	if req == nil {
		return nil, fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}
	req = textOnly(req)
	var msg history.Message
	switch req.Purpose {
	case provider.PurposeTurn, "":
		msg = turnReply(req)
	case provider.PurposeSummary:
		msg = history.Message{Role: history.RoleAssistant, Text: summarize(req, p.summaryLimit(req.MaxTokens))}
	default:
		return nil, fmt.Errorf("%w: unknown purpose %q", ErrInvalidRequest, req.Purpose)
	}
	if onDelta != nil {
		for _, d := range splitDeltas(msg.Text, p.words()) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("offline: %w", err)
			}
			onDelta(d)
		}
	}
	return &provider.Response{Message: msg, Usage: usage(req, &msg)}, nil
}

// textOnly is req with the attachments of its user messages made text
// where they stand (provider.Content, images named): the offline model
// reads text only, so it takes no images (it is no provider.ImageTaker). A
// request without attachments is returned as it is; otherwise the copy is
// new (req is shared with the session).
func textOnly(req *provider.Request) *provider.Request {
	i := slices.IndexFunc(req.Messages, func(m history.Message) bool { return len(m.Attachments) > 0 })
	if i < 0 {
		return req
	}
	r := *req
	r.Messages = slices.Clone(req.Messages)
	for ; i < len(r.Messages); i++ {
		m := &r.Messages[i]
		if len(m.Attachments) > 0 {
			m.Text, m.Attachments = provider.Content(m, false)[0].Text, nil
		}
	}
	return &r
}

// CountTokens estimates the number of tokens of s: one token per four
// characters (runes), rounded up, so any non-empty string counts at least one
// and "" counts zero.
func CountTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

func usage(req *provider.Request, reply *history.Message) provider.Usage {
	in := CountTokens(req.System) + CountTokens(req.Summary)
	for i := range req.Messages {
		in += messageTokens(&req.Messages[i])
	}
	return provider.Usage{InputTokens: in, OutputTokens: messageTokens(reply)}
}

func messageTokens(m *history.Message) int {
	n := CountTokens(m.Text)
	for _, c := range m.ToolCalls {
		n += CountTokens(string(c.Arguments))
	}
	return n
}

// splitDeltas cuts text into pieces of n words each; a word takes the
// whitespace that follows it, and leading whitespace goes with the first
// piece, so the pieces concatenate to text exactly.
func splitDeltas(text string, n int) []string {
	var out []string
	start, words := 0, 0
	inWord := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			// A new word begins at i: close the piece if it is full.
			if words == n {
				out = append(out, text[start:i])
				start, words = i, 0
			}
			words++
		}
		inWord = !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// Info implements provider.Describer: name "offline", model "offline".
func (p *Provider) Info() provider.Info { return provider.Info{Name: "offline", Model: "offline"} }

var _ provider.Describer = (*Provider)(nil)
