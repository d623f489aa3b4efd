package openai

import (
	"context"
	"errors"
	"io"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Errors of one attempt, classified by classify.
var (
	errTruncated = errors.New("stream ended before the response was complete")
	errNoChoices = errors.New("response has no choices")
)

// truncatedError says what a truncated stream lacked.
type truncatedError struct{ missing string }

func (e *truncatedError) Error() string { return errTruncated.Error() + " (no " + e.missing + ")" }
func (e *truncatedError) Unwrap() error { return errTruncated }

// streamError marks a failure while reading a stream that is not a
// connection error: a malformed chunk or an error object sent in the stream.
type streamError struct{ err error }

func (e *streamError) Error() string { return "reading stream: " + e.err.Error() }
func (e *streamError) Unwrap() error { return e.err }

// assembler accumulates tool calls from stream fragments. OpenAI sends the
// id, type and name in the first fragment of a call and splits its
// arguments over later fragments that carry only the index.
type assembler struct {
	calls []toolCallParts
	byIdx map[int]int // fragment index -> position in calls
	last  int         // position of the last call touched, -1 if none
}

func newAssembler() *assembler { return &assembler{byIdx: map[int]int{}, last: -1} }

func (a *assembler) add(tc *goopenai.ToolCall) {
	pos := -1
	switch {
	case tc.Index != nil:
		if i, ok := a.byIdx[*tc.Index]; ok {
			pos = i
		} else {
			a.calls = append(a.calls, toolCallParts{})
			pos = len(a.calls) - 1
			a.byIdx[*tc.Index] = pos
		}
	case tc.ID != "":
		// Some servers omit the index; a new id starts a new call.
		for i := range a.calls {
			if a.calls[i].id == tc.ID {
				pos = i
			}
		}
		if pos < 0 {
			a.calls = append(a.calls, toolCallParts{})
			pos = len(a.calls) - 1
		}
	default:
		pos = a.last
		if pos < 0 {
			a.calls = append(a.calls, toolCallParts{})
			pos = 0
		}
	}
	c := &a.calls[pos]
	if tc.ID != "" && c.id == "" {
		c.id = tc.ID
	}
	if tc.Function.Name != "" && c.name == "" {
		c.name = tc.Function.Name
	}
	c.args = append(c.args, tc.Function.Arguments...)
	a.last = pos
}

// stream makes one streaming attempt. delivered reports whether any delta
// reached onDelta, after which the attempt must not be retried.
func (p *Provider) stream(ctx context.Context, creq goopenai.ChatCompletionRequest, onDelta func(string)) (resp *provider.Response, delivered bool, err error) {
	creq.Stream = true
	creq.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	s, err := p.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return nil, false, err
	}
	defer s.Close()

	var (
		text     strings.Builder
		thought  strings.Builder // reasoning_content (vLLM, Ollama, DeepSeek)
		calls    = newAssembler()
		finished bool
		usage    *goopenai.Usage
		model    string
	)
	for {
		chunk, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			if isConnError(err) {
				return nil, delivered, err
			}
			return nil, delivered, &streamError{err: err}
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		if model == "" {
			model = chunk.Model
		}
		for i := range chunk.Choices {
			ch := &chunk.Choices[i]
			if ch.Index != 0 {
				continue // only one choice is requested
			}
			if r := ch.Delta.ReasoningContent; r != "" {
				thought.WriteString(r)
				delivered = true
				provider.ReportThought(ctx, r)
			}
			if ch.Delta.Content != "" {
				text.WriteString(ch.Delta.Content)
				delivered = true
				onDelta(ch.Delta.Content)
			}
			for j := range ch.Delta.ToolCalls {
				calls.add(&ch.Delta.ToolCalls[j])
			}
			if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
				finished = true
			}
		}
	}
	switch {
	case !finished:
		return nil, delivered, &truncatedError{missing: "finish_reason"}
	case usage == nil:
		return nil, delivered, &truncatedError{missing: "usage chunk"}
	}
	msg := assistantMessage(text.String(), calls.calls)
	if thought.Len() > 0 {
		// Kept with the message and shown; never sent back (DeepSeek
		// refuses a request whose messages carry reasoning_content).
		msg.Thoughts = []history.Thought{{Text: thought.String()}}
	}
	return &provider.Response{
		Message: msg,
		Usage:   usageOf(usage),
		Model:   model,
	}, delivered, nil
}
