package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Session update kinds: the "sessionUpdate" discriminator of [SessionUpdate].
const (
	UpdateUserMessageChunk       = "user_message_chunk"
	UpdateAgentMessageChunk      = "agent_message_chunk"
	UpdateAgentThoughtChunk      = "agent_thought_chunk"
	UpdateToolCall               = "tool_call"
	UpdateToolCallUpdate         = "tool_call_update"
	UpdatePlan                   = "plan"
	UpdateAvailableCommands      = "available_commands_update"
	UpdateCurrentMode            = "current_mode_update"
	UpdateUsage                  = "usage_update"
	UpdateCompaction             = "compaction_update"
	UpdateCompactionSummaryChunk = "compaction_summary_chunk"
	UpdateSessionInfo            = "session_info_update"
)

// SessionNotification is the params of the session/update notification the
// agent sends to the client.
type SessionNotification struct {
	SessionID string         `json:"sessionId" acp:"required"`
	Update    SessionUpdate  `json:"update" acp:"required"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// MarshalJSON encodes n; Update must be set.
func (n SessionNotification) MarshalJSON() ([]byte, error) {
	if n.Update == nil {
		return nil, errors.New("acp: a session notification needs an update")
	}
	return marshalObject(n)
}

// UnmarshalJSON decodes n; errors wrap [ErrMalformed].
func (n *SessionNotification) UnmarshalJSON(data []byte) error { return DecodeObject(data, n) }

// SessionUpdate is the SessionUpdate union, discriminated by
// "sessionUpdate". Its implementations are the pointer types
// *UserMessageChunk, *AgentMessageChunk, *AgentThoughtChunk, *ToolCall,
// *ToolCallUpdate, *Plan, *AvailableCommandsUpdate, *CurrentModeUpdate,
// *UsageUpdate, *CompactionUpdate, *CompactionSummaryChunk,
// *SessionInfoUpdate, *ConfigOptionUpdate, *Notice, *PlanUpdate,
// *PlanRemoved and *UnknownSessionUpdate.
// Each encodes with its discriminator.
//
// *ConfigOptionUpdate is v1's config_option_update.
type SessionUpdate interface {
	// SessionUpdateKind returns the "sessionUpdate" discriminator.
	SessionUpdateKind() string
	isSessionUpdate()
}

var (
	_ SessionUpdate = (*UserMessageChunk)(nil)
	_ SessionUpdate = (*AgentMessageChunk)(nil)
	_ SessionUpdate = (*AgentThoughtChunk)(nil)
	_ SessionUpdate = (*ToolCall)(nil)
	_ SessionUpdate = (*ToolCallUpdate)(nil)
	_ SessionUpdate = (*Plan)(nil)
	_ SessionUpdate = (*AvailableCommandsUpdate)(nil)
	_ SessionUpdate = (*CurrentModeUpdate)(nil)
	_ SessionUpdate = (*UsageUpdate)(nil)
	_ SessionUpdate = (*CompactionUpdate)(nil)
	_ SessionUpdate = (*CompactionSummaryChunk)(nil)
	_ SessionUpdate = (*SessionInfoUpdate)(nil)
	_ SessionUpdate = (*UnknownSessionUpdate)(nil)
)

// DecodeSessionUpdate decodes one SessionUpdate by its "sessionUpdate"
// discriminator. An unknown discriminator gives an *UnknownSessionUpdate; a
// missing or non-string discriminator, or a known one whose payload does not
// match the schema, is an error wrapping [ErrMalformed].
func DecodeSessionUpdate(data []byte) (SessionUpdate, error) {
	return decodeSessionUpdate(data, newSessionUpdate)
}

// newSessionUpdate returns a new v1 session update of the kind, or nil.
func newSessionUpdate(kind string) SessionUpdate {
	switch kind {
	case UpdateUserMessageChunk:
		return new(UserMessageChunk)
	case UpdateAgentMessageChunk:
		return new(AgentMessageChunk)
	case UpdateAgentThoughtChunk:
		return new(AgentThoughtChunk)
	case UpdateToolCall:
		return new(ToolCall)
	case UpdateToolCallUpdate:
		return new(ToolCallUpdate)
	case UpdatePlan:
		return new(Plan)
	case UpdateAvailableCommands:
		return new(AvailableCommandsUpdate)
	case UpdateCurrentMode:
		return new(CurrentModeUpdate)
	case UpdateUsage:
		return new(UsageUpdate)
	case UpdateCompaction:
		return new(CompactionUpdate)
	case UpdateCompactionSummaryChunk:
		return new(CompactionSummaryChunk)
	case UpdateSessionInfo:
		return new(SessionInfoUpdate)
	case UpdateConfigOption:
		return new(ConfigOptionUpdate)
	case UpdateNotice:
		return new(Notice)
	case UpdatePlanUpdate:
		return new(PlanUpdate)
	case UpdatePlanRemoved:
		return new(PlanRemoved)
	}
	return nil
}

// UnknownSessionUpdate is a session update whose kind this package does not
// know. Raw is the complete update object (discriminator included) and is
// encoded back verbatim.
type UnknownSessionUpdate struct {
	Kind string
	Raw  json.RawMessage
}

// SessionUpdateKind returns u.Kind.
func (u *UnknownSessionUpdate) SessionUpdateKind() string { return u.Kind }
func (*UnknownSessionUpdate) isSessionUpdate()            {}

// MarshalJSON returns Raw.
func (u UnknownSessionUpdate) MarshalJSON() ([]byte, error) {
	return (&UnknownVariant{Tag: u.Kind, Raw: u.Raw}).MarshalJSON()
}

// ContentChunk is a streamed piece of a message: the payload of the
// user_message_chunk, agent_message_chunk and agent_thought_chunk updates.
type ContentChunk struct {
	Content ContentBlock `json:"content" acp:"required"`
	// MessageID is string|null in the schema; "" means absent.
	MessageID string         `json:"messageId,omitzero" acp:"lenient"`
	Meta      map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// UserMessageChunk is the user_message_chunk update (used in replay).
type UserMessageChunk ContentChunk

// AgentMessageChunk is the agent_message_chunk update.
type AgentMessageChunk ContentChunk

// AgentThoughtChunk is the agent_thought_chunk update.
type AgentThoughtChunk ContentChunk

// ToolCall is the tool_call update: a new tool call.
type ToolCall struct {
	ToolCallID string             `json:"toolCallId" acp:"required"`
	Title      string             `json:"title" acp:"required"`
	Name       string             `json:"name,omitzero" acp:"lenient"` // string|null: "" = absent
	Kind       ToolKind           `json:"kind,omitzero" acp:"lenient"`
	Status     ToolCallStatus     `json:"status,omitzero" acp:"lenient"`
	Content    []ToolCallContent  `json:"content,omitzero" acp:"lenient,skipinvalid"`
	Locations  []ToolCallLocation `json:"locations,omitzero" acp:"lenient,skipinvalid"`
	// RawInput and RawOutput are any JSON value, kept verbatim.
	RawInput  json.RawMessage `json:"rawInput,omitzero"`
	RawOutput json.RawMessage `json:"rawOutput,omitzero"`
	Meta      map[string]any  `json:"_meta,omitzero" acp:"lenient"`
}

// ToolCallUpdate is the tool_call_update update: a patch of a tool call.
// Every field but ToolCallID is nullable and optional in the schema, so the
// patch fields are tri-state.
type ToolCallUpdate struct {
	ToolCallID string                       `json:"toolCallId" acp:"required"`
	Kind       Optional[ToolKind]           `json:"kind,omitzero" acp:"lenient"`
	Status     Optional[ToolCallStatus]     `json:"status,omitzero" acp:"lenient"`
	Title      Optional[string]             `json:"title,omitzero" acp:"lenient"`
	Name       Optional[string]             `json:"name,omitzero" acp:"lenient"`
	Content    Optional[[]ToolCallContent]  `json:"content,omitzero" acp:"lenient,skipinvalid"`
	Locations  Optional[[]ToolCallLocation] `json:"locations,omitzero" acp:"lenient,skipinvalid"`
	RawInput   json.RawMessage              `json:"rawInput,omitzero"`
	RawOutput  json.RawMessage              `json:"rawOutput,omitzero"`
	// Capabilities (ACP v2 only) are the controls the client may use on
	// the call now, such as tool_call/cancel: omitted leaves them, null
	// clears them.
	Capabilities Optional[ToolCallCapabilities] `json:"capabilities,omitzero" acp:"lenient"`
	Meta         map[string]any                 `json:"_meta,omitzero" acp:"lenient"`
}

// ToolKind is the category of a tool (a closed set in the schema).
type ToolKind string

// The tool kinds.
const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode"
	ToolKindOther      ToolKind = "other"
)

// UnmarshalJSON accepts only the schema's tool kinds.
func (k *ToolKind) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, k, "tool kind", ToolKindRead, ToolKindEdit, ToolKindDelete, ToolKindMove,
		ToolKindSearch, ToolKindExecute, ToolKindThink, ToolKindFetch, ToolKindSwitchMode, ToolKindOther)
}

// ToolCallStatus is the execution status of a tool call (a closed set).
type ToolCallStatus string

// The tool call statuses.
const (
	ToolCallPending    ToolCallStatus = "pending"
	ToolCallInProgress ToolCallStatus = "in_progress"
	ToolCallCompleted  ToolCallStatus = "completed"
	ToolCallFailed     ToolCallStatus = "failed"
	// ToolCallCancelled is ACP v2's status of a call cancelled before it
	// completed (v1 has none: sessionkit sends failed there).
	ToolCallCancelled ToolCallStatus = "cancelled"
)

// UnmarshalJSON accepts only the schema's tool call statuses.
func (s *ToolCallStatus) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, s, "tool call status", ToolCallPending, ToolCallInProgress, ToolCallCompleted, ToolCallFailed, ToolCallCancelled)
}

// ToolCallContent is the ToolCallContent union, discriminated by "type":
// "content" (Content), "diff" (Diff) or "terminal" (Terminal); an unknown
// type decodes into Unknown. Exactly one field is set.
type ToolCallContent struct {
	Content  *ToolContent
	Diff     *ToolDiff
	Terminal *ToolTerminal
	Unknown  *UnknownVariant
}

// ToolContent is the "content" tool call content: a content block.
type ToolContent struct {
	Content ContentBlock   `json:"content" acp:"required"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// ToolDiff is the "diff" tool call content. OldText "" means a new file
// (the schema's null).
type ToolDiff struct {
	Path    string         `json:"path" acp:"required"`
	OldText string         `json:"oldText,omitzero" acp:"lenient"`
	NewText string         `json:"newText" acp:"required"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
	// Partial, never sent, says OldText and NewText are not known to be the
	// whole file (the replaced text of an edit and its replacement): on ACP
	// v2 the diff then lists its change without a patch, since a patch of
	// the fragments would not apply to the file.
	Partial bool `json:"-"`
}

// ToolTerminal is the "terminal" tool call content.
type ToolTerminal struct {
	TerminalID string         `json:"terminalId" acp:"required"`
	Meta       map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// toolCallContents is the codec of [ToolCallContent].
var toolCallContents = unionCodec[ToolCallContent]{
	key: "type", name: "tool call content", one: "tool call content",
	variants: []unionVariant[ToolCallContent]{
		variantField("content", func(c *ToolCallContent) **ToolContent { return &c.Content }),
		variantField("diff", func(c *ToolCallContent) **ToolDiff { return &c.Diff }),
		variantField("terminal", func(c *ToolCallContent) **ToolTerminal { return &c.Terminal }),
	},
	unknown: func(c *ToolCallContent) **UnknownVariant { return &c.Unknown },
}

// MarshalJSON encodes the variant that is set, with its "type".
func (c ToolCallContent) MarshalJSON() ([]byte, error) { return toolCallContents.marshal(&c) }

// UnmarshalJSON decodes tool call content by its "type".
func (c *ToolCallContent) UnmarshalJSON(data []byte) error {
	return toolCallContents.unmarshal(data, c)
}

// ToolCallLocation is a file a tool call works on.
type ToolCallLocation struct {
	Path string         `json:"path" acp:"required"`
	Line *uint32        `json:"line,omitzero" acp:"lenient"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Plan is the plan update: the agent's execution plan, replacing any earlier
// one.
type Plan struct {
	Entries []PlanEntry    `json:"entries" acp:"required,lenient,skipinvalid"`
	Meta    map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// PlanEntry is one task of a [Plan].
type PlanEntry struct {
	Content  string            `json:"content" acp:"required"`
	Priority PlanEntryPriority `json:"priority" acp:"required"`
	Status   PlanEntryStatus   `json:"status" acp:"required"`
	Meta     map[string]any    `json:"_meta,omitzero" acp:"lenient"`
}

// PlanEntryPriority is the priority of a plan entry (a closed set).
type PlanEntryPriority string

// The plan entry priorities.
const (
	PriorityHigh   PlanEntryPriority = "high"
	PriorityMedium PlanEntryPriority = "medium"
	PriorityLow    PlanEntryPriority = "low"
)

// UnmarshalJSON accepts only the schema's priorities.
func (p *PlanEntryPriority) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, p, "plan entry priority", PriorityHigh, PriorityMedium, PriorityLow)
}

// PlanEntryStatus is the status of a plan entry (a closed set).
type PlanEntryStatus string

// The plan entry statuses.
const (
	PlanPending    PlanEntryStatus = "pending"
	PlanInProgress PlanEntryStatus = "in_progress"
	PlanCompleted  PlanEntryStatus = "completed"
)

// UnmarshalJSON accepts only the schema's plan entry statuses.
func (s *PlanEntryStatus) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, s, "plan entry status", PlanPending, PlanInProgress, PlanCompleted)
}

// AvailableCommandsUpdate is the available_commands_update update: the
// slash commands the agent offers now (sessionkit advertises /compact).
// AvailableCommands is required: nil is sent as [].
type AvailableCommandsUpdate struct {
	AvailableCommands []AvailableCommand `json:"availableCommands" acp:"required,lenient,skipinvalid"`
	Meta              map[string]any     `json:"_meta,omitzero" acp:"lenient"`
}

// AvailableCommand is one slash command.
type AvailableCommand struct {
	Name        string                 `json:"name" acp:"required"`
	Description string                 `json:"description" acp:"required"`
	Input       *AvailableCommandInput `json:"input,omitzero" acp:"lenient"` // nil: the command takes no input
	Meta        map[string]any         `json:"_meta,omitzero" acp:"lenient"`
}

// AvailableCommandInput describes a command's input. The schema has one
// kind: unstructured text typed after the command name, with a hint.
type AvailableCommandInput struct {
	Hint string         `json:"hint" acp:"required"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CurrentModeUpdate is the current_mode_update update.
type CurrentModeUpdate struct {
	CurrentModeID string         `json:"currentModeId" acp:"required"`
	Meta          map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// SessionInfoUpdate is the session_info_update update: session metadata,
// every field a patch (omitted = unchanged, null = cleared).
type SessionInfoUpdate struct {
	Title     Optional[string]         `json:"title,omitzero" acp:"lenient"`
	UpdatedAt Optional[string]         `json:"updatedAt,omitzero" acp:"lenient"` // ISO 8601
	Meta      Optional[map[string]any] `json:"_meta,omitzero" acp:"lenient"`
}

// SessionUpdateKind returns "session_info_update".
func (*SessionInfoUpdate) SessionUpdateKind() string { return UpdateSessionInfo }

func (*SessionInfoUpdate) isSessionUpdate() {}

// MarshalJSON encodes u with "sessionUpdate":"session_info_update".
func (u SessionInfoUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *SessionInfoUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// UsageUpdate is the usage_update update: context window use and cost.
type UsageUpdate struct {
	Used uint64         `json:"used" acp:"required"` // tokens currently in context
	Size uint64         `json:"size" acp:"required"` // context window size in tokens
	Cost *Cost          `json:"cost,omitzero" acp:"lenient"`
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Cost is the cumulative cost of a session.
type Cost struct {
	Amount   float64        `json:"amount" acp:"required"`
	Currency string         `json:"currency" acp:"required"` // ISO 4217 code or another unit
	Meta     map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// CompactionStatus is the lifecycle status of a compaction. The set is open:
// values beginning with "_" are implementation-specific, other unknown values
// are reserved for future ACP statuses, and a decoded unknown value is kept
// verbatim.
type CompactionStatus string

// The compaction statuses ACP defines.
const (
	CompactionInProgress CompactionStatus = "in_progress"
	CompactionCompleted  CompactionStatus = "completed"
	CompactionFailed     CompactionStatus = "failed"
	CompactionCancelled  CompactionStatus = "cancelled"
)

// Known reports whether s is one of the four statuses ACP defines.
func (s CompactionStatus) Known() bool {
	switch s {
	case CompactionInProgress, CompactionCompleted, CompactionFailed, CompactionCancelled:
		return true
	}
	return false
}

// Terminal reports whether s is completed, failed or cancelled.
func (s CompactionStatus) Terminal() bool {
	return s == CompactionCompleted || s == CompactionFailed || s == CompactionCancelled
}

// CompactionUpdate is the compaction_update update: it creates the
// compaction entity (first update for an ID) or patches it in place.
//
// Summary, Error and Meta are patch fields: omitted leaves the stored value
// unchanged, null clears it, a value replaces it; Summary: [] also clears.
// Their zero value is omitted, so an update built without them never carries
// the keys (docs/design.md §7.4). When decoding, a value of the wrong
// type is treated as omitted and invalid summary items are dropped, as the
// schema's x-deserialize annotations and the official SDK do.
type CompactionUpdate struct {
	// CompactionID is the agent-owned ID, unique within the session.
	CompactionID string           `json:"compactionId" acp:"required"`
	Status       CompactionStatus `json:"status" acp:"required"`
	// Summary is the user-displayable retained summary, an authoritative
	// replacement of whatever was accumulated.
	Summary Optional[[]ContentBlock] `json:"summary,omitzero" acp:"lenient,skipinvalid"`
	Error   Optional[string]         `json:"error,omitzero" acp:"lenient"`
	Meta    Optional[map[string]any] `json:"_meta,omitzero" acp:"lenient"`
}

// ErrInvalidUpdate is wrapped by the errors of [CompactionUpdate.Validate]
// and [CompactionSummaryChunk.Validate].
var ErrInvalidUpdate = errors.New("acp: invalid session update")

// Validate checks u before the agent sends it: a non-empty CompactionID, a
// non-empty Status that is either one ACP defines or an implementation
// extension beginning with "_" (other values are reserved for future ACP),
// and summary blocks a client accepts (exactly one known variant each; the
// official SDK silently drops others, which can turn a summary into [] and
// clear it). Errors wrap [ErrInvalidUpdate].
func (u *CompactionUpdate) Validate() error {
	if u.CompactionID == "" {
		return fmt.Errorf("%w: compaction_update without a compactionId", ErrInvalidUpdate)
	}
	switch {
	case u.Status == "":
		return fmt.Errorf("%w: compaction_update %q without a status", ErrInvalidUpdate, u.CompactionID)
	case !u.Status.Known() && !strings.HasPrefix(string(u.Status), "_"):
		return fmt.Errorf("%w: compaction_update %q: status %q is reserved for future ACP versions (custom statuses begin with \"_\")", ErrInvalidUpdate, u.CompactionID, u.Status)
	}
	if blocks, ok := u.Summary.Get(); ok {
		for i, b := range blocks {
			if err := b.validate(); err != nil {
				return fmt.Errorf("%w: compaction_update %q: summary item %d: %v", ErrInvalidUpdate, u.CompactionID, i, err)
			}
		}
	}
	return nil
}

// CompactionSummaryChunk is the compaction_summary_chunk update: one content
// block appended to a compaction's summary.
type CompactionSummaryChunk struct {
	CompactionID string       `json:"compactionId" acp:"required"`
	Content      ContentBlock `json:"content" acp:"required"` // exactly one block, never an array
	// Meta is scoped to the chunk. It is not a patch field: the schema says
	// omission and null both mean absent, so a plain map (nil = absent) is
	// exact and no tri-state is needed.
	Meta map[string]any `json:"_meta,omitzero" acp:"lenient"`
}

// Validate checks c before the agent sends it: a non-empty CompactionID and
// a content block a client accepts. Errors wrap [ErrInvalidUpdate].
func (c *CompactionSummaryChunk) Validate() error {
	if c.CompactionID == "" {
		return fmt.Errorf("%w: compaction_summary_chunk without a compactionId", ErrInvalidUpdate)
	}
	if err := c.Content.validate(); err != nil {
		return fmt.Errorf("%w: compaction_summary_chunk %q: %v", ErrInvalidUpdate, c.CompactionID, err)
	}
	return nil
}

// SessionUpdateKind returns "user_message_chunk".
func (*UserMessageChunk) SessionUpdateKind() string { return UpdateUserMessageChunk }

// SessionUpdateKind returns "agent_message_chunk".
func (*AgentMessageChunk) SessionUpdateKind() string { return UpdateAgentMessageChunk }

// SessionUpdateKind returns "agent_thought_chunk".
func (*AgentThoughtChunk) SessionUpdateKind() string { return UpdateAgentThoughtChunk }

// SessionUpdateKind returns "tool_call".
func (*ToolCall) SessionUpdateKind() string { return UpdateToolCall }

// SessionUpdateKind returns "tool_call_update".
func (*ToolCallUpdate) SessionUpdateKind() string { return UpdateToolCallUpdate }

// SessionUpdateKind returns "plan".
func (*Plan) SessionUpdateKind() string { return UpdatePlan }

// SessionUpdateKind returns "available_commands_update".
func (*AvailableCommandsUpdate) SessionUpdateKind() string { return UpdateAvailableCommands }

// SessionUpdateKind returns "current_mode_update".
func (*CurrentModeUpdate) SessionUpdateKind() string { return UpdateCurrentMode }

// SessionUpdateKind returns "usage_update".
func (*UsageUpdate) SessionUpdateKind() string { return UpdateUsage }

// SessionUpdateKind returns "compaction_update".
func (*CompactionUpdate) SessionUpdateKind() string { return UpdateCompaction }

// SessionUpdateKind returns "compaction_summary_chunk".
func (*CompactionSummaryChunk) SessionUpdateKind() string { return UpdateCompactionSummaryChunk }

func (*UserMessageChunk) isSessionUpdate()        {}
func (*AgentMessageChunk) isSessionUpdate()       {}
func (*AgentThoughtChunk) isSessionUpdate()       {}
func (*ToolCall) isSessionUpdate()                {}
func (*ToolCallUpdate) isSessionUpdate()          {}
func (*Plan) isSessionUpdate()                    {}
func (*AvailableCommandsUpdate) isSessionUpdate() {}
func (*CurrentModeUpdate) isSessionUpdate()       {}
func (*UsageUpdate) isSessionUpdate()             {}
func (*CompactionUpdate) isSessionUpdate()        {}
func (*CompactionSummaryChunk) isSessionUpdate()  {}

// MarshalJSON encodes u with "sessionUpdate":"user_message_chunk".
func (u UserMessageChunk) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *UserMessageChunk) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"agent_message_chunk".
func (u AgentMessageChunk) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AgentMessageChunk) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"agent_thought_chunk".
func (u AgentThoughtChunk) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AgentThoughtChunk) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"tool_call".
func (u ToolCall) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *ToolCall) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"tool_call_update".
func (u ToolCallUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *ToolCallUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"plan".
func (u Plan) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *Plan) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"available_commands_update".
func (u AvailableCommandsUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *AvailableCommandsUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"current_mode_update".
func (u CurrentModeUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *CurrentModeUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"usage_update".
func (u UsageUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *UsageUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes u with "sessionUpdate":"compaction_update". Omitted
// patch fields produce no key.
func (u CompactionUpdate) MarshalJSON() ([]byte, error) { return marshalUpdate(&u) }

// UnmarshalJSON decodes u; a "sessionUpdate" member, if present, must match.
func (u *CompactionUpdate) UnmarshalJSON(data []byte) error { return decodeUpdate(data, u) }

// MarshalJSON encodes c with "sessionUpdate":"compaction_summary_chunk".
func (c CompactionSummaryChunk) MarshalJSON() ([]byte, error) { return marshalUpdate(&c) }

// UnmarshalJSON decodes c; a "sessionUpdate" member, if present, must match.
func (c *CompactionSummaryChunk) UnmarshalJSON(data []byte) error { return decodeUpdate(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ContentChunk) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *ToolContent) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes d; errors wrap [ErrMalformed].
func (d *ToolDiff) UnmarshalJSON(data []byte) error { return DecodeObject(data, d) }

// UnmarshalJSON decodes t; errors wrap [ErrMalformed].
func (t *ToolTerminal) UnmarshalJSON(data []byte) error { return DecodeObject(data, t) }

// UnmarshalJSON decodes l; errors wrap [ErrMalformed].
func (l *ToolCallLocation) UnmarshalJSON(data []byte) error { return DecodeObject(data, l) }

// UnmarshalJSON decodes e; errors wrap [ErrMalformed].
func (e *PlanEntry) UnmarshalJSON(data []byte) error { return DecodeObject(data, e) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *AvailableCommand) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }

// UnmarshalJSON decodes i; errors wrap [ErrMalformed].
func (i *AvailableCommandInput) UnmarshalJSON(data []byte) error { return DecodeObject(data, i) }

// UnmarshalJSON decodes c; errors wrap [ErrMalformed].
func (c *Cost) UnmarshalJSON(data []byte) error { return DecodeObject(data, c) }
