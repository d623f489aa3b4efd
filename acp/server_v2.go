package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// handleV2 dispatches one request or notification of a v2 connection. v2
// has no authenticate and no session/load (session/resume with replayFrom
// replays), and its request IDs must not be null.
func (s *server) handleV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if string(req.ID) == "null" {
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "ACP v2 request IDs must be strings or integers")
	}
	switch req.Method {
	case schema.MethodSessionNew:
		return s.newSessionV2(ctx, req)
	case schema.MethodSessionResume:
		return s.resumeSessionV2(ctx, req)
	case schema.MethodToolCallCancel:
		return s.cancelToolCall(ctx, req)
	}
	return s.handleShared(ctx, req)
}

func (s *server) newSessionV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.NewSessionRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
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
func (s *server) resumeSessionV2(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.ResumeSessionRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
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
