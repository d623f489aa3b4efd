package history

import "errors"

// WindowQuery asks for the messages around one message of a session (see
// [Reader.Window]).
type WindowQuery struct {
	// Around is the ID of a message of the session, Active or archived.
	// When several messages have that ID, the newest is meant.
	Around string
	// Before and After are how many messages before and after Around to
	// read as well: fewer at the ends of the session's history. Each lies
	// in 0..MaxWindow.
	Before, After int
}

// MaxWindow bounds [WindowQuery.Before] and [WindowQuery.After]: a window
// holds at most 2*MaxWindow+1 messages.
const MaxWindow = 100

// WindowMessage is one message of a window read ([Reader.Window]) and
// where it stands, as a [SearchHit] says where a hit stands.
type WindowMessage struct {
	Message Message
	// Position is the message's timeline position.
	Position int64
	// SegmentID is the Segment that archived the message, "" for a
	// message in Active (a message of an undone Segment is Active again).
	SegmentID string
	// Compaction is the number of the compaction whose Segment archived
	// the message (see [SearchHit.Compaction]), 0 for a message in Active.
	Compaction int
	// ToolName is the tool a tool message answers (the name of the call in
	// an assistant message before it, as [SearchHit.ToolName] finds it),
	// "" for other roles and for a call the store did not find.
	ToolName string
}

// ErrUnknownMessage is wrapped, together with [ErrInvalid], by the error
// of [Reader.Window] for a message ID the session does not hold.
var ErrUnknownMessage = errors.New("history: no such message in the session")
