package schema

import (
	"encoding/json"
	"time"
)

// Extension methods of this project.
const (
	// MethodCompact is the _sessionkit/compact request: params
	// {sessionId, instructions?}; answered with {compactId} as soon as the
	// compaction is queued.
	MethodCompact = "_sessionkit/compact"
	// MethodCompactFinished is the _sessionkit/compact_finished
	// notification: {sessionId, compactId, result}, sent when a compaction
	// requested with MethodCompact has finished.
	MethodCompactFinished = "_sessionkit/compact_finished"
	// MethodUncompact is the _sessionkit/uncompact request: params
	// {sessionId}; answered with {uncompactId} as soon as the undo of the
	// newest compaction is queued (session.Session.Uncompact).
	MethodUncompact = "_sessionkit/uncompact"
	// MethodUncompactFinished is the _sessionkit/uncompact_finished
	// notification: {sessionId, uncompactId, segmentId, restored, error?},
	// sent when an undo requested with MethodUncompact has finished.
	MethodUncompactFinished = "_sessionkit/uncompact_finished"
)

// MetaKey is the key under agentCapabilities._meta where a sessionkit agent
// lists its extension methods.
const MetaKey = "sessionkit"

// CompactParams are the params of the _sessionkit/compact request.
type CompactParams struct {
	SessionID    string `json:"sessionId"`
	Instructions string `json:"instructions,omitzero"`
	// Through, when set, is the ID of the Active message the compaction
	// archives up to and including (session.CompactRequest.Through); an ID
	// not in Active is refused with invalid params.
	Through string `json:"through,omitzero"`
}

// UncompactParams are the params of the _sessionkit/uncompact request.
type UncompactParams struct {
	SessionID string `json:"sessionId"`
}

// UncompactAccepted is the result of _sessionkit/uncompact: the undo is
// queued.
type UncompactAccepted struct {
	UncompactID string `json:"uncompactId"`
}

// UncompactFinishedParams are the params of the
// _sessionkit/uncompact_finished notification.
type UncompactFinishedParams struct {
	SessionID   string `json:"sessionId"`
	UncompactID string `json:"uncompactId"`
	SegmentID   string `json:"segmentId,omitzero"`
	Restored    int    `json:"restored"`
	Error       string `json:"error,omitzero"` // why nothing was undone
}

// CompactAccepted is the result of _sessionkit/compact: the compaction is
// queued.
type CompactAccepted struct {
	CompactID string `json:"compactId"`
}

// CompactFinishedParams are the params of the _sessionkit/compact_finished
// notification.
type CompactFinishedParams struct {
	SessionID string     `json:"sessionId"`
	CompactID string     `json:"compactId"`
	Result    WireResult `json:"result"`
}

// WireResult is a session.CompactResult on the wire.
type WireResult struct {
	CompactID    string       `json:"compactId"`
	Success      bool         `json:"success"`
	Compacted    bool         `json:"compacted"`
	Reason       string       `json:"reason"`
	Error        string       `json:"error,omitzero"`
	Trigger      string       `json:"trigger"`
	Cancelled    bool         `json:"cancelled,omitzero"`
	Segment      *WireSegment `json:"segment,omitzero"`
	InputTokens  int          `json:"inputTokens,omitzero"` // usage of the summary call
	OutputTokens int          `json:"outputTokens,omitzero"`
	// ContextGrew and Note are CompactResult's: a committed compaction that
	// did not make the context smaller, in words.
	ContextGrew bool   `json:"contextGrew,omitzero"`
	Note        string `json:"note,omitzero"`
}

// WireSegment is a history.Segment on the wire.
type WireSegment struct {
	ID           string        `json:"id"`
	CompactID    string        `json:"compactId"`
	Trigger      string        `json:"trigger"`
	Summary      string        `json:"summary"`
	Instructions string        `json:"instructions,omitzero"`
	Messages     []WireMessage `json:"messages"`
	CreatedAt    time.Time     `json:"createdAt"`
	StartedAt    time.Time     `json:"startedAt,omitzero"`
	InputTokens  int           `json:"inputTokens,omitzero"`
	OutputTokens int           `json:"outputTokens,omitzero"`
	Position     int64         `json:"position"`
}

// WireMessage is a history.Message on the wire.
type WireMessage struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Text       string         `json:"text"`
	ToolCalls  []WireToolCall `json:"toolCalls,omitzero"`
	ToolCallID string         `json:"toolCallId,omitzero"`
	Steer      bool           `json:"steer,omitzero"`
	CreatedAt  time.Time      `json:"createdAt"`
	// Attachments are a user message's (history.Attachment).
	Attachments []WireAttachment `json:"attachments,omitzero"`
}

// WireToolCall is a history.ToolCall on the wire.
type WireToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitzero"`
}

// WireAttachment is a history.Attachment on the wire (in the messages of a
// WireSegment); Data is base64, as encoding/json writes bytes.
type WireAttachment struct {
	Kind     string `json:"kind"`
	At       int    `json:"at,omitzero"`
	Name     string `json:"name,omitzero"`
	URI      string `json:"uri,omitzero"`
	MimeType string `json:"mimeType,omitzero"`
	Text     string `json:"text,omitzero"`
	Data     []byte `json:"data,omitzero"`
	Note     string `json:"note,omitzero"`
}
