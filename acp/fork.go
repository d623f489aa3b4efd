package acp

import (
	"context"
	"errors"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// forkSession handles session/fork (v1): session.Fork makes the fork in
// the store, at the message _meta.sessionkit.messageId names (the newest
// entry without it), reading the source's committed history (the source
// may be open here or in another process and stays as it is); the fork is
// then opened as session/resume opens a session (no replay: the client
// has the history up to the fork point; a session/load of the fork
// replays it), at the request's cwd, additionalDirectories and
// mcpServers. Bad input writes nothing: an empty sessionId or cwd, a
// messageId that is not a string or no message of the source, a fork
// point inside a running compaction are invalid params; an unknown source
// is the unknown-session error.
func (s *server) forkSession(ctx context.Context, p schema.ForkSessionRequest) (any, error) {
	if p.SessionID == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	if p.Cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	prompt, err := clientPrompt(p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	var at string
	if ours, ok := p.Meta[schema.MetaKey].(map[string]any); ok {
		if v, ok := ours[schema.MetaForkMessageID]; ok {
			if at, ok = v.(string); !ok || at == "" {
				return nil, invalidParams(`field "_meta.%s.%s": must be a message ID (a non-empty string)`, schema.MetaKey, schema.MetaForkMessageID)
			}
		}
	}
	res, err := session.Fork(ctx, s.store, session.ForkRequest{From: p.SessionID, At: at})
	switch {
	case errors.Is(err, history.ErrNotFound):
		return nil, unknownSession(p.SessionID, "no such session is stored")
	case errors.Is(err, history.ErrUnknownMessage):
		return nil, invalidParams(`field "_meta.%s.%s": session %s has no message %q`, schema.MetaKey, schema.MetaForkMessageID, p.SessionID, at)
	case errors.Is(err, history.ErrForkInCompaction):
		return nil, invalidParams(`field "_meta.%s.%s": %v`, schema.MetaKey, schema.MetaForkMessageID, err)
	case err != nil:
		return nil, err
	}
	return s.attach(ctx, res.ID, place{p.Cwd, p.AdditionalDirectories, p.McpServers, prompt}, false, schema.ForkSessionResponse{SessionID: res.ID})
}
