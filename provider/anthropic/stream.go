package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// errTruncated is wrapped by the error of a stream that ended before its
// message_stop event.
var errTruncated = errors.New("stream ended before the response was complete")

// truncatedError says what a truncated stream lacked.
type truncatedError struct{ missing string }

func (e *truncatedError) Error() string { return errTruncated.Error() + " (no " + e.missing + ")" }
func (e *truncatedError) Unwrap() error { return errTruncated }

// toolBlock is a tool_use content block being assembled from its
// input_json_delta fragments.
type toolBlock struct {
	index int64
	call  history.ToolCall
	args  []byte
}

// thoughtBlock is a thinking (or redacted_thinking) content block being
// assembled from its thinking_delta and signature_delta events.
type thoughtBlock struct {
	index     int64
	text      strings.Builder
	signature string
	redacted  string
}

// stream makes one streaming attempt. delivered reports whether any delta
// reached onDelta, after which the attempt must not be retried.
//
// The events are those of the Messages API: message_start (the input
// usage), content_block_start / content_block_delta / content_block_stop
// (text_delta passed to onDelta at once; input_json_delta fragments
// appended to their tool_use block's arguments), message_delta (stop reason,
// cumulative usage), message_stop. The SDK skips ping events and turns an
// error event into an error.
func (p *Provider) stream(ctx context.Context, params sdk.MessageNewParams, onDelta func(string)) (resp *provider.Response, delivered bool, err error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()

	var (
		text                       strings.Builder
		thoughts                   []*thoughtBlock
		tools                      []*toolBlock
		started, stopped           bool
		stopReason                 string
		input, write, read, output int64
	)
	emit := func(s string) {
		if s != "" {
			text.WriteString(s)
			delivered = true
			onDelta(s)
		}
	}
	tool := func(index int64) *toolBlock {
		for _, t := range tools {
			if t.index == index {
				return t
			}
		}
		return nil
	}
	thought := func(index int64) *thoughtBlock {
		for _, t := range thoughts {
			if t.index == index {
				return t
			}
		}
		return nil
	}
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			started = true
			u := ev.Message.Usage
			input, write, read, output = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens
		case "content_block_start":
			switch b := ev.ContentBlock; b.Type {
			case "tool_use":
				tools = append(tools, &toolBlock{index: ev.Index, call: history.ToolCall{ID: b.ID, Name: b.Name}})
			case "text":
				emit(b.Text)
			case "thinking":
				thoughts = append(thoughts, &thoughtBlock{index: ev.Index})
				if b.Thinking != "" {
					thoughts[len(thoughts)-1].text.WriteString(b.Thinking)
					delivered = true
					provider.ReportThought(ctx, b.Thinking)
				}
				thoughts[len(thoughts)-1].signature = b.Signature
			case "redacted_thinking":
				thoughts = append(thoughts, &thoughtBlock{index: ev.Index, redacted: b.Data})
			}
		case "content_block_delta":
			switch d := ev.Delta; d.Type {
			case "text_delta":
				emit(d.Text)
			case "thinking_delta":
				if t := thought(ev.Index); t != nil && d.Thinking != "" {
					t.text.WriteString(d.Thinking)
					delivered = true
					provider.ReportThought(ctx, d.Thinking)
				}
			case "signature_delta":
				if t := thought(ev.Index); t != nil {
					t.signature += d.Signature
				}
			case "input_json_delta":
				if t := tool(ev.Index); t != nil {
					t.args = append(t.args, d.PartialJSON...)
				}
			}
		case "message_delta":
			// Its usage is cumulative; the input figures are present only
			// when the server sends them again.
			if ev.Delta.StopReason != "" {
				stopReason = string(ev.Delta.StopReason)
			}
			u := ev.Usage
			output = u.OutputTokens
			if u.JSON.InputTokens.Valid() {
				input = u.InputTokens
			}
			if u.JSON.CacheCreationInputTokens.Valid() {
				write = u.CacheCreationInputTokens
			}
			if u.JSON.CacheReadInputTokens.Valid() {
				read = u.CacheReadInputTokens
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, delivered, err
	}
	switch {
	case !started:
		return nil, delivered, &truncatedError{missing: "message_start"}
	case !stopped:
		return nil, delivered, &truncatedError{missing: "message_stop"}
	}
	msg, err := streamedMessage(text.String(), thoughts, tools, stopReason)
	if err != nil {
		return nil, delivered, err
	}
	return &provider.Response{Message: msg, Usage: usageOf(input, write, read, output)}, delivered, nil
}

// streamedMessage is the assistant message of a finished stream: its text,
// thinking blocks and tool calls, each tool call's input whole.
func streamedMessage(text string, thoughts []*thoughtBlock, tools []*toolBlock, stopReason string) (history.Message, error) {
	msg := history.Message{Role: history.RoleAssistant, Text: text}
	for _, t := range thoughts {
		msg.Thoughts = append(msg.Thoughts, history.Thought{Text: t.text.String(), Signature: t.signature, Redacted: t.redacted})
	}
	for _, t := range tools {
		t.call.Arguments = toolArgs(t.args)
		if !json.Valid(t.call.Arguments) {
			// Committed, it would make every later request invalid.
			return history.Message{}, fmt.Errorf("tool_use %q: input is not valid JSON (stop reason %q)", t.call.ID, stopReason)
		}
		msg.ToolCalls = append(msg.ToolCalls, t.call)
	}
	return msg, nil
}
