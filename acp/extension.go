package acp

import (
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// CompactCommand is the slash command that requests a manual compaction.
const CompactCommand = "compact"

// UncompactCommand is the slash command that undoes the newest compaction.
const UncompactCommand = "uncompact"

func wireResult(r *session.CompactResult) schema.WireResult {
	w := schema.WireResult{
		CompactID: r.CompactID, Success: r.Success, Compacted: r.Compacted, Reason: string(r.Reason),
		Error: r.Error, Trigger: string(r.Trigger), Cancelled: r.Cancelled,
		InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		ContextGrew: r.ContextGrew, Note: r.Note,
	}
	if g := r.Segment; g != nil {
		w.Segment = &schema.WireSegment{
			ID: g.ID, CompactID: g.CompactID, Trigger: string(g.Trigger), Summary: g.Summary, Instructions: g.Instructions,
			CreatedAt: g.CreatedAt, StartedAt: g.StartedAt, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens,
			Position: g.Position, Messages: convertAll(g.Messages, wireMessage),
		}
	}
	return w
}

// wireMessage and WireMessage.message convert a message to and from the
// wire (WireToolCall has history.ToolCall's fields, so it converts as is).
func wireMessage(m history.Message) schema.WireMessage {
	return schema.WireMessage{
		ID: m.ID, Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt,
		ToolCalls:   nilIfEmpty(convertAll(m.ToolCalls, func(c history.ToolCall) schema.WireToolCall { return schema.WireToolCall(c) })),
		Attachments: nilIfEmpty(convertAll(m.Attachments, wireAttachment)),
	}
}

func historyMessage(m schema.WireMessage) history.Message {
	return history.Message{
		ID: m.ID, Role: history.Role(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt,
		ToolCalls:   nilIfEmpty(convertAll(m.ToolCalls, func(c schema.WireToolCall) history.ToolCall { return history.ToolCall(c) })),
		Attachments: nilIfEmpty(convertAll(m.Attachments, historyAttachment)),
	}
}

// convertAll returns conv of each of in (never nil).
func convertAll[F, T any](in []F, conv func(F) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// compactResultOf converts w back to a session.CompactResult.
func compactResultOf(w *schema.WireResult) session.CompactResult {
	r := session.CompactResult{
		CompactID: w.CompactID, Success: w.Success, Compacted: w.Compacted, Reason: session.CompactReason(w.Reason),
		Error: w.Error, Trigger: history.Trigger(w.Trigger), Cancelled: w.Cancelled,
		Usage:       provider.Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens},
		ContextGrew: w.ContextGrew, Note: w.Note,
	}
	if g := w.Segment; g != nil {
		r.Segment = &history.Segment{
			ID: g.ID, CompactID: g.CompactID, Trigger: history.Trigger(g.Trigger), Summary: g.Summary, Instructions: g.Instructions,
			CreatedAt: g.CreatedAt, StartedAt: g.StartedAt, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens,
			Position: g.Position, Messages: convertAll(g.Messages, historyMessage),
		}
	}
	return r
}
