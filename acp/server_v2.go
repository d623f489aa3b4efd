package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
)

func (s *server) newSessionV2(ctx context.Context, p schema.NewSessionRequestV2) (any, error) {
	servers, err := mcpServersV2(p.McpServers)
	if err != nil {
		return nil, err
	}
	prompt, err := clientPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, place{p.Cwd, p.AdditionalDirectories, servers, prompt}, func(id string) any { return schema.NewSessionResponseV2{SessionID: id} })
}

// resumeSessionV2 handles session/resume: with replayFrom {"type":"start"}
// the whole session is replayed, then its current state_update, then the
// response; without replayFrom nothing is replayed.
func (s *server) resumeSessionV2(ctx context.Context, p schema.ResumeSessionRequestV2) (any, error) {
	replay := p.ReplayFrom != nil
	if replay && p.ReplayFrom.Type != schema.ReplayFromStart {
		return nil, invalidParams(`field "replayFrom": replay from %q is not supported (only "start")`, p.ReplayFrom.Type)
	}
	servers, err := mcpServersV2(p.McpServers)
	if err != nil {
		return nil, err
	}
	prompt, err := clientPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, servers, prompt}, replay, schema.ResumeSessionResponseV2{})
}
