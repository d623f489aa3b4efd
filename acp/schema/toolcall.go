package schema

// MethodToolCallCancel is ACP v2's request that cancels one tool call.
const MethodToolCallCancel = "tool_call/cancel"

// ToolCallCapabilities (ACP v2) are the controls a client may use on a tool
// call: Cancel, when non-nil, permits tool_call/cancel (sent as {}).
type ToolCallCapabilities struct {
	Cancel *Capability    `json:"cancel,omitzero" acp:"lenient"`
	Meta   map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ToolCallCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// CancelToolCallRequest is the params of tool_call/cancel (ACP v2).
type CancelToolCallRequest struct {
	SessionID  string         `json:"sessionId" acp:"required"`
	ToolCallID string         `json:"toolCallId" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *CancelToolCallRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }
