package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// emptyText stands in for the empty text of a user message, or of an
// assistant message without tool calls: the API rejects empty text blocks
// and messages without content. History keeps the empty text; only the wire
// shows the stand-in.
const emptyText = "(empty)"

// leadText opens the messages when they would start with an assistant
// message (after a compaction, Active can): the API expects the user to
// speak first.
const leadText = "(The conversation continues from the summary of its earlier part.)"

// summaryText returns the system block that carries a retained summary.
func summaryText(summary string) string {
	return provider.SummaryPreamble + "\n\n<summary>\n" + summary + "\n</summary>"
}

// buildParams maps req to Messages API parameters (the stream field is set
// by the SDK's streaming call).
func (p *Provider) buildParams(req *provider.Request) (sdk.MessageNewParams, error) {
	params := sdk.MessageNewParams{
		Model:     p.o.model,
		MaxTokens: int64(p.o.maxTokens),
	}
	if req.Model != "" {
		params.Model = sdk.Model(req.Model)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	// Extended thinking, for turns only; its budget must be below the
	// request's max tokens; not in a turn of tool use begun without it.
	thinking := p.o.thinking > 0 && req.Purpose != provider.PurposeSummary && int64(p.o.thinking) < params.MaxTokens &&
		!begunWithoutThinking(req.Messages)
	if thinking {
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(p.o.thinking))
	}
	if req.System != "" {
		params.System = append(params.System, sdk.TextBlockParam{Text: req.System})
		p.breakpoint(&params.System[len(params.System)-1].CacheControl)
	}
	if req.Summary != "" {
		params.System = append(params.System, sdk.TextBlockParam{Text: summaryText(req.Summary)})
		p.breakpoint(&params.System[len(params.System)-1].CacheControl)
	}

	if len(req.Messages) == 0 {
		// The API requires one; a summary request carries the transcript
		// as its one user message (docs/design.md §4.12).
		return sdk.MessageNewParams{}, errors.New("the request has no messages")
	}
	msgs, err := wireMessages(req.Messages, thinking)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	if n := len(msgs); n > 0 {
		p.breakpoint(lastBlockCache(&msgs[n-1]))
	}
	params.Messages = msgs

	if req.Purpose != provider.PurposeSummary {
		for _, t := range req.Tools {
			schema, err := inputSchema(t.Parameters)
			if err != nil {
				return sdk.MessageNewParams{}, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			tool := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
			if t.Description != "" {
				tool.Description = sdk.String(t.Description)
			}
			params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tool})
		}
		if n := len(params.Tools); n > 0 {
			p.breakpoint(&params.Tools[n-1].OfTool.CacheControl)
		}
	}
	return params, nil
}

// breakpoint marks a cache breakpoint, unless caching is off. A request
// has at most four: the last tool, the system prompt, the summary and the
// last message (the API's limit is four).
func (p *Provider) breakpoint(cc *sdk.CacheControlEphemeralParam) {
	if !p.o.noCache {
		*cc = sdk.NewCacheControlEphemeralParam()
	}
}

// lastBlockCache returns the cache_control of m's last content block.
func lastBlockCache(m *sdk.MessageParam) *sdk.CacheControlEphemeralParam {
	var blocks []sdk.ContentBlockParamUnion
	if m.OfUser != nil {
		blocks = m.OfUser.Content
	} else {
		blocks = m.OfAssistant.Content
	}
	b := &blocks[len(blocks)-1]
	switch {
	case b.OfText != nil:
		return &b.OfText.CacheControl
	case b.OfToolUse != nil:
		return &b.OfToolUse.CacheControl
	case b.OfImage != nil:
		return &b.OfImage.CacheControl
	default:
		return &b.OfToolResult.CacheControl
	}
}

// wireMessages maps history to Messages API messages. Tool messages become
// tool_result blocks of a user message; consecutive messages of the same
// wire role are merged into one message (consecutive tool results, a user
// message after tool results, two user messages in a row), with every
// tool_result block before any text block of its message, and every
// thinking block before any other block of its message, as the API
// requires. The first message is a user message ([leadText] when history
// starts with an assistant message). Every message has at least one block,
// and no text block is empty. With thinking, an assistant message's
// thoughts that the API can check (signed, or redacted) lead its blocks,
// as the API requires of the messages of a turn of tool use; without it
// they are left out.
func wireMessages(in []history.Message, thinking bool) ([]sdk.MessageParam, error) {
	out := make([]sdk.MessageParam, 0, len(in))
	// push appends blocks as a message of role, merged into the last
	// message when it has the same role.
	push := func(user bool, blocks ...sdk.ContentBlockParamUnion) {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if user && last.OfUser != nil {
				last.OfUser.Content = mergeLeading(last.OfUser.Content, blocks, isToolResult)
				return
			}
			if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = mergeLeading(last.OfAssistant.Content, blocks, isThinking)
				return
			}
		}
		if user {
			out = append(out, sdk.NewUserMessage(blocks...))
		} else {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
	}
	if len(in) > 0 && in[0].Role == history.RoleAssistant {
		push(true, sdk.NewTextBlock(leadText))
	}
	for i := range in {
		m := &in[i]
		switch m.Role {
		case history.RoleUser:
			push(true, userBlocks(m)...)
		case history.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if thinking {
				blocks = thoughtBlocks(m.Thoughts)
			}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				blocks = append(blocks, sdk.NewTextBlock(nonEmpty(m.Text)))
			}
			for _, c := range m.ToolCalls {
				args := bytes.TrimSpace(c.Arguments)
				if len(args) == 0 {
					args = []byte("{}")
				}
				if !json.Valid(args) {
					return nil, fmt.Errorf("message %q: tool call %q: arguments are not valid JSON", m.ID, c.ID)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, json.RawMessage(args), c.Name))
			}
			push(false, blocks...)
		case history.RoleTool:
			res := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Text != "" {
				res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Text}}}
			}
			push(true, sdk.ContentBlockParamUnion{OfToolResult: res})
		default:
			return nil, fmt.Errorf("message %q has unknown role %q", m.ID, m.Role)
		}
	}
	return out, nil
}

// begunWithoutThinking reports whether msgs end in a turn of tool use
// whose last assistant message has no thought the API can check (signed,
// or redacted): one begun without a thinking budget or by another
// provider. The API refuses thinking in the rest of such a turn (its last
// assistant message must begin with a thinking block).
func begunWithoutThinking(msgs []history.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch m := &msgs[i]; m.Role {
		case history.RoleUser:
			return false
		case history.RoleAssistant:
			return len(m.ToolCalls) > 0 && len(thoughtBlocks(m.Thoughts)) == 0
		}
	}
	return false
}

// thoughtBlocks are the thinking and redacted_thinking blocks of
// thoughts, in order; a thought without a signature (another provider's)
// cannot be sent back and is left out.
func thoughtBlocks(thoughts []history.Thought) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, t := range thoughts {
		switch {
		case t.Redacted != "":
			out = append(out, sdk.NewRedactedThinkingBlock(t.Redacted))
		case t.Signature != "":
			out = append(out, sdk.NewThinkingBlock(t.Signature, t.Text))
		}
	}
	return out
}

// userBlocks are the content blocks of user message m: its text with its
// links and resources as text (provider.Content), its images as base64
// image blocks.
func userBlocks(m *history.Message) []sdk.ContentBlockParamUnion {
	parts := provider.Content(m, true)
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(parts))
	for _, p := range parts {
		if p.Image != nil {
			blocks = append(blocks, sdk.NewImageBlockBase64(p.Image.MIMEType, base64.StdEncoding.EncodeToString(p.Image.Data)))
			continue
		}
		if p.Text == "" && len(parts) > 1 {
			continue
		}
		blocks = append(blocks, sdk.NewTextBlock(nonEmpty(p.Text)))
	}
	return blocks
}

// imageTypes are the image MIME types the Messages API takes.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// TakesImage implements [provider.ImageTaker]: the Messages API takes
// JPEG, PNG, GIF and WebP images.
func (p *Provider) TakesImage(mimeType string) bool { return imageTypes[mimeType] }

// mergeLeading appends blocks to a message's content, keeping the blocks
// that must lead it (lead: a user message's tool_result blocks, an
// assistant message's thinking blocks) first, each kind in order.
func mergeLeading(content, blocks []sdk.ContentBlockParamUnion, lead func(sdk.ContentBlockParamUnion) bool) []sdk.ContentBlockParamUnion {
	at := 0
	for at < len(content) && lead(content[at]) {
		at++
	}
	for _, b := range blocks {
		if !lead(b) {
			content = append(content, b)
			continue
		}
		content = slices.Insert(content, at, b)
		at++
	}
	return content
}

// isToolResult is true of a tool_result block, which leads a user message.
func isToolResult(b sdk.ContentBlockParamUnion) bool { return b.OfToolResult != nil }

// isThinking is true of a thinking or redacted_thinking block, which leads
// an assistant message.
func isThinking(b sdk.ContentBlockParamUnion) bool {
	return b.OfThinking != nil || b.OfRedactedThinking != nil
}

func nonEmpty(s string) string {
	if s == "" {
		return emptyText
	}
	return s
}

// inputSchema maps a tool's JSON Schema. The schema must be an object; a
// missing or null schema is an object schema without properties.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return sdk.ToolInputSchemaParam{Properties: map[string]any{}}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return sdk.ToolInputSchemaParam{}, fmt.Errorf("parameters are not a JSON Schema object: %w", err)
	}
	var s sdk.ToolInputSchemaParam
	for k, v := range fields {
		switch k {
		case "type":
			// Always "object" (the SDK writes it).
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return sdk.ToolInputSchemaParam{}, fmt.Errorf("parameters: required: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s, nil
}

// toolArgs returns a tool call's arguments as the history keeps them:
// empty arguments become "{}", so that a call without arguments is still a
// JSON object.
func toolArgs(b []byte) json.RawMessage {
	if b = bytes.TrimSpace(b); len(b) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}
