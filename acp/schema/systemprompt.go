package schema

// The client's system prompt (stabilized in ACP v1 and v2 on 2026-11-06):
// a systemPrompt object on session/new, session/load and session/resume,
// which an agent advertises with sessionCapabilities.systemPrompt (v1) or
// session.systemPrompt (v2).

// System prompt modes (SystemPrompt.Mode).
const (
	// SystemPromptAppend adds the client's content to the agent's own
	// instructions; every agent that advertises the capability takes it.
	SystemPromptAppend = "append"
	// SystemPromptOverride replaces the agent's built-in default
	// instructions with the client's content; an agent takes it only where
	// it advertises SystemPromptModeCapabilities.Override.
	SystemPromptOverride = "override"
)

// SystemPrompt is a client's system-level instructions for a session, on
// session/new, session/load and session/resume of v1 and v2. Mode and
// Content are required; an agent refuses a mode it does not support and
// content blocks other than text (an unknown type included), and it may
// refuse an empty Content. A client sends it again on every lifecycle
// request, as it sends cwd; a sessionkit agent keeps the stored one when a
// later request leaves it out.
type SystemPrompt struct {
	Mode    string         `json:"mode" acp:"required"`
	Content []ContentBlock `json:"content" acp:"required"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SystemPromptCapabilities advertise the systemPrompt field (sent as {}
// for append alone).
type SystemPromptCapabilities struct {
	// Mode lists the modes taken besides append; nil = append only.
	Mode *SystemPromptModeCapabilities `json:"mode,omitzero" acp:"lenient"`
	Meta map[string]any                `json:"_meta,omitzero" acp:"lenient"`
}

// SystemPromptModeCapabilities are the system prompt modes an agent takes
// besides append; each non-nil marker (sent as {}) advertises one.
type SystemPromptModeCapabilities struct {
	Override *Capability    `json:"override,omitzero" acp:"lenient"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes p; errors wrap [ErrMalformed].
func (p *SystemPrompt) UnmarshalJSON(data []byte) error { return DecodeObject(data, p) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *SystemPromptCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *SystemPromptModeCapabilities) UnmarshalJSON(data []byte) error {
	return DecodeObject(data, c)
}
