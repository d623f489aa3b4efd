package acp

import (
	"context"
	"errors"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
)

// deleteSession handles session/delete on both versions. A session open on
// this connection is closed first, as session/close closes it (forgotten
// at once, its turn cancelled, its session.Session closed, which ends its
// tools' work and releases its lease; agentSession.end); once its owner
// and writer have ended, every update it had is on the wire, and the store
// deletes it (history.Catalog). The request holds the connection's dispatch until
// then (ServerOptions' ordered requests), so a request after it sees the
// session gone. A session that another process serves is refused, naming
// it (servedElsewhere), and nothing is deleted; an unknown one is the
// unknown-session error.
func (s *server) deleteSession(ctx context.Context, p schema.DeleteSessionRequest) (any, error) {
	if p.SessionID == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	s.mu.Lock()
	a, open := s.sessions[p.SessionID]
	loading := s.loading[p.SessionID]
	s.mu.Unlock()
	if loading {
		return nil, loadingSession(p.SessionID)
	}
	if open {
		s.forget(a)
		a.end()
	}
	err := s.store.Delete(ctx, p.SessionID)
	switch {
	case errors.Is(err, history.ErrLeased) || errors.Is(err, history.ErrBusy):
		return nil, refusedByStore(err)
	case errors.Is(err, history.ErrNotFound):
		return nil, unknownSession(p.SessionID, "no such session is stored")
	case err != nil:
		return nil, err
	}
	return schema.DeleteSessionResponse{}, nil
}

// DeleteSession deletes a session on the agent with everything it stores
// of it (session/delete; advertised under sessionCapabilities.delete): the
// agent closes it first if it serves it. A RemoteSession for it on this
// Client is closed too, its Handles finishing with session.ErrClosed. A
// session another agent process serves is refused with the agent's error,
// which names that process.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	err := c.call(ctx, schema.MethodSessionDelete, schema.DeleteSessionRequest{SessionID: id}, nil)
	c.closeRemote(id)
	return err
}
