package acp

import (
	"context"
	"fmt"
	"strings"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// promptText joins the prompt's content into the text of a user message.
func promptText(blocks []ContentBlock) (string, error) {
	var parts []string
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.URI))
		case b.Resource != nil && b.Resource.Resource.Text != nil:
			r := b.Resource.Resource
			parts = append(parts, fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.URI, *r.Text))
		default:
			return "", invalidParams("field \"prompt\": item %d: content of type %q is not supported by this agent", i, b.Type())
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", invalidParams(`field "prompt": the prompt has no text`)
	}
	return text, nil
}

// prompt handles session/prompt of either version: it decodes and checks
// the prompt, and hands it with its deferred Responder to the session's
// owner, which admits it and answers (agentSession.prompt).
func (s *server) prompt(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p PromptRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return nil, err
	}
	return a.prompt(ctx, jsonrpc.Defer(ctx), text)
}
