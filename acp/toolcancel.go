package acp

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// MethodToolCallCancel is ACP v2's request that cancels one tool call.
const MethodToolCallCancel = "tool_call/cancel"

// ToolCallCapabilities (ACP v2) are the controls a client may use on a tool
// call: Cancel, when non-nil, permits tool_call/cancel (sent as {}).
type ToolCallCapabilities struct {
	Cancel *Capability    `json:"cancel,omitzero" acp:"lenient"`
	Meta   map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ToolCallCapabilities) UnmarshalJSON(data []byte) error { return decodeObject(data, c) }

// CancelToolCallRequest is the params of tool_call/cancel (ACP v2).
type CancelToolCallRequest struct {
	SessionID  string         `json:"sessionId" acp:"required"`
	ToolCallID string         `json:"toolCallId" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *CancelToolCallRequest) UnmarshalJSON(data []byte) error { return decodeObject(data, r) }

// cancelToolCall handles tool_call/cancel (v2): the session cancels the
// call's context (session.Session.CancelToolCall), which ends its command's
// process group, its pending permission request (cancelled on the wire
// with $/cancel_request) or its MCP call; the turn goes on, and the call's
// final tool_call_update, status cancelled, follows. It is answered {} once
// the session has accepted the cancellation; a call that is unknown,
// already final or not running in the session's turn is -32602, as the
// schema says.
func (s *server) cancelToolCall(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p CancelToolCallRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
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
func cancellable() Optional[ToolCallCapabilities] {
	return Value(ToolCallCapabilities{Cancel: &Capability{}})
}

// final reports whether status ends a tool call.
func final(status ToolCallStatus) bool {
	return status == ToolCallCompleted || status == ToolCallFailed || status == ToolCallCancelled
}

// v2Controls sets what a v2 client may do with the call u patches: a call
// that reaches a final status can no longer be cancelled (null clears the
// capability the call was created with).
func v2Controls(u *ToolCallUpdate) {
	if s, ok := u.Status.Get(); ok && final(s) {
		u.Capabilities = Null[ToolCallCapabilities]()
	}
}

// v1ToolUpdate is u for ACP v1, which has no cancelled status (a cancelled
// call failed) and no tool call capabilities.
func v1ToolUpdate(u *ToolCallUpdate) *ToolCallUpdate {
	s, ok := u.Status.Get()
	if (!ok || s != ToolCallCancelled) && u.Capabilities.IsZero() {
		return u
	}
	c := *u
	if ok && s == ToolCallCancelled {
		c.Status = Value(ToolCallFailed)
	}
	c.Capabilities = Optional[ToolCallCapabilities]{}
	return &c
}
