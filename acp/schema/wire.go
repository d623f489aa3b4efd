package schema

// Wire types of ACP v1: the params and results of every message the agent
// sends or reads, following the official schema (npm
// @agentclientprotocol/sdk 2.4.0, schema/v1/schema.json) field by field.
//
// Optionality is decided per field (docs/design.md, principle 6):
//
//   - Required (schema "required"): a plain field without omitzero, tagged
//     acp:"required". A required array that is nil is sent as [].
//   - Optional where the zero value means absent: `omitzero`. This covers
//     the schema's optional nullable non-patch fields (string|null,
//     object|null, _meta) too: for them null and absent mean the same, so
//     "" or nil is sent as absent and a received null decodes as the zero
//     value. omitzero rather than omitempty so that an explicitly empty
//     array or object is still sent.
//   - Nullable patch fields: Optional[T] with `omitzero` (omitted, null or a
//     value).
//   - Capability booleans and objects that have a schema default are always
//     sent, which is what the default says anyway.
//
// Decoding follows the schema's x-deserialize annotations exactly as the
// official SDK does; see wire_decode.go. Fields of the schema that
// sessionkit does not use (configOptions, elicitation capabilities, and so
// on) are either kept as raw JSON or, when only a client would set them,
// left out; unknown members are ignored when decoding.

import (
	"encoding/json"
	"fmt"
) // Method names of ACP v1 used by sessionkit.
const (
	MethodInitialize    = "initialize"
	MethodAuthenticate  = "authenticate"
	MethodSessionNew    = "session/new"
	MethodSessionLoad   = "session/load"
	MethodSessionList   = "session/list"
	MethodSessionResume = "session/resume"
	MethodSessionClose  = "session/close"
	MethodSessionPrompt = "session/prompt"
	MethodSessionCancel = "session/cancel"   // notification
	MethodSessionUpdate = "session/update"   // notification, agent to client
	MethodCancelRequest = "$/cancel_request" // notification, protocol level
	ExtensionPrefix     = "_sessionkit/"     // prefix of this project's extension methods
)

// ProtocolVersion is the ACP major version negotiated by initialize.
type ProtocolVersion uint16

// ProtocolVersion1 is the version this package speaks.
const ProtocolVersion1 ProtocolVersion = 1

// InitializeRequest is the params of initialize (client to agent).
type InitializeRequest struct {
	ProtocolVersion    ProtocolVersion    `json:"protocolVersion" acp:"required"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities" acp:"lenient"` // schema default when absent: the zero value
	ClientInfo         *Implementation    `json:"clientInfo,omitzero" acp:"lenient"`
	Meta               map[string]any     `json:"_meta,omitzero" acp:"lenient"`
}

// ClientCapabilities are what the client supports.
//
// Session is kept as the raw JSON the client sent (nil when absent;
// compacted, otherwise verbatim, null included), so that
// [ClientCapabilities.SupportsCompaction] decides exactly on what was on the
// wire. Elicitation is kept raw too; sessionkit does not use it.
type ClientCapabilities struct {
	FS          FileSystemCapabilities `json:"fs" acp:"lenient"`
	Terminal    bool                   `json:"terminal" acp:"lenient"`
	Session     json.RawMessage        `json:"session,omitzero"`
	Auth        AuthCapabilities       `json:"auth,omitzero" acp:"lenient"`
	Elicitation json.RawMessage        `json:"elicitation,omitzero"`
	// Plan is clientCapabilities.plan as the client sent it (nil when
	// absent): see [ClientCapabilities.SupportsPlans].
	Plan json.RawMessage `json:"plan,omitzero"`
	Meta map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// SupportsPlans reports whether the client advertised
// clientCapabilities.plan as a JSON object: it takes the plan_update and
// plan_removed updates (sessionkit sends the legacy plan update otherwise).
// Absent, null or anything but an object means no.
func (c ClientCapabilities) SupportsPlans() bool { return jsonKind(c.Plan) == "object" }

// SupportsCompaction reports whether the client advertised
// clientCapabilities.session.compaction as a JSON object, the only form that
// allows compaction_update and compaction_summary_chunk. An absent or null
// session, an absent compaction, and a compaction that is null, true, a
// number, a string or an array all mean no support (docs/design.md §7.2).
func (c ClientCapabilities) SupportsCompaction() bool { return c.sessionObject("compaction") }

// sessionObject reports whether clientCapabilities.session has member key
// as a JSON object (anything else, null included, is not support).
func (c ClientCapabilities) sessionObject(key string) bool {
	if jsonKind(c.Session) != "object" {
		return false
	}
	var session map[string]json.RawMessage
	if json.Unmarshal(c.Session, &session) != nil {
		return false
	}
	return jsonKind(session[key]) == "object"
}

// SetSession stores s as the raw session capabilities.
func (c *ClientCapabilities) SetSession(s ClientSessionCapabilities) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("acp: encoding session capabilities: %w", err)
	}
	c.Session = raw
	return nil
}

// ClientSessionCapabilities is the typed form of clientCapabilities.session,
// for a client building its capabilities (see [ClientCapabilities.SetSession]).
type ClientSessionCapabilities struct {
	// Compaction, when non-nil, advertises the complete compaction contract
	// (sent as {}).
	Compaction *CompactionCapabilities `json:"compaction,omitzero" acp:"lenient"`
	Meta       map[string]any          `json:"_meta,omitzero" acp:"lenient"`
}

// CompactionCapabilities is the (empty) compaction capability object.
type CompactionCapabilities struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// FileSystemCapabilities say which fs/* methods the client supports.
type FileSystemCapabilities struct {
	ReadTextFile  bool           `json:"readTextFile" acp:"lenient"`
	WriteTextFile bool           `json:"writeTextFile" acp:"lenient"`
	Meta          map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// AuthCapabilities are the client's authentication capabilities.
type AuthCapabilities struct {
	Terminal bool           `json:"terminal,omitzero" acp:"lenient"` // default false
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Implementation names a client or an agent.
type Implementation struct {
	Name    string         `json:"name" acp:"required"`
	Title   string         `json:"title,omitzero" acp:"lenient"` // string|null: "" = absent
	Version string         `json:"version" acp:"required"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// InitializeResponse is the result of initialize.
type InitializeResponse struct {
	ProtocolVersion   ProtocolVersion   `json:"protocolVersion" acp:"required"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities" acp:"lenient"`
	// AuthMethods defaults to [] when absent, so nil is sent as absent.
	AuthMethods []AuthMethod    `json:"authMethods,omitzero" acp:"lenient,skipinvalid"`
	AgentInfo   *Implementation `json:"agentInfo,omitzero" acp:"lenient"`
	Meta        map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// AgentCapabilities are what the agent supports.
type AgentCapabilities struct {
	LoadSession         bool                  `json:"loadSession" acp:"lenient"`
	PromptCapabilities  PromptCapabilities    `json:"promptCapabilities" acp:"lenient"`
	McpCapabilities     McpCapabilities       `json:"mcpCapabilities" acp:"lenient"`
	SessionCapabilities SessionCapabilities   `json:"sessionCapabilities" acp:"lenient"`
	Auth                AgentAuthCapabilities `json:"auth,omitzero" acp:"lenient"`
	Meta                map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// PromptCapabilities say which content block types a prompt may contain
// beyond text and resource links.
type PromptCapabilities struct {
	Image           bool           `json:"image" acp:"lenient"`
	Audio           bool           `json:"audio" acp:"lenient"`
	EmbeddedContext bool           `json:"embeddedContext" acp:"lenient"`
	Meta            map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// McpCapabilities say which MCP transports the agent supports besides stdio.
type McpCapabilities struct {
	HTTP bool           `json:"http" acp:"lenient"`
	SSE  bool           `json:"sse" acp:"lenient"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionCapabilities say which optional session methods the agent
// supports; a non-nil field advertises the method (sent as {}).
type SessionCapabilities struct {
	List                  *Capability `json:"list,omitzero" acp:"lenient"`
	Delete                *Capability `json:"delete,omitzero" acp:"lenient"`
	AdditionalDirectories *Capability `json:"additionalDirectories,omitzero" acp:"lenient"`
	Resume                *Capability `json:"resume,omitzero" acp:"lenient"`
	Close                 *Capability `json:"close,omitzero" acp:"lenient"`
	// Fork advertises session/fork ([MethodSessionFork]).
	Fork *Capability `json:"fork,omitzero" acp:"lenient"`
	// SystemPrompt advertises the systemPrompt field of session/new,
	// session/load and session/resume.
	SystemPrompt *SystemPromptCapabilities `json:"systemPrompt,omitzero" acp:"lenient"`
	Meta         map[string]any            `json:"_meta,omitzero" acp:"lenient"`
}

// AgentAuthCapabilities are the agent's authentication capabilities.
type AgentAuthCapabilities struct {
	Logout *Capability    `json:"logout,omitzero" acp:"lenient"`
	Meta   map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Capability is a capability object without settings (the schema's
// SessionListCapabilities, SessionResumeCapabilities, LogoutCapabilities and
// their like): its presence advertises support.
type Capability struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// AuthMethod is an authentication method the agent offers. The schema's
// union has two shapes: Type "terminal" (with Args and Env) and the default
// agent-handled method (Type "" on the wire: no "type" key).
type AuthMethod struct {
	ID          string            `json:"id" acp:"required"`
	Name        string            `json:"name" acp:"required"`
	Description string            `json:"description,omitzero" acp:"lenient"`
	Type        string            `json:"type,omitzero" acp:"lenient"`
	Args        []string          `json:"args,omitzero" acp:"nulldefault"`
	Env         map[string]string `json:"env,omitzero" acp:"nulldefault"`
	Meta        map[string]any    `json:"_meta,omitzero" acp:"lenient"`
}

// AuthenticateRequest is the params of authenticate.
type AuthenticateRequest struct {
	MethodID string         `json:"methodId" acp:"required"`
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// AuthenticateResponse is the result of authenticate.
type AuthenticateResponse struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// NewSessionRequest is the params of session/new. McpServers is required:
// nil is sent as [], and a received null decodes as empty.
type NewSessionRequest struct {
	Cwd                   string         `json:"cwd" acp:"required"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            []McpServer    `json:"mcpServers" acp:"required,nulldefault"`
	SystemPrompt          *SystemPrompt  `json:"systemPrompt,omitzero"`
	Meta                  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// NewSessionResponse is the result of session/new.
type NewSessionResponse struct {
	SessionID     string                `json:"sessionId" acp:"required"`
	Modes         *SessionModeState     `json:"modes,omitzero" acp:"lenient"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitzero" acp:"lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// LoadSessionRequest is the params of session/load.
type LoadSessionRequest struct {
	McpServers            []McpServer    `json:"mcpServers" acp:"required,nulldefault"`
	Cwd                   string         `json:"cwd" acp:"required"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	SessionID             string         `json:"sessionId" acp:"required"`
	SystemPrompt          *SystemPrompt  `json:"systemPrompt,omitzero"`
	Meta                  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// LoadSessionResponse is the result of session/load, sent after the whole
// history has been replayed as session/update notifications.
type LoadSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitzero" acp:"lenient"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitzero" acp:"lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// ResumeSessionRequest is the params of session/resume: re-attach to a
// session without replaying its history.
type ResumeSessionRequest struct {
	SessionID             string         `json:"sessionId" acp:"required"`
	Cwd                   string         `json:"cwd" acp:"required"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            []McpServer    `json:"mcpServers,omitzero" acp:"nulldefault"`
	SystemPrompt          *SystemPrompt  `json:"systemPrompt,omitzero"`
	Meta                  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ResumeSessionResponse is the result of session/resume.
type ResumeSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitzero" acp:"lenient"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitzero" acp:"lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// CloseSessionRequest is the params of session/close.
type CloseSessionRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CloseSessionResponse is the result of session/close.
type CloseSessionResponse struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ListSessionsRequest is the params of session/list.
type ListSessionsRequest struct {
	Cwd    string         `json:"cwd,omitzero" acp:"lenient"`    // string|null: "" = all
	Cursor string         `json:"cursor,omitzero" acp:"lenient"` // string|null: "" = first page
	Meta   map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ListSessionsResponse is the result of session/list.
type ListSessionsResponse struct {
	Sessions   []SessionInfo  `json:"sessions" acp:"required,lenient,skipinvalid"`
	NextCursor string         `json:"nextCursor,omitzero" acp:"lenient"` // "" = last page
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionInfo is one session in a session/list response.
type SessionInfo struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Cwd       string         `json:"cwd" acp:"required"`
	Title     string         `json:"title,omitzero" acp:"lenient"`     // string|null: "" = absent
	UpdatedAt string         `json:"updatedAt,omitzero" acp:"lenient"` // ISO 8601
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionModeState is the current mode and the modes available.
type SessionModeState struct {
	CurrentModeID  string         `json:"currentModeId" acp:"required"`
	AvailableModes []SessionMode  `json:"availableModes" acp:"required,lenient,skipinvalid"`
	Meta           map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionMode is one mode of operation.
type SessionMode struct {
	ID          string         `json:"id" acp:"required"`
	Name        string         `json:"name" acp:"required"`
	Description string         `json:"description,omitzero" acp:"lenient"`
	Meta        map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// McpServer is an MCP server the client asks the agent to connect to. The
// schema's union is discriminated by "type": "http" and "sse" (Name, URL,
// Headers) or no type, meaning stdio (Name, Command, Args, Env). Any other
// type is read as stdio, as the official SDK does.
type McpServer struct {
	Type    string // "http", "sse" or "" (stdio)
	Name    string
	Command string        // stdio
	Args    []string      // stdio
	Env     []EnvVariable // stdio
	URL     string        // http, sse
	Headers []HTTPHeader  // http, sse
	Meta    map[string]any
}

type mcpServerRemote struct {
	Name    string         `json:"name" acp:"required"`
	URL     string         `json:"url" acp:"required"`
	Headers []HTTPHeader   `json:"headers" acp:"required,nulldefault"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

type mcpServerStdio struct {
	Name    string         `json:"name" acp:"required"`
	Command string         `json:"command" acp:"required"`
	Args    []string       `json:"args" acp:"required,nulldefault"`
	Env     []EnvVariable  `json:"env" acp:"required,nulldefault"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes s in the shape its Type selects.
func (s McpServer) MarshalJSON() ([]byte, error) {
	switch s.Type {
	case "http", "sse":
		return marshalVariant("type", s.Type, mcpServerRemote{Name: s.Name, URL: s.URL, Headers: s.Headers, Meta: s.Meta})
	case "":
		return marshalObject(mcpServerStdio{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Meta: s.Meta})
	}
	return nil, fmt.Errorf("acp: unknown MCP server type %q", s.Type)
}

// UnmarshalJSON decodes s by its "type".
func (s *McpServer) UnmarshalJSON(data []byte) error {
	*s = McpServer{}
	fields, err := members(data)
	if err != nil {
		return malformed("MCP server: %s", DescribeError(err))
	}
	var typ string
	if raw, ok := fields["type"]; ok {
		_ = json.Unmarshal(raw, &typ) // a non-string type is read as stdio
	}
	switch typ {
	case "http", "sse":
		var r mcpServerRemote
		if err := DecodeObject(data, &r); err != nil {
			return malformed("MCP server %q: %s", typ, DescribeError(err))
		}
		*s = McpServer{Type: typ, Name: r.Name, URL: r.URL, Headers: r.Headers, Meta: r.Meta}
	default:
		var r mcpServerStdio
		if err := DecodeObject(data, &r); err != nil {
			return malformed("MCP server (stdio): %s", DescribeError(err))
		}
		*s = McpServer{Name: r.Name, Command: r.Command, Args: r.Args, Env: r.Env, Meta: r.Meta}
	}
	return nil
}

// EnvVariable is an environment variable of a stdio MCP server.
type EnvVariable struct {
	Name  string         `json:"name" acp:"required"`
	Value string         `json:"value" acp:"required"`
	Meta  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// HTTPHeader is an HTTP header of an http or sse MCP server.
type HTTPHeader struct {
	Name  string         `json:"name" acp:"required"`
	Value string         `json:"value" acp:"required"`
	Meta  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PromptRequest is the params of session/prompt.
type PromptRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Prompt    []ContentBlock `json:"prompt" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PromptResponse is the result of session/prompt.
type PromptResponse struct {
	StopReason StopReason     `json:"stopReason" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// StopReason says why a prompt turn ended (a closed set in the schema).
type StopReason string

// The stop reasons.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// UnmarshalJSON accepts only the schema's stop reasons.
func (r *StopReason) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, r, "stop reason", StopEndTurn, StopMaxTokens, StopMaxTurnRequests, StopRefusal, StopCancelled)
}

// CancelNotification is the params of session/cancel.
type CancelNotification struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *InitializeRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ClientCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ClientSessionCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *CompactionCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *FileSystemCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AuthCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes i; errors wrap [ErrMalformed].
func (i *Implementation) UnmarshalJSON(data []byte) error { return DecodeObject(data, i) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *InitializeResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AgentCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *PromptCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *McpCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *SessionCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AgentAuthCapabilities) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *Capability) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes m; errors wrap [ErrMalformed].
func (m *AuthMethod) UnmarshalJSON(data []byte) error {
	if err := DecodeObject(data, m); err != nil {
		return err
	}
	if m.Type != "terminal" { // the agent shape has no type, args or env
		m.Type, m.Args, m.Env = "", nil, nil
	}
	return nil
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *AuthenticateRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *AuthenticateResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r, with a nil McpServers as [].
func (r NewSessionRequest) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *NewSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *NewSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r, with a nil McpServers as [].
func (r LoadSessionRequest) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *LoadSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *LoadSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ResumeSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ResumeSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *CloseSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *CloseSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ListSessionsRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ListSessionsResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *SessionInfo) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// MarshalJSON encodes r, with a nil Sessions as [].
func (r ListSessionsResponse) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// MarshalJSON encodes s, with a nil AvailableModes as [].
func (s SessionModeState) MarshalJSON() ([]byte, error) { return marshalObject(s) }

// UnmarshalJSON decodes s; errors wrap [ErrMalformed].
func (s *SessionModeState) UnmarshalJSON(data []byte) error { return DecodeObject(data, s) }

// UnmarshalJSON decodes m; errors wrap [ErrMalformed].
func (m *SessionMode) UnmarshalJSON(data []byte) error { return DecodeObject(data, m) }

// UnmarshalJSON decodes v; errors wrap [ErrMalformed].
func (v *EnvVariable) UnmarshalJSON(data []byte) error { return DecodeObject(data, v) }

// UnmarshalJSON decodes h; errors wrap [ErrMalformed].
func (h *HTTPHeader) UnmarshalJSON(data []byte) error { return DecodeObject(data, h) }

// MarshalJSON encodes r, with a nil Prompt as [].
func (r PromptRequest) MarshalJSON() ([]byte, error) { return marshalObject(r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *PromptRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *PromptResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes n; errors wrap [ErrMalformed].
func (n *CancelNotification) UnmarshalJSON(data []byte) error { return DecodeObject(data, n) }

// MethodSessionDelete is session/delete (v1 and v2; advertised under
// sessionCapabilities.delete in v1 and session.delete in v2).
const MethodSessionDelete = "session/delete"

// DeleteSessionRequest is the params of session/delete, the same in v1 and
// v2.
type DeleteSessionRequest struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// DeleteSessionResponse is the result of session/delete, the same in v1
// and v2.
type DeleteSessionResponse struct {
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *DeleteSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *DeleteSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// SupportsNotices reports whether the client advertised
// clientCapabilities.session.notices as a JSON object, the only form that
// allows notice updates on ACP v1. Absent, null and anything but an object
// mean no support, as for [ClientCapabilities.SupportsCompaction].
func (c ClientCapabilities) SupportsNotices() bool { return c.sessionObject("notices") }

// MethodSessionFork is session/fork (v1 and v2, unstable in the schemas the
// official TypeScript SDK 2.4.0 ships; advertised under
// sessionCapabilities.fork in v1, session.fork in v2): a new session
// whose history is another's.
const MethodSessionFork = "session/fork"

// ForkSessionRequest is the params of session/fork: the session forked
// and where the fork is served, as session/new takes them.
// sessionkit reads _meta.sessionkit.messageId (MetaForkMessageID), the
// message to fork at; without it the fork is made at the newest entry.
type ForkSessionRequest struct {
	SessionID             string         `json:"sessionId" acp:"required"`
	Cwd                   string         `json:"cwd" acp:"required"`
	AdditionalDirectories []string       `json:"additionalDirectories,omitzero" acp:"nulldefault"`
	McpServers            []McpServer    `json:"mcpServers,omitzero" acp:"nulldefault"`
	SystemPrompt          *SystemPrompt  `json:"systemPrompt,omitzero"`
	Meta                  map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ForkSessionResponse is the result of session/fork: the new session's ID,
// and its modes and configuration options as session/new gives them.
type ForkSessionResponse struct {
	SessionID     string                `json:"sessionId" acp:"required"`
	Modes         *SessionModeState     `json:"modes,omitzero" acp:"lenient"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitzero" acp:"lenient,skipinvalid"`
	Meta          map[string]any        `json:"_meta,omitzero" acp:"lenient"`
}

// MetaForkMessageID is the key under _meta.sessionkit of a
// [ForkSessionRequest] that names the message to fork at.
const MetaForkMessageID = "messageId"

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ForkSessionRequest) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }

// UnmarshalJSON decodes r; errors wrap [ErrMalformed].
func (r *ForkSessionResponse) UnmarshalJSON(data []byte) error { return DecodeObject(data, r) }
