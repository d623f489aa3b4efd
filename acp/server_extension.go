package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

func (s *server) compact(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.CompactParams
	return s.startCommand(ctx, req, &p, &p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Compact(context.Background(), session.CompactRequest{Instructions: p.Instructions, Through: p.Through}))
	}, func(id string) any { return schema.CompactAccepted{CompactID: id} })
}

func (s *server) uncompact(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.UncompactParams
	return s.startCommand(ctx, req, &p, &p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Uncompact(context.Background(), session.UncompactRequest{}))
	}, func(id string) any { return schema.UncompactAccepted{UncompactID: id} })
}

// startCommand handles an extension command of a session
// (_sessionkit/compact, _sessionkit/uncompact): it decodes req's params into
// params, whose session ID is then *sessionID, and hands the command to the
// session's owner (agentSession.startCommand), which starts it and answers
// accepted(the command's ID).
func (s *server) startCommand(ctx context.Context, req *jsonrpc.Request, params any, sessionID *string, start func(*session.Session) (string, error), accepted func(id string) any) (any, error) {
	if err := jsonrpc.UnmarshalParams(req.Params, params); err != nil {
		return nil, err
	}
	a, err := s.session(*sessionID)
	if err != nil {
		return nil, err
	}
	return a.startCommand(ctx, jsonrpc.Defer(ctx), start, accepted)
}

// handleID is the ID of the command h a session call started, or its error.
func handleID[T any](h *session.Handle[T], err error) (string, error) {
	if err != nil {
		return "", err
	}
	return h.ID(), nil
}
