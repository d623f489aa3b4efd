package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
)

func (s *server) newSessionV2(ctx context.Context, p schema.NewSessionRequestV2) (any, error) {
	at, err := placeOfV2(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, at, func(id string) any { return schema.NewSessionResponseV2{SessionID: id} })
}

// resumeSessionV2 handles session/resume: with replayFrom {"type":"start"}
// the whole session is replayed; with or without a replay, the session's
// current state_update comes before the response, as the protocol
// requires ("even without replay").
func (s *server) resumeSessionV2(ctx context.Context, p schema.ResumeSessionRequestV2) (any, error) {
	replay := p.ReplayFrom != nil
	if replay && p.ReplayFrom.Type != schema.ReplayFromStart {
		return nil, invalidParams(`field "replayFrom": replay from %q is not supported (only "start")`, p.ReplayFrom.Type)
	}
	at, err := placeOfV2(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, at, replay, schema.ResumeSessionResponseV2{})
}
