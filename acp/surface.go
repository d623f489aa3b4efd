package acp

import (
	"github.com/sessionkit/sessionkit/acp/schema"
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
	commands() schema.SessionUpdate
	// agentChunk builds a text chunk of the agent message id.
	agentChunk(id string) func(text string) schema.SessionUpdate
	// thoughtChunk builds a chunk of the reasoning of the agent message
	// id (its own message on the wire, thoughtID).
	thoughtChunk(id string) func(text string) schema.SessionUpdate
	// noteID is the message ID of agent text about a compaction (v1 sends
	// it without one).
	noteID(compactID string) string
	// userMessage is the updates of a replayed user message, or, when
	// live, of its echo (none: nil).
	userMessage(m history.Message, replayed bool) []schema.SessionUpdate
	// toolCall is the update that creates a tool call, shown as d says.
	toolCall(c history.ToolCall, d ToolCallDisplay) schema.SessionUpdate
	// toolUpdate is the update that patches a tool call with u.
	toolUpdate(u *schema.ToolCallUpdate) schema.SessionUpdate
	// plan is the update that shows the session's plan as entries (none:
	// the plan is cleared).
	plan(entries []schema.PlanEntry) schema.SessionUpdate
	// receipts reports whether a prompt is answered at its insertion (v2)
	// rather than at the end of its turn (v1).
	receipts() bool
	// states reports whether the session's state goes out as state_update
	// (v2), which a replay ends with.
	states() bool
	// takesNotices reports whether notice updates go out (v1: the client's
	// session.notices capability; v2: always).
	takesNotices() bool

	// abandonsRequests reports whether the client is told that a request
	// to it is no longer waited for (v2).
	abandonsRequests() bool
	// clientTools reports whether the client has the fs/* and terminal/*
	// methods (v1; v2 has none) for a [ToolClient].
	clientTools() bool
	// permission is the session/request_permission params that ask about
	// toolCall.
	permission(sessionID string, toolCall schema.ToolCallUpdate, options []schema.PermissionOption) any
}

// v1Surface is ACP v1; compaction and notices are the connection's
// capabilities as the session found them when it opened.
type v1Surface struct {
	compaction bool
	notices    bool // session.notices (an object)
	plans      bool // clientCapabilities.plan (an object)
}

func (v v1Surface) capable() bool { return v.compaction }

func (v1Surface) commands() schema.SessionUpdate {
	return &schema.AvailableCommandsUpdate{AvailableCommands: slashCommands(func(c advertised) schema.AvailableCommand {
		return schema.AvailableCommand{Name: c.name, Description: c.description, Input: withHint(c.hint, func(h string) *schema.AvailableCommandInput { return &schema.AvailableCommandInput{Hint: h} })}
	})}
}

func (v1Surface) agentChunk(id string) func(string) schema.SessionUpdate {
	return func(t string) schema.SessionUpdate {
		return &schema.AgentMessageChunk{Content: schema.TextBlock(t), MessageID: id}
	}
}

func (v1Surface) thoughtChunk(id string) func(string) schema.SessionUpdate {
	return func(t string) schema.SessionUpdate {
		return &schema.AgentThoughtChunk{Content: schema.TextBlock(t), MessageID: thoughtID(id)}
	}
}

// thoughtID is the message ID of the reasoning of the agent message id: a
// message of its own (v2's agent_thought chunks are keyed apart from the
// agent message's).
func thoughtID(id string) string { return "thought_" + id }

func (v1Surface) noteID(string) string { return "" }

// userMessage replays m as one user_message_chunk per content block.
func (v1Surface) userMessage(m history.Message, replayed bool) []schema.SessionUpdate {
	if !replayed {
		return nil // the client's own prompt
	}
	blocks := messageBlocks(&m)
	out := make([]schema.SessionUpdate, len(blocks))
	for i, b := range blocks {
		out[i] = &schema.UserMessageChunk{Content: b, MessageID: m.ID}
	}
	return out
}

func (v1Surface) toolCall(c history.ToolCall, d ToolCallDisplay) schema.SessionUpdate {
	title, kind := shownAs(c, d)
	return &schema.ToolCall{ToolCallID: c.ID, Title: title, Name: c.Name, Kind: kind, Status: schema.ToolCallInProgress, RawInput: c.Arguments,
		Locations: d.Locations, Content: d.Content}
}

func (v1Surface) toolUpdate(u *schema.ToolCallUpdate) schema.SessionUpdate { return v1ToolUpdate(u) }

// planID is the ID of a session's one plan in plan_update and
// plan_removed.
const planID = "plan"

// plan is plan_update (plan_removed for none) to a client that advertised
// clientCapabilities.plan, the legacy plan update otherwise.
func (v v1Surface) plan(entries []schema.PlanEntry) schema.SessionUpdate {
	switch {
	case !v.plans && entries == nil:
		return &schema.Plan{Entries: []schema.PlanEntry{}} // required: [], not null
	case !v.plans:
		return &schema.Plan{Entries: entries}
	case len(entries) == 0:
		return &schema.PlanRemoved{PlanID: planID}
	}
	return planItems(entries)
}

// planItems is the plan_update of a plan of entries.
func planItems(entries []schema.PlanEntry) *schema.PlanUpdate {
	return &schema.PlanUpdate{Plan: schema.PlanContent{Type: schema.PlanTypeItems, PlanID: planID, Entries: entries}}
}

// shownAs is the title and kind of tool call c shown as d says.
func shownAs(c history.ToolCall, d ToolCallDisplay) (string, schema.ToolKind) {
	title, kind := d.Title, d.Kind
	if title == "" {
		title = c.Name
	}
	if kind == "" {
		kind = schema.ToolKindOther
	}
	return title, kind
}

func (v1Surface) receipts() bool { return false }

func (v1Surface) states() bool { return false }

func (v v1Surface) takesNotices() bool { return v.notices }

func (v1Surface) clientTools() bool { return true }

func (v1Surface) abandonsRequests() bool { return false }

func (v1Surface) permission(sessionID string, toolCall schema.ToolCallUpdate, options []schema.PermissionOption) any {
	return schema.RequestPermissionRequest{SessionID: sessionID, ToolCall: toolCall, Options: options}
}

// v2Surface is ACP v2: every message chunk has its messageId, user messages
// are upserted whole (live too: the echo of the prompt), the first
// tool_call_update creates a tool call, commands carry their types.
// v2Surface is the v2 protocol surface; cwd, the session's working
// directory, names the files of diff patches (set by the session's open).
type v2Surface struct {
	cwd string
}

func (v2Surface) capable() bool { return true }

func (v2Surface) commands() schema.SessionUpdate {
	return &schema.AvailableCommandsUpdateV2{AvailableCommands: slashCommands(func(c advertised) schema.CommandV2 {
		return schema.CommandV2{Name: c.name, Description: c.description, Input: withHint(c.hint, func(h string) *schema.TextCommandInput { return &schema.TextCommandInput{Hint: h} })}
	})}
}

func (v2Surface) agentChunk(id string) func(string) schema.SessionUpdate {
	return func(t string) schema.SessionUpdate {
		return &schema.AgentMessageChunkV2{MessageID: id, Content: schema.TextBlock(t)}
	}
}

func (v2Surface) thoughtChunk(id string) func(string) schema.SessionUpdate {
	return func(t string) schema.SessionUpdate {
		return &schema.AgentThoughtChunkV2{MessageID: thoughtID(id), Content: schema.TextBlock(t)}
	}
}

func (v2Surface) noteID(compactID string) string { return "note_" + compactID }

func (v2Surface) userMessage(m history.Message, _ bool) []schema.SessionUpdate {
	return []schema.SessionUpdate{&schema.UserMessage{MessageID: m.ID, Content: schema.Value(messageBlocks(&m))}}
}

func (v v2Surface) toolCall(c history.ToolCall, d ToolCallDisplay) schema.SessionUpdate {
	title, kind := shownAs(c, d)
	u := &schema.ToolCallUpdate{
		ToolCallID: c.ID,
		Title:      schema.Value(title),
		Name:       schema.Value(c.Name),
		Kind:       schema.Value(kind),
		Status:     schema.Value(schema.ToolCallInProgress),
		RawInput:   c.Arguments,
		// Every call may be cancelled until it ends (tool_call/cancel).
		Capabilities: cancellable(),
	}
	if len(d.Locations) > 0 {
		u.Locations = schema.Value(d.Locations)
	}
	if len(d.Content) > 0 {
		u.Content = schema.Value(d.Content)
	}
	return v.toolUpdate(u)
}

// toolUpdate converts the content v2 shapes differently (a diff).
func (v v2Surface) toolUpdate(u *schema.ToolCallUpdate) schema.SessionUpdate {
	c := *u
	v2Controls(&c)
	if content, ok := u.Content.Get(); ok {
		c.Content = schema.Value(v2Content(content, v.cwd))
	}
	return &c
}

// plan is plan_update (v2 has no plan_removed: a cleared plan has no
// entries).
func (v2Surface) plan(entries []schema.PlanEntry) schema.SessionUpdate { return planItems(entries) }

func (v2Surface) receipts() bool { return true }

func (v2Surface) states() bool { return true }

func (v2Surface) takesNotices() bool { return true }

func (v2Surface) clientTools() bool { return false }

func (v2Surface) abandonsRequests() bool { return true }

// permission has the call's title, and the call, its diffs shaped for v2,
// as its subject.
func (v v2Surface) permission(sessionID string, toolCall schema.ToolCallUpdate, options []schema.PermissionOption) any {
	title, _ := toolCall.Title.Get()
	if title == "" {
		title = "Allow this tool call?"
	}
	if content, ok := toolCall.Content.Get(); ok {
		toolCall.Content = schema.Value(v2Content(content, v.cwd))
	}
	return schema.RequestPermissionRequestV2{SessionID: sessionID, Title: title, Subject: &schema.PermissionSubject{ToolCall: toolCall}, Options: options}
}

// advertised is a command a session advertises, in either version's
// form: its input, when it takes one, is free text described by hint.
type advertised struct{ name, description, hint string }

// The /compact and /uncompact commands as advertised.
var commandList = []advertised{
	{CompactCommand, "Compact the conversation: summarize the older half of the history to free context", "optional instructions for the summary"},
	{UncompactCommand, "Undo the last compaction: put its messages back into the active history", ""},
}

// slashCommands is commandList in a version's form (each as form makes it).
func slashCommands[C any](form func(advertised) C) []C {
	out := make([]C, len(commandList))
	for i, c := range commandList {
		out[i] = form(c)
	}
	return out
}

// withHint is the input of a command that takes free text described by
// hint (as input makes it), nil for a command that takes none.
func withHint[I any](hint string, input func(string) *I) *I {
	if hint == "" {
		return nil
	}
	return input(hint)
}
