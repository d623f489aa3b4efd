package schema

import "encoding/json"

// Methods the agent calls on the client (ACP v1; v2 keeps only
// session/request_permission, with other params).
const (
	MethodReadTextFile        = "fs/read_text_file"
	MethodWriteTextFile       = "fs/write_text_file"
	MethodTerminalCreate      = "terminal/create"
	MethodTerminalOutput      = "terminal/output"
	MethodTerminalWaitForExit = "terminal/wait_for_exit"
	MethodTerminalKill        = "terminal/kill"
	MethodTerminalRelease     = "terminal/release"
	MethodRequestPermission   = "session/request_permission"
)

// ReadTextFileRequest is the params of fs/read_text_file. Line (1-based)
// and Limit (lines) are optional: 0 = absent.
type ReadTextFileRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Path      string         `json:"path" acp:"required"`
	Line      int            `json:"line,omitzero" acp:"lenient"`
	Limit     int            `json:"limit,omitzero" acp:"lenient"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ReadTextFileResponse is the result of fs/read_text_file.
type ReadTextFileResponse struct {
	Content string         `json:"content" acp:"required"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ReadTextFileResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// WriteTextFileRequest is the params of fs/write_text_file (answered with
// an empty object).
type WriteTextFileRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Path      string         `json:"path" acp:"required"`
	Content   string         `json:"content" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CreateTerminalRequest is the params of terminal/create: the client runs
// Command with Args in a terminal of its own. OutputByteLimit (0 = the
// client's default) bounds the output the client keeps; it keeps the end.
type CreateTerminalRequest struct {
	SessionID       string         `json:"sessionId" acp:"required"`
	Command         string         `json:"command" acp:"required"`
	Args            []string       `json:"args,omitzero" acp:"lenient"`
	Env             []EnvVariable  `json:"env,omitzero" acp:"lenient"`
	Cwd             string         `json:"cwd,omitzero" acp:"lenient"`
	OutputByteLimit int            `json:"outputByteLimit,omitzero" acp:"lenient"`
	Meta            map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CreateTerminalResponse is the result of terminal/create.
type CreateTerminalResponse struct {
	TerminalID string         `json:"terminalId" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *CreateTerminalResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// TerminalRequest is the params of terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release.
type TerminalRequest struct {
	SessionID  string         `json:"sessionId" acp:"required"`
	TerminalID string         `json:"terminalId" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// TerminalExitStatus is how a terminal's command ended (the result of
// terminal/wait_for_exit): its exit code, or the signal that ended it.
// ExitCode is nil when the command was ended by a signal.
type TerminalExitStatus struct {
	ExitCode *int           `json:"exitCode,omitzero" acp:"lenient"`
	Signal   string         `json:"signal,omitzero" acp:"lenient"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes s; errors wrap [ErrMalformed].
func (s *TerminalExitStatus) UnmarshalJSON(data []byte) error { return DecodeObject(data, s) }

// TerminalOutputResponse is the result of terminal/output: the output so
// far (Truncated: its beginning was cut at the byte limit) and, once the
// command has ended, its exit status.
type TerminalOutputResponse struct {
	Output     string              `json:"output" acp:"required"`
	Truncated  bool                `json:"truncated" acp:"required"`
	ExitStatus *TerminalExitStatus `json:"exitStatus,omitzero" acp:"lenient"`
	Meta       map[string]any      `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *TerminalOutputResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// PermissionOptionKind is the kind of a permission option, which the client
// may use to show it (a string set the schema leaves open).
type PermissionOptionKind string

// The permission option kinds.
const (
	PermissionAllowOnce    PermissionOptionKind = "allow_once"
	PermissionAllowAlways  PermissionOptionKind = "allow_always"
	PermissionRejectOnce   PermissionOptionKind = "reject_once"
	PermissionRejectAlways PermissionOptionKind = "reject_always"
)

// PermissionOption is one choice of a permission request.
type PermissionOption struct {
	OptionID string               `json:"optionId" acp:"required"`
	Name     string               `json:"name" acp:"required"`
	Kind     PermissionOptionKind `json:"kind" acp:"required"`
	Meta     map[string]any       `json:"_meta,omitzero" acp:"lenient"`
}

// RequestPermissionRequest is the v1 params of session/request_permission:
// the tool call it is about (a patch the client applies to it) and the
// options.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId" acp:"required"`
	ToolCall  ToolCallUpdate     `json:"toolCall" acp:"required"`
	Options   []PermissionOption `json:"options" acp:"required"`
	Meta      map[string]any     `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes r; its tool call is a plain ToolCallUpdate object
// (without the "sessionUpdate" of the update).
func (r RequestPermissionRequest) MarshalJSON() ([]byte, error) {
	call, err := toolCallObject(r.ToolCall)
	if err != nil {
		return nil, err
	}
	type plain RequestPermissionRequest
	type wire struct {
		plain
		ToolCall json.RawMessage `json:"toolCall"`
	}
	return json.Marshal(wire{plain(r), call})
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *RequestPermissionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// toolCallObject encodes u as the ToolCallUpdate object of a permission
// request.
func toolCallObject(u ToolCallUpdate) (json.RawMessage, error) {
	type plain ToolCallUpdate
	return marshalObject(plain(u))
}

// RequestPermissionRequestV2 is the v2 params of session/request_permission:
// a title of the prompt of its own and the tool call as its subject.
type RequestPermissionRequestV2 struct {
	SessionID   string             `json:"sessionId" acp:"required"`
	Title       string             `json:"title" acp:"required"`
	Description string             `json:"description,omitzero" acp:"lenient"`
	Subject     *PermissionSubject `json:"subject,omitzero" acp:"lenient"`
	Options     []PermissionOption `json:"options" acp:"required"`
	Meta        map[string]any     `json:"_meta,omitzero" acp:"lenient"`
}

// PermissionSubject is the v2 "tool_call" permission subject.
type PermissionSubject struct {
	ToolCall ToolCallUpdate `json:"toolCall" acp:"required"`
}

// MarshalJSON encodes s with its "type".
func (s PermissionSubject) MarshalJSON() ([]byte, error) {
	call, err := toolCallObject(s.ToolCall)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"type": "tool_call", "toolCall": call})
}

// RequestPermissionResponse is the result of session/request_permission
// (both versions): Outcome is "cancelled" (the prompt turn was cancelled)
// or "selected" with the OptionID the user chose. Another outcome is kept
// as it is and treated as no permission.
type RequestPermissionResponse struct {
	Outcome PermissionOutcome `json:"outcome" acp:"required"`
	Meta    map[string]any    `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *RequestPermissionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// PermissionOutcome is the outcome of a permission request.
type PermissionOutcome struct {
	Outcome  string         `json:"outcome" acp:"required"` // "cancelled" or "selected"
	OptionID string         `json:"optionId,omitzero" acp:"lenient"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes o; errors wrap [ErrMalformed].
func (o *PermissionOutcome) UnmarshalJSON(data []byte) error { return DecodeObject(data, o) }

// Selected reports whether the user chose an option, and which.
func (o PermissionOutcome) Selected() (optionID string, ok bool) {
	if o.Outcome == "selected" && o.OptionID != "" {
		return o.OptionID, true
	}
	return "", false
}

// EmptyResult decodes the empty-object results of fs/write_text_file and
// the terminal methods (anything is accepted, as the SDK does).
type EmptyResult struct{}

func (*EmptyResult) UnmarshalJSON([]byte) error { return nil }

var _ json.Unmarshaler = (*EmptyResult)(nil)
