package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// emptySchema is sent for a tool without parameters: most servers reject a
// function whose parameters are missing or null.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// summaryMessage returns the system message that carries a retained summary.
func summaryMessage(summary string) string {
	return provider.SummaryPreamble + "\n\n<summary>\n" + summary + "\n</summary>"
}

// buildRequest maps req to a Chat Completions request (without the stream
// fields, which the streaming path sets).
func (p *Provider) buildRequest(req *provider.Request) (goopenai.ChatCompletionRequest, error) {
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)+2)
	if req.System != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: req.System})
	}
	if req.Summary != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: summaryMessage(req.Summary)})
	}
	for i := range req.Messages {
		m, err := wireMessage(&req.Messages[i])
		if err != nil {
			return goopenai.ChatCompletionRequest{}, err
		}
		msgs = append(msgs, m)
	}

	creq := goopenai.ChatCompletionRequest{Model: p.model, Messages: msgs}
	if req.Model != "" {
		creq.Model = req.Model
	}
	if req.Purpose != provider.PurposeSummary {
		for _, t := range req.Tools {
			params := t.Parameters
			if len(bytes.TrimSpace(params)) == 0 || bytes.Equal(bytes.TrimSpace(params), []byte("null")) {
				params = emptySchema
			}
			if !json.Valid(params) {
				return goopenai.ChatCompletionRequest{}, fmt.Errorf("tool %q: parameters are not valid JSON", t.Name)
			}
			creq.Tools = append(creq.Tools, goopenai.Tool{
				Type: goopenai.ToolTypeFunction,
				Function: &goopenai.FunctionDefinition{
					Name:        t.Name,
					Description: t.Description,
					Parameters:  params,
				},
			})
		}
	}
	if p.temperature != nil {
		t := *p.temperature
		if t == 0 {
			// go-openai drops a zero temperature (omitempty); send the
			// smallest positive value so that greedy decoding is requested.
			t = math.SmallestNonzeroFloat32
		}
		creq.Temperature = t
	}
	if req.MaxTokens > 0 {
		creq.MaxTokens = req.MaxTokens
		// go-openai refuses max_tokens for reasoning models (o1, o3, o4,
		// gpt-5, ...), which only accept max_completion_tokens.
		if err := goopenai.NewReasoningValidator().Validate(creq); errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated) {
			creq.MaxTokens, creq.MaxCompletionTokens = 0, req.MaxTokens
		}
	}
	return creq, nil
}

// emptyContent stands in for the empty text of a tool result or of an
// assistant message without tool calls: go-openai omits an empty content,
// and the API rejects those messages without one. History keeps the empty
// text; only the wire shows the stand-in.
const emptyContent = "(empty)"

// wireMessage maps one history message.
func wireMessage(m *history.Message) (goopenai.ChatCompletionMessage, error) {
	switch m.Role {
	case history.RoleUser:
		parts := provider.Content(m, true)
		if len(parts) == 1 && parts[0].Image == nil {
			return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: parts[0].Text}, nil
		}
		out := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser}
		for _, p := range parts {
			if p.Image == nil {
				out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: p.Text})
				continue
			}
			url := "data:" + p.Image.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Image.Data)
			out.MultiContent = append(out.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL, ImageURL: &goopenai.ChatMessageImageURL{URL: url}})
		}
		return out, nil
	case history.RoleAssistant:
		text := m.Text
		if text == "" && len(m.ToolCalls) == 0 {
			text = emptyContent
		}
		out := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: text}
		for _, c := range m.ToolCalls {
			args := string(bytes.TrimSpace(c.Arguments))
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{
				ID:       c.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: c.Name, Arguments: args},
			})
		}
		return out, nil
	case history.RoleTool:
		text := m.Text
		if text == "" {
			text = emptyContent
		}
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, Content: text, ToolCallID: m.ToolCallID}, nil
	default:
		return goopenai.ChatCompletionMessage{}, fmt.Errorf("message %q has unknown role %q", m.ID, m.Role)
	}
}

// imageTypes are the image MIME types Chat Completions takes.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// TakesImage implements [provider.ImageTaker]: Chat Completions takes
// JPEG, PNG, GIF and WebP images (as data URLs). The model behind the
// endpoint must be one that reads images; the request fails otherwise.
// With WithImages(false) it takes none.
func (p *Provider) TakesImage(mimeType string) bool { return !p.noImages && imageTypes[mimeType] }

// toolCallParts is a tool call being assembled (or read whole).
type toolCallParts struct {
	id   string
	name string
	args []byte
}

// assistantMessage builds the response message. Empty arguments become "{}"
// so that a call without arguments is still a JSON object.
func assistantMessage(text string, calls []toolCallParts) history.Message {
	m := history.Message{Role: history.RoleAssistant, Text: text}
	for _, c := range calls {
		args := bytes.TrimSpace(c.args)
		if len(args) == 0 {
			args = []byte("{}")
		}
		m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(args)})
	}
	return m
}
