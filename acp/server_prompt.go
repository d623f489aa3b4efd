package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// prompt handles session/prompt of either version: it decodes and checks
// the prompt (promptReader.content), and hands it with its deferred Responder to the session's
// owner, which admits it and answers (agentSession.prompt).
func (s *server) prompt(ctx context.Context, p schema.PromptRequest) (any, error) {
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	in, err := a.reader.content(p.Prompt)
	if err != nil {
		return nil, err
	}
	return a.prompt(ctx, jsonrpc.Defer(ctx), in)
}
