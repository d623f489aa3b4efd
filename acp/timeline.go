package acp

import (
	"github.com/sessionkit/sessionkit/acp/schema"
	"maps"
	"slices"
	"strings"
)

// Timeline is a client-side reducer of session/update notifications with the
// Session Compaction RFD's client semantics. Apply updates in receive order;
// Items is the resulting timeline.
//
//   - The first notification for a compaction ID creates its entity at that
//     position (status in_progress when it is a chunk); later updates and
//     chunks patch it in place and never move it.
//   - Patch fields: omitted leaves the value, null clears it, a value
//     replaces it; summary [] clears like null.
//   - A chunk appends its block to the summary; a concrete summary replaces
//     everything accumulated, and later chunks append to it.
//   - Unknown statuses are kept verbatim.
//   - Message chunks with a messageId join the message with that ID wherever
//     it stands; chunks without one join the last item when it is a message
//     of the same kind, else start a new message. A compaction entity
//     between two ID-less chunks therefore splits them.
//
// With Protocol set to ProtocolVersion2 it reduces ACP v2 updates: a
// concrete _meta of an upserted entity patches it by top-level key (a null
// value removes that key, {} changes nothing, nested objects are replaced,
// not merged; _meta: null clears it all), user_message upserts a user
// message, message chunks join their message by kind and messageId (each
// kind has its own ID space), the first tool_call_update of an ID creates
// the tool call, and state_update sets State and StopReason. v1 updates are
// reduced the same on both versions except for _meta.
//
// Replay into a fresh Timeline: replayed IDs may differ from live ones
// (docs/design.md §8), so merging replay into a live timeline is not
// supported. The zero value is an empty timeline. A Timeline is not safe for
// concurrent use.
type Timeline struct {
	Items []TimelineItem
	// Protocol is the connection's version; 0 means v1.
	Protocol schema.ProtocolVersion
	// State and StopReason are the last v2 state_update's ("" before any).
	State      schema.SessionState
	StopReason schema.StopReason

	compactions map[string]int // compaction ID → index in Items
	messages    map[string]int // message ID → index in Items
	tools       map[string]int // tool call ID → index in Items
}

// TimelineItem is one item of a [Timeline]: exactly one field is set.
type TimelineItem struct {
	Message    *TimelineMessage
	Compaction *CompactionEntity
	ToolCall   *TimelineToolCall
}

// TimelineMessage is a message assembled from chunks.
type TimelineMessage struct {
	Kind      string // UpdateUserMessageChunk, UpdateAgentMessageChunk or UpdateAgentThoughtChunk
	MessageID string
	Content   []schema.ContentBlock
}

// Text returns the concatenated text blocks of the message.
func (m *TimelineMessage) Text() string { return blocksText(m.Content) }

// TimelineToolCall is a tool call with its latest state.
type TimelineToolCall struct {
	ID    string
	Title string
	// Name is the tool's name, when the agent sent it (ACP's optional name;
	// sessionkit sends it), "" otherwise.
	Name    string
	Status  schema.ToolCallStatus
	Content []schema.ToolCallContent
}

// CompactionEntity is the client-side state of one compaction.
type CompactionEntity struct {
	ID      string
	Status  schema.CompactionStatus
	Summary []schema.ContentBlock // nil: no summary
	Error   *string               // nil: no error
	Meta    map[string]any        // nil: no metadata
}

// SummaryText returns the concatenated text blocks of the summary.
func (e *CompactionEntity) SummaryText() string { return blocksText(e.Summary) }

func blocksText(blocks []schema.ContentBlock) string {
	if len(blocks) == 1 && blocks[0].Text != nil {
		return blocks[0].Text.Text
	}
	var b strings.Builder
	for _, c := range blocks {
		if c.Text != nil {
			b.WriteString(c.Text.Text)
		}
	}
	return b.String()
}

// Clone returns a deep copy of t: applying updates to either leaves the
// other unchanged.
func (t *Timeline) Clone() Timeline {
	out := Timeline{Items: make([]TimelineItem, len(t.Items)), Protocol: t.Protocol, State: t.State, StopReason: t.StopReason}
	for i, it := range t.Items {
		switch {
		case it.Message != nil:
			m := *it.Message
			m.Content = slices.Clone(m.Content)
			out.Items[i].Message = &m
		case it.Compaction != nil:
			e := *it.Compaction
			e.Summary = slices.Clone(e.Summary)
			if e.Error != nil {
				msg := *e.Error
				e.Error = &msg
			}
			e.Meta = maps.Clone(e.Meta)
			out.Items[i].Compaction = &e
		case it.ToolCall != nil:
			c := *it.ToolCall
			c.Content = slices.Clone(c.Content)
			out.Items[i].ToolCall = &c
		}
	}
	if t.compactions != nil {
		out.compactions = maps.Clone(t.compactions)
		out.messages = maps.Clone(t.messages)
		out.tools = maps.Clone(t.tools)
	}
	return out
}

// Compaction returns the entity with the given ID, or nil.
func (t *Timeline) Compaction(id string) *CompactionEntity {
	if i, ok := t.compactions[id]; ok {
		return t.Items[i].Compaction
	}
	return nil
}

// Compactions returns the compaction entities in timeline order.
func (t *Timeline) Compactions() []*CompactionEntity {
	var out []*CompactionEntity
	for _, it := range t.Items {
		if it.Compaction != nil {
			out = append(out, it.Compaction)
		}
	}
	return out
}

func (t *Timeline) init() {
	if t.compactions == nil {
		t.compactions = map[string]int{}
		t.messages = map[string]int{}
		t.tools = map[string]int{}
	}
}

// entity returns the entity for id, creating it at the end of the timeline
// (in_progress, no optional values) when it is first seen.
func (t *Timeline) entity(id string) *CompactionEntity {
	if e := t.Compaction(id); e != nil {
		return e
	}
	e := &CompactionEntity{ID: id, Status: schema.CompactionInProgress}
	t.compactions[id] = len(t.Items)
	t.Items = append(t.Items, TimelineItem{Compaction: e})
	return e
}

// Apply reduces one update into the timeline. Updates of kinds the
// timeline does not model (usage, commands, plans, modes, unknown kinds) are
// ignored.
func (t *Timeline) Apply(u schema.SessionUpdate) {
	t.init()
	switch v := u.(type) {
	case *schema.CompactionUpdate:
		e := t.entity(v.CompactionID)
		e.Status = v.Status
		if v.Summary.IsNull() {
			e.Summary = nil
		} else if blocks, ok := v.Summary.Get(); ok {
			if len(blocks) == 0 {
				e.Summary = nil // [] clears, like null
			} else {
				e.Summary = append([]schema.ContentBlock(nil), blocks...)
			}
		}
		if v.Error.IsNull() {
			e.Error = nil
		} else if s, ok := v.Error.Get(); ok {
			e.Error = &s
		}
		if v.Meta.IsNull() {
			e.Meta = nil
		} else if m, ok := v.Meta.Get(); ok {
			if t.Protocol == schema.ProtocolVersion2 {
				e.Meta = patchMeta(e.Meta, m)
			} else {
				e.Meta = m // v1: a concrete _meta replaces wholesale
			}
		}
	case *schema.CompactionSummaryChunk:
		e := t.entity(v.CompactionID)
		e.Summary = append(e.Summary, v.Content)
	case *schema.UserMessage:
		m := t.message(schema.UpdateUserMessageChunk, v.MessageID)
		if v.Content.IsNull() {
			m.Content = nil
		} else if c, ok := v.Content.Get(); ok {
			m.Content = slices.Clone(c)
		}
	case *schema.UserMessageChunkV2:
		m := t.message(schema.UpdateUserMessageChunk, v.MessageID)
		m.Content = append(m.Content, v.Content)
	case *schema.AgentMessageChunkV2:
		m := t.message(schema.UpdateAgentMessageChunk, v.MessageID)
		m.Content = append(m.Content, v.Content)
	case *schema.AgentThoughtChunkV2:
		m := t.message(schema.UpdateAgentThoughtChunk, v.MessageID)
		m.Content = append(m.Content, v.Content)
	case *schema.StateUpdate:
		t.State, t.StopReason = v.State, v.StopReason
	case *schema.UserMessageChunk:
		t.chunk(schema.UpdateUserMessageChunk, (*schema.ContentChunk)(v))
	case *schema.AgentMessageChunk:
		t.chunk(schema.UpdateAgentMessageChunk, (*schema.ContentChunk)(v))
	case *schema.AgentThoughtChunk:
		t.chunk(schema.UpdateAgentThoughtChunk, (*schema.ContentChunk)(v))
	case *schema.ToolCall:
		tc := &TimelineToolCall{ID: v.ToolCallID, Title: v.Title, Name: v.Name, Status: v.Status, Content: v.Content}
		if i, ok := t.tools[v.ToolCallID]; ok {
			t.Items[i].ToolCall = tc
			return
		}
		t.tools[v.ToolCallID] = len(t.Items)
		t.Items = append(t.Items, TimelineItem{ToolCall: tc})
	case *schema.ToolCallUpdate:
		i, ok := t.tools[v.ToolCallID]
		if !ok {
			t.tools[v.ToolCallID] = len(t.Items)
			t.Items = append(t.Items, TimelineItem{ToolCall: &TimelineToolCall{ID: v.ToolCallID}})
			i = len(t.Items) - 1
		}
		tc := t.Items[i].ToolCall
		if s, ok := v.Status.Get(); ok {
			tc.Status = s
		}
		if s, ok := v.Title.Get(); ok {
			tc.Title = s
		}
		if s, ok := v.Name.Get(); ok {
			tc.Name = s
		}
		if v.Content.IsNull() {
			tc.Content = nil
		} else if c, ok := v.Content.Get(); ok {
			tc.Content = c
		}
	}
}

func (t *Timeline) chunk(kind string, c *schema.ContentChunk) {
	if c.MessageID != "" {
		if i, ok := t.messages[c.MessageID]; ok {
			m := t.Items[i].Message
			m.Content = append(m.Content, c.Content)
			return
		}
	} else if n := len(t.Items); n > 0 {
		if m := t.Items[n-1].Message; m != nil && m.Kind == kind && m.MessageID == "" {
			m.Content = append(m.Content, c.Content)
			return
		}
	}
	m := &TimelineMessage{Kind: kind, MessageID: c.MessageID, Content: []schema.ContentBlock{c.Content}}
	if c.MessageID != "" {
		t.messages[c.MessageID] = len(t.Items)
	}
	t.Items = append(t.Items, TimelineItem{Message: m})
}

// message returns the v2 message of the given kind and ID, creating it at
// the end of the timeline when it is first seen.
func (t *Timeline) message(kind, id string) *TimelineMessage {
	key := kind + "\x00" + id
	if i, ok := t.messages[key]; ok {
		return t.Items[i].Message
	}
	m := &TimelineMessage{Kind: kind, MessageID: id}
	t.messages[key] = len(t.Items)
	t.Items = append(t.Items, TimelineItem{Message: m})
	return m
}

// patchMeta applies a v2 _meta patch by top-level key: a null value removes
// the key, any other value replaces it whole.
func patchMeta(old, patch map[string]any) map[string]any {
	if len(patch) == 0 {
		return old
	}
	out := maps.Clone(old)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range patch {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}
