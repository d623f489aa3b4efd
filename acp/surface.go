package acp

import (
	"github.com/sessionkit/sessionkit/history"
)

// surface maps what an ACP session's owner reports to the wire items of the
// connection's protocol version. Each connection has one, chosen by
// initialize; the owner goroutine calls it and stays the only producer of
// wire items, so the versions differ here and in their request handlers
// only, never in the order of what is sent.
type surface interface {
	// capable reports whether compaction entities go out (v1: the client's
	// capability; v2: always).
	capable() bool
	// commands is the update that advertises the slash commands.
	commands() SessionUpdate
	// agentChunk builds a text chunk of the agent message id.
	agentChunk(id string) func(text string) SessionUpdate
	// noteID is the message ID of agent text about a compaction (v1 sends
	// it without one).
	noteID(compactID string) string
	// userMessage is a replayed user message, or, when live, its echo (nil:
	// none).
	userMessage(m history.Message, replayed bool) SessionUpdate
	// toolCall is the update that creates a tool call.
	toolCall(c history.ToolCall) SessionUpdate
	// receipts reports whether a prompt is answered at its insertion (v2)
	// rather than at the end of its turn (v1).
	receipts() bool
}

// v1Surface is ACP v1.
type v1Surface struct{ srv *server }

func (v v1Surface) capable() bool { return v.srv.capable() }

func (v1Surface) commands() SessionUpdate {
	return &AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{{
		Name:        CompactCommand,
		Description: compactDescription,
		Input:       &AvailableCommandInput{Hint: compactHint},
	}, {
		Name:        UncompactCommand,
		Description: uncompactDescription,
	}}}
}

func (v1Surface) agentChunk(id string) func(string) SessionUpdate {
	return func(t string) SessionUpdate { return &AgentMessageChunk{Content: TextBlock(t), MessageID: id} }
}

func (v1Surface) noteID(string) string { return "" }

func (v1Surface) userMessage(m history.Message, replayed bool) SessionUpdate {
	if !replayed {
		return nil // the client's own prompt
	}
	return &UserMessageChunk{Content: TextBlock(m.Text), MessageID: m.ID}
}

func (v1Surface) toolCall(c history.ToolCall) SessionUpdate {
	return &ToolCall{ToolCallID: c.ID, Title: c.Name, Kind: "other", Status: "in_progress", RawInput: c.Arguments}
}

func (v1Surface) receipts() bool { return false }

// v2Surface is ACP v2: every message chunk has its messageId, user messages
// are upserted whole (live too: the echo of the prompt), the first
// tool_call_update creates a tool call, commands carry their types.
type v2Surface struct{ srv *server }

func (v2Surface) capable() bool { return true }

func (v2Surface) commands() SessionUpdate {
	return &AvailableCommandsUpdateV2{AvailableCommands: []CommandV2{{
		Name:        CompactCommand,
		Description: compactDescription,
		Input:       &TextCommandInput{Hint: compactHint},
	}, {
		Name:        UncompactCommand,
		Description: uncompactDescription,
	}}}
}

func (v2Surface) agentChunk(id string) func(string) SessionUpdate {
	return func(t string) SessionUpdate { return &AgentMessageChunkV2{MessageID: id, Content: TextBlock(t)} }
}

func (v2Surface) noteID(compactID string) string { return "note_" + compactID }

func (v2Surface) userMessage(m history.Message, _ bool) SessionUpdate {
	return &UserMessage{MessageID: m.ID, Content: Value([]ContentBlock{TextBlock(m.Text)})}
}

func (v2Surface) toolCall(c history.ToolCall) SessionUpdate {
	return &ToolCallUpdate{
		ToolCallID: c.ID,
		Title:      Value(c.Name),
		Kind:       Value(ToolKind("other")),
		Status:     Value(ToolCallStatus("in_progress")),
		RawInput:   c.Arguments,
	}
}

func (v2Surface) receipts() bool { return true }

// The /compact command as advertised.
const (
	compactDescription   = "Compact the conversation: summarize the older half of the history to free context"
	compactHint          = "optional instructions for the summary"
	uncompactDescription = "Undo the last compaction: put its messages back into the active history"
)
