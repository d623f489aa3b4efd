package acp

import (
	"context"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

func (s *server) compact(ctx context.Context, p schema.CompactParams) (any, error) {
	return s.startCommand(ctx, p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Compact(context.Background(), session.CompactRequest{Instructions: p.Instructions, Through: p.Through}))
	}, func(id string) any { return schema.CompactAccepted{CompactID: id} })
}

func (s *server) uncompact(ctx context.Context, p schema.UncompactParams) (any, error) {
	return s.startCommand(ctx, p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Uncompact(context.Background(), session.UncompactRequest{}))
	}, func(id string) any { return schema.UncompactAccepted{UncompactID: id} })
}

// startCommand handles an extension command of a session
// (_sessionkit/compact, _sessionkit/uncompact): it hands the command to the
// owner of session sessionID (agentSession.startCommand), which starts it
// and answers accepted(the command's ID).
func (s *server) startCommand(ctx context.Context, sessionID string, start func(*session.Session) (string, error), accepted func(id string) any) (any, error) {
	a, err := s.session(sessionID)
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
