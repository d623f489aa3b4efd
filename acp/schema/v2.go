package schema

// Wire types of ACP v2 where its shapes differ from v1's, following the
// official schema (npm @agentclientprotocol/sdk 2.4.0, schema/v2/schema.json)
// field by field, with the same optionality rules as the v1 types (see
// wire.go). Messages whose shape is the same in both versions use the v1
// types: PromptRequest, CancelNotification, CloseSessionRequest,
// CloseSessionResponse, ListSessionsRequest, ListSessionsResponse,
// SessionInfo, ContentBlock, ToolCallUpdate, UsageUpdate, SessionInfoUpdate,
// CompactionUpdate and CompactionSummaryChunk. There are no conversion
// helpers between the versions: each surface builds its own types.

import (
	"encoding/json"
)

// ProtocolVersion2 is ACP v2, the other version this package speaks.
const ProtocolVersion2 ProtocolVersion = 2

// UnsupportedProtocolVersion is the error code of an initialize that asks
// for a version below every version the agent supports (v2 schema
// ErrorCode -32022); its data is an [UnsupportedProtocolVersionData].
const UnsupportedProtocolVersion = -32022

// Session update kinds that only ACP v2 has.
const (
	UpdateUserMessage = "user_message"
	UpdateState       = "state_update"
)

// InitializeRequestV2 is the params of a v2 initialize. Info is required;
// a malformed capabilities object counts as the default {}.
type InitializeRequestV2 struct {
	ProtocolVersion ProtocolVersion      `json:"protocolVersion" acp:"required"`
	Info            Implementation       `json:"info" acp:"required"`
	Capabilities    ClientCapabilitiesV2 `json:"capabilities" acp:"lenient"`
	Meta            map[string]any       `json:"_meta,omitzero" acp:"lenient"`
}

// ClientCapabilitiesV2 are a v2 client's capabilities. sessionkit uses none
// of them (v2 has no compaction capability), so they are kept raw.
type ClientCapabilitiesV2 struct {
	Auth        json.RawMessage `json:"auth,omitzero"`
	Elicitation json.RawMessage `json:"elicitation,omitzero"`
	Meta        map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// InitializeResponseV2 is the result of a v2 initialize.
type InitializeResponseV2 struct {
	ProtocolVersion ProtocolVersion     `json:"protocolVersion" acp:"required"`
	Info            Implementation      `json:"info" acp:"required"`
	Capabilities    AgentCapabilitiesV2 `json:"capabilities" acp:"lenient"`
	Meta            map[string]any      `json:"_meta,omitzero" acp:"lenient"`
}

// AgentCapabilitiesV2 are what a v2 agent supports. A non-nil Session
// advertises the baseline session methods (session/new, list, resume,
// close, prompt, cancel and update).
type AgentCapabilitiesV2 struct {
	Session *SessionCapabilitiesV2 `json:"session,omitzero" acp:"lenient"`
	Meta    map[string]any         `json:"_meta,omitzero" acp:"lenient"`
}

// SessionCapabilitiesV2 are the optional session features of a v2 agent;
// each non-nil marker (sent as {}) advertises one.
type SessionCapabilitiesV2 struct {
	Prompt *PromptCapabilitiesV2 `json:"prompt,omitzero" acp:"lenient"`
	Delete *Capability           `json:"delete,omitzero" acp:"lenient"` // session/delete
	Mcp    *McpCapabilitiesV2    `json:"mcp,omitzero" acp:"lenient"`
	// SystemPrompt advertises the systemPrompt field of session/new and
	// session/resume.
	SystemPrompt *SystemPromptCapabilities `json:"systemPrompt,omitzero" acp:"lenient"`
	// Fork advertises session/fork ([MethodSessionFork]).
	Fork *Capability    `json:"fork,omitzero" acp:"lenient"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// McpCapabilitiesV2 say which MCP transports a v2 agent takes; each
// non-nil marker (sent as {}) advertises one.
type McpCapabilitiesV2 struct {
	Stdio *Capability    `json:"stdio,omitzero" acp:"lenient"`
	HTTP  *Capability    `json:"http,omitzero" acp:"lenient"`
	Meta  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PromptCapabilitiesV2 say which content a v2 prompt may carry beyond text
// and resource links; each non-nil marker (sent as {}) advertises one.
type PromptCapabilitiesV2 struct {
	Image           *Capability    `json:"image,omitzero" acp:"lenient"`
	Audio           *Capability    `json:"audio,omitzero" acp:"lenient"`
	EmbeddedContext *Capability    `json:"embeddedContext,omitzero" acp:"lenient"`
	Meta            map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnsupportedProtocolVersionData is the data of the
// [UnsupportedProtocolVersion] error.
type UnsupportedProtocolVersionData struct {
	Requested ProtocolVersion   `json:"requested" acp:"required"`
	Supported []ProtocolVersion `json:"supported" acp:"required"`
}

// NewSessionRequestV2 is the params of a v2 session/new: mcpServers is
// optional, and kept raw until the server decodes it (a transport it does
// not take is refused there).
type NewSessionRequestV2 struct {
	Cwd                   string          `json:"cwd" acp:"required"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            json.RawMessage `json:"mcpServers,omitzero"`
	SystemPrompt          *SystemPrompt   `json:"systemPrompt,omitzero"`
	Meta                  map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// NewSessionResponseV2 is the result of a v2 session/new. The session
// starts idle.
type NewSessionResponseV2 struct {
	SessionID     string                  `json:"sessionId" acp:"required"`
	ConfigOptions []SessionConfigOptionV2 `json:"configOptions,omitzero" acp:"skipinvalid"`
	Meta          map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// ResumeSessionRequestV2 is the params of a v2 session/resume. ReplayFrom
// nil means no replay; {"type":"start"} replays the whole session before
// the response (v2 has no session/load).
type ResumeSessionRequestV2 struct {
	SessionID             string          `json:"sessionId" acp:"required"`
	Cwd                   string          `json:"cwd" acp:"required"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            json.RawMessage `json:"mcpServers,omitzero"`
	ReplayFrom            *ReplayFrom     `json:"replayFrom,omitzero"`
	SystemPrompt          *SystemPrompt   `json:"systemPrompt,omitzero"`
	Meta                  map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// ForkSessionRequestV2 is the params of a v2 session/fork (unstable in
// the v2 schema, advertised as session.fork): as [ForkSessionRequest],
// with v2's mcpServers, kept raw until the server decodes them.
type ForkSessionRequestV2 struct {
	SessionID             string          `json:"sessionId" acp:"required"`
	Cwd                   string          `json:"cwd" acp:"required"`
	AdditionalDirectories []string        `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            json.RawMessage `json:"mcpServers,omitzero"`
	Meta                  map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// ForkSessionResponseV2 is the result of a v2 session/fork: the new
// session's ID and its configuration options. The fork starts idle.
type ForkSessionResponseV2 struct {
	SessionID     string                  `json:"sessionId" acp:"required"`
	ConfigOptions []SessionConfigOptionV2 `json:"configOptions,omitzero" acp:"skipinvalid"`
	Meta          map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// ReplayFromStart is the ReplayFrom type that replays a session from its
// beginning.
const ReplayFromStart = "start"

// ReplayFrom says where a v2 session/resume starts its replay. The union is
// open; sessionkit supports only {"type":"start"}.
type ReplayFrom struct {
	Type string         `json:"type" acp:"required"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ResumeSessionResponseV2 is the result of a v2 session/resume, sent after
// the replay (if any) and the current state_update.
type ResumeSessionResponseV2 struct {
	ConfigOptions []SessionConfigOptionV2 `json:"configOptions,omitzero" acp:"skipinvalid"`
	Meta          map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// PromptResponseV2 is the result of a v2 session/prompt: the receipt of the
// prompt's insertion into the session, sent when its user message is in the
// session. The turn's end is the idle [StateUpdate].
type PromptResponseV2 struct {
	MessageID string         `json:"messageId" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ContentChunkV2 is a streamed piece of a v2 message: MessageID is required.
// Meta is scoped to the chunk.
type ContentChunkV2 struct {
	MessageID string         `json:"messageId" acp:"required"`
	Content   ContentBlock   `json:"content" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UserMessageChunkV2 is the v2 user_message_chunk update.
type UserMessageChunkV2 ContentChunkV2

// AgentMessageChunkV2 is the v2 agent_message_chunk update.
type AgentMessageChunkV2 ContentChunkV2

// AgentThoughtChunkV2 is the v2 agent_thought_chunk update.
type AgentThoughtChunkV2 ContentChunkV2

// UserMessage is the v2 user_message update: a user message upserted whole
// (the echo of a prompt, and user messages on replay). Content nil leaves
// the content unchanged; Meta patches by top-level key.
type UserMessage struct {
	MessageID string                   `json:"messageId" acp:"required"`
	Content   Optional[[]ContentBlock] `json:"content,omitzero" acp:"lenient,skipinvalid"`
	Meta      Optional[map[string]any] `json:"_meta,omitzero" acp:"lenient"`
}

// SessionState is the state of a v2 session: the state_update discriminator.
// The set is open: unknown values are kept verbatim.
type SessionState string

// The session states ACP v2 defines.
const (
	StateRunning        SessionState = "running"
	StateIdle           SessionState = "idle"
	StateRequiresAction SessionState = "requires_action"
)

// StopError is the stop reason "error" of ACP v2: the turn failed.
const StopError StopReason = "error"

// StateUpdate is the v2 state_update update. StopReason is set with
// StateIdle (open set in v2: end_turn, max_tokens, max_turn_requests,
// refusal, cancelled, error, or a "_" extension); Error is the failure of
// StopError, a JSON-RPC error object.
type StateUpdate struct {
	State      SessionState   `json:"state" acp:"required"`
	StopReason StopReason     `json:"stopReason,omitzero" acp:"lenient"`
	Error      *ErrorObject   `json:"error,omitzero" acp:"lenient"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ErrorObject is a JSON-RPC error object carried in a payload.
type ErrorObject struct {
	Code    int             `json:"code" acp:"required"`
	Message string          `json:"message" acp:"required"`
	Data    json.RawMessage `json:"data,omitzero"`
}

// AvailableCommandsUpdateV2 is the v2 available_commands_update update.
type AvailableCommandsUpdateV2 struct {
	AvailableCommands []CommandV2    `json:"availableCommands" acp:"required,skipinvalid"`
	Meta              map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CommandV2 is one v2 slash command: {"type":"command", name, description,
// input?}.
type CommandV2 struct {
	Name        string            `json:"name" acp:"required"`
	Description string            `json:"description" acp:"required"`
	Input       *TextCommandInput `json:"input,omitzero" acp:"lenient"` // nil: the command takes no input
	Meta        map[string]any    `json:"_meta,omitzero" acp:"lenient"`
}

// TextCommandInput is the v2 command input {"type":"text", hint}: text typed
// after the command name.
type TextCommandInput struct {
	Hint string         `json:"hint" acp:"required"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionNotificationV2 is the params of session/update on a v2
// connection: Update is decoded with [DecodeSessionUpdateV2].
type SessionNotificationV2 struct {
	SessionID string
	Update    SessionUpdate
	Meta      map[string]any
}

// MarshalJSON encodes n; Update must be set.
func (n SessionNotificationV2) MarshalJSON() ([]byte, error) {
	return json.Marshal(SessionNotification(n))
}

// UnmarshalJSON decodes n; errors wrap [ErrMalformed].
func (n *SessionNotificationV2) UnmarshalJSON(data []byte) error {
	var raw struct {
		SessionID string          `json:"sessionId" acp:"required"`
		Update    json.RawMessage `json:"update" acp:"required"`
		Meta      map[string]any  `json:"_meta,omitzero" acp:"lenient"`
	}
	if err := DecodeObject(data, &raw); err != nil {
		return err
	}
	if isNull(raw.Update) {
		return malformed(`field "update": expected object, got null`)
	}
	u, err := DecodeSessionUpdateV2(raw.Update)
	if err != nil {
		return malformed(`field "update": %s`, DescribeError(err))
	}
	*n = SessionNotificationV2{SessionID: raw.SessionID, Update: u, Meta: raw.Meta}
	return nil
}

// DecodeSessionUpdateV2 decodes one v2 SessionUpdate by its "sessionUpdate"
// discriminator: the v2 variants (user_message, state_update, chunks with a
// messageId, v2 commands) and the variants v1 shares (tool_call_update,
// usage_update, session_info_update, compaction_update,
// compaction_summary_chunk, notice). Any other kind, v1's tool_call included, gives
// an *UnknownSessionUpdate. Errors are those of [DecodeSessionUpdate].
func DecodeSessionUpdateV2(data []byte) (SessionUpdate, error) {
	return decodeSessionUpdate(data, newSessionUpdateV2)
}

// newSessionUpdateV2 returns a new v2 session update of the kind, or nil.
func newSessionUpdateV2(kind string) SessionUpdate {
	switch kind {
	case UpdateUserMessage:
		return new(UserMessage)
	case UpdateState:
		return new(StateUpdate)
	case UpdateUserMessageChunk:
		return new(UserMessageChunkV2)
	case UpdateAgentMessageChunk:
		return new(AgentMessageChunkV2)
	case UpdateAgentThoughtChunk:
		return new(AgentThoughtChunkV2)
	case UpdateAvailableCommands:
		return new(AvailableCommandsUpdateV2)
	case UpdateConfigOption:
		return new(ConfigOptionUpdateV2)
	case UpdateToolCallUpdate, UpdateUsage, UpdateSessionInfo, UpdateCompaction, UpdateCompactionSummaryChunk, UpdateNotice, UpdatePlanUpdate:
		return newSessionUpdate(kind) // the variants v1 shares
	}
	return nil
}

var (
	_ SessionUpdate = (*UserMessage)(nil)
	_ SessionUpdate = (*StateUpdate)(nil)
	_ SessionUpdate = (*UserMessageChunkV2)(nil)
	_ SessionUpdate = (*AgentMessageChunkV2)(nil)
	_ SessionUpdate = (*AgentThoughtChunkV2)(nil)
	_ SessionUpdate = (*AvailableCommandsUpdateV2)(nil)
)

// SessionUpdateKind returns "user_message".
func (*UserMessage) SessionUpdateKind() string { return UpdateUserMessage }

// SessionUpdateKind returns "state_update".
func (*StateUpdate) SessionUpdateKind() string { return UpdateState }

// SessionUpdateKind returns "user_message_chunk".
func (*UserMessageChunkV2) SessionUpdateKind() string { return UpdateUserMessageChunk }

// SessionUpdateKind returns "agent_message_chunk".
func (*AgentMessageChunkV2) SessionUpdateKind() string { return UpdateAgentMessageChunk }

// SessionUpdateKind returns "agent_thought_chunk".
func (*AgentThoughtChunkV2) SessionUpdateKind() string { return UpdateAgentThoughtChunk }

// SessionUpdateKind returns "available_commands_update".
func (*AvailableCommandsUpdateV2) SessionUpdateKind() string { return UpdateAvailableCommands }

func (*UserMessage) isSessionUpdate()               {}
func (*StateUpdate) isSessionUpdate()               {}
func (*UserMessageChunkV2) isSessionUpdate()        {}
func (*AgentMessageChunkV2) isSessionUpdate()       {}
func (*AgentThoughtChunkV2) isSessionUpdate()       {}
func (*AvailableCommandsUpdateV2) isSessionUpdate() {}

// MarshalJSON encodes u with "sessionUpdate":"user_message".
func (u UserMessage) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *UserMessage) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"state_update".
func (u StateUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
// An unknown state or stop reason is kept verbatim.
func (u *StateUpdate) UnmarshalJSON(data []byte) error {
	var raw struct {
		State      string         `json:"state" acp:"required"`
		StopReason string         `json:"stopReason,omitzero" acp:"lenient"`
		Error      *ErrorObject   `json:"error,omitzero" acp:"lenient"`
		Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
	}
	if err := decodeVariant(data, &raw, "sessionUpdate", UpdateState); err != nil {
		return err
	}
	*u = StateUpdate{State: SessionState(raw.State), StopReason: StopReason(raw.StopReason), Error: raw.Error, Meta: raw.Meta}
	return nil
}

// MarshalJSON encodes u with "sessionUpdate":"user_message_chunk".
func (u UserMessageChunkV2) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *UserMessageChunkV2) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"agent_message_chunk".
func (u AgentMessageChunkV2) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AgentMessageChunkV2) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"agent_thought_chunk".
func (u AgentThoughtChunkV2) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AgentThoughtChunkV2) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"available_commands_update".
func (u AvailableCommandsUpdateV2) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AvailableCommandsUpdateV2) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes c with "type":"command".
func (c CommandV2) MarshalJSON() ([]byte, error) { return marshalVariant("type", "command", c) }

// UnmarshalJSON decodes a command of type "command"; another type is an
// error (and the item is skipped in a command list).
func (c *CommandV2) UnmarshalJSON(data []byte) error {
	if _, err := Discriminator(data, "type", "command"); err != nil {
		return err
	}
	return decodeVariant(data, c, "type", "command")
}

// MarshalJSON encodes i with "type":"text".
func (i TextCommandInput) MarshalJSON() ([]byte, error) { return marshalVariant("type", "text", i) }

// UnmarshalJSON decodes an input of type "text".
func (i *TextCommandInput) UnmarshalJSON(data []byte) error {
	if _, err := Discriminator(data, "type", "command input"); err != nil {
		return err
	}
	return decodeVariant(data, i, "type", "text")
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *InitializeRequestV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ClientCapabilitiesV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *InitializeResponseV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AgentCapabilitiesV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *SessionCapabilitiesV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *PromptCapabilitiesV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes d; errors wrap [ErrMalformed].
func (d *UnsupportedProtocolVersionData) UnmarshalJSON(data []byte) error {
	return DecodeObject(data, d)
}

// MarshalJSON encodes d; a nil Supported is sent as [].
func (d UnsupportedProtocolVersionData) MarshalJSON() ([]byte, error) { return marshalObject(d) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *NewSessionRequestV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *NewSessionResponseV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ResumeSessionRequestV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ForkSessionRequestV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes f; errors wrap [ErrMalformed].
func (f *ReplayFrom) UnmarshalJSON(data []byte) error { return DecodeObject(data, f) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ResumeSessionResponseV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *PromptResponseV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ContentChunkV2) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes e; errors wrap [ErrMalformed].
func (e *ErrorObject) UnmarshalJSON(data []byte) error { return DecodeObject(data, e) }

// DualInitializeRequest is the initialize of a client that speaks v1 and v2: the
// v2 request with the v1 fields beside (a v2 agent ignores them).
type DualInitializeRequest struct {
	ProtocolVersion    ProtocolVersion      `json:"protocolVersion"`
	Info               Implementation       `json:"info"`
	Capabilities       ClientCapabilitiesV2 `json:"capabilities"`
	ClientCapabilities ClientCapabilities   `json:"clientCapabilities"`
	ClientInfo         *Implementation      `json:"clientInfo,omitzero"`
}

// RequestedVersion is the protocolVersion member of an initialize request.
type RequestedVersion struct {
	ProtocolVersion ProtocolVersion `json:"protocolVersion" acp:"required"`
}

// UnmarshalJSON decodes v; errors wrap [ErrMalformed].
func (v *RequestedVersion) UnmarshalJSON(data []byte) error { return DecodeObject(data, v) }
