package acp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// cancelToolCall handles tool_call/cancel (v2): the session cancels the
// call's context (session.Session.CancelToolCall), which ends its command's
// process group, its pending permission request (cancelled on the wire
// with $/cancel_request) or its MCP call; the turn goes on, and the call's
// final tool_call_update, status cancelled, follows. It is answered {} once
// the session has accepted the cancellation; a call that is unknown,
// already final or not running in the session's turn is -32602, as the
// schema says.
func (s *server) cancelToolCall(ctx context.Context, p schema.CancelToolCallRequest) (any, error) {
	if p.ToolCallID == "" {
		return nil, invalidParams(`field "toolCallId": must not be empty`)
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	switch err := a.cancelToolCall(ctx, p.ToolCallID); {
	case errors.Is(err, session.ErrNoToolCall):
		e := jsonrpc.NewError(jsonrpc.InvalidParams, "invalid params: tool call %q is unknown, already final, or not cancellable", p.ToolCallID)
		e.Data, _ = json.Marshal(map[string]string{"toolCallId": p.ToolCallID})
		return nil, e
	case errors.Is(err, session.ErrClosed):
		return nil, unknownSession(p.SessionID, "the session is closed")
	case err != nil:
		return nil, err
	}
	return struct{}{}, nil
}

// cancellable is the capabilities of a v2 tool call while it runs: it may
// be cancelled.
func cancellable() schema.Optional[schema.ToolCallCapabilities] {
	return schema.Value(schema.ToolCallCapabilities{Cancel: &schema.Capability{}})
}

// final reports whether status ends a tool call.
func final(status schema.ToolCallStatus) bool {
	return status == schema.ToolCallCompleted || status == schema.ToolCallFailed || status == schema.ToolCallCancelled
}

// v2Controls sets what a v2 client may do with the call u patches: a call
// that reaches a final status can no longer be cancelled (null clears the
// capability the call was created with).
func v2Controls(u *schema.ToolCallUpdate) {
	if s, ok := u.Status.Get(); ok && final(s) {
		u.Capabilities = schema.Null[schema.ToolCallCapabilities]()
	}
}

// v1ToolUpdate is u for ACP v1, which has no cancelled status (a cancelled
// call failed) and no tool call capabilities.
func v1ToolUpdate(u *schema.ToolCallUpdate) *schema.ToolCallUpdate {
	s, ok := u.Status.Get()
	if (!ok || s != schema.ToolCallCancelled) && u.Capabilities.IsZero() {
		return u
	}
	c := *u
	if ok && s == schema.ToolCallCancelled {
		c.Status = schema.Value(schema.ToolCallFailed)
	}
	c.Capabilities = schema.Optional[schema.ToolCallCapabilities]{}
	return &c
}
