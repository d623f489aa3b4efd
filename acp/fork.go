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
	at, err := placeOf(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.fork(ctx, p.SessionID, p.Meta, at, func(id string) any {
		return schema.ForkSessionResponse{SessionID: id}
	})
}

// forkSessionV2 handles a v2 session/fork as forkSession does a v1 one,
// with v2's mcpServers and response (a v2 session/resume of the fork
// with replayFrom replays its history).
func (s *server) forkSessionV2(ctx context.Context, p schema.ForkSessionRequestV2) (any, error) {
	at, err := placeOfV2(p.Cwd, p.AdditionalDirectories, p.McpServers, nil)
	if err != nil {
		return nil, err
	}
	return s.fork(ctx, p.SessionID, p.Meta, at, func(id string) any {
		return schema.ForkSessionResponseV2{SessionID: id}
	})
}

// fork forks session from at the message its request's meta names and
// serves the fork at pl; response is the answer for the fork's ID.
func (s *server) fork(ctx context.Context, from string, meta map[string]any, pl place, response func(id string) any) (any, error) {
	if from == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	if pl.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	var at string
	if ours, ok := meta[schema.MetaKey].(map[string]any); ok {
		if v, ok := ours[schema.MetaForkMessageID]; ok {
			if at, ok = v.(string); !ok || at == "" {
				return nil, invalidParams(`field "_meta.%s.%s": must be a message ID (a non-empty string)`, schema.MetaKey, schema.MetaForkMessageID)
			}
		}
	}
	res, err := session.Fork(ctx, s.store, session.ForkRequest{From: from, At: at})
	switch {
	case errors.Is(err, history.ErrNotFound):
		return nil, unknownSession(from, "no such session is stored")
	case errors.Is(err, history.ErrUnknownMessage):
		return nil, invalidParams(`field "_meta.%s.%s": session %s has no message %q`, schema.MetaKey, schema.MetaForkMessageID, from, at)
	case errors.Is(err, history.ErrForkInCompaction):
		return nil, invalidParams(`field "_meta.%s.%s": %v`, schema.MetaKey, schema.MetaForkMessageID, err)
	case err != nil:
		return nil, err
	}
	return s.attach(ctx, res.ID, pl, false, response(res.ID))
}
