package crashtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// tlItem is one item of a replayable timeline, in a form that the three
// sources of TestScaleOut can all be brought to: the turns and compactions a
// client was acknowledged, the rows of the database, and the session/load
// replay of an agent. Messages of the replay are one chunk each, so one
// content block is one message.
type tlItem struct {
	Kind   string // "user", "agent", "tool", "compaction"
	ID     string // tool call or compaction ID
	Name   string // tool name
	Status string // tool call or compaction status
	Text   string // message text, tool result, compaction summary
	Err    string // compaction error
}

func (it tlItem) String() string {
	switch it.Kind {
	case "tool":
		return fmt.Sprintf("tool %s %s [%s] → %q", it.Name, it.ID, it.Status, it.Text)
	case "compaction":
		s := fmt.Sprintf("compaction %s [%s]", it.ID, it.Status)
		if it.Text != "" {
			s += fmt.Sprintf(" summary %q", clip(it.Text, 80))
		}
		if it.Err != "" {
			s += fmt.Sprintf(" error %q", it.Err)
		}
		return s
	}
	return fmt.Sprintf("%s %q", it.Kind, clip(it.Text, 80))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// appendMessage adds a stored or acknowledged message the way the agent
// replays it (acp/forward.go, agentSession.message): a user message, the
// assistant's text then one tool call per call, a tool result completing
// its call.
func appendMessage(items []tlItem, m history.Message) []tlItem {
	switch m.Role {
	case history.RoleUser:
		items = append(items, tlItem{Kind: "user", Text: m.Text})
	case history.RoleAssistant:
		if m.Text != "" {
			items = append(items, tlItem{Kind: "agent", Text: m.Text})
		}
		for _, c := range m.ToolCalls {
			items = append(items, tlItem{Kind: "tool", ID: c.ID, Name: c.Name, Status: "in_progress"})
		}
	case history.RoleTool:
		status := "completed"
		if strings.HasPrefix(m.Text, "error:") {
			status = "failed"
		}
		for i := len(items) - 1; i >= 0; i-- {
			if items[i].Kind == "tool" && items[i].ID == m.ToolCallID {
				items[i].Status, items[i].Text = status, m.Text
				return items
			}
		}
		// A result without its call: kept visible so that comparisons fail.
		items = append(items, tlItem{Kind: "tool", ID: m.ToolCallID, Status: status, Text: m.Text})
	}
	return items
}

// storedItems brings the stored timeline of a session to tlItems.
func storedItems(entries []history.Entry) []tlItem {
	var items []tlItem
	for _, e := range entries {
		if e.Message != nil {
			items = appendMessage(items, *e.Message)
			continue
		}
		c := e.Compaction
		items = append(items, tlItem{Kind: "compaction", ID: c.CompactID, Status: string(c.Status), Text: c.Summary, Err: c.Error})
	}
	return items
}

// replayedItems brings the timeline a client reduced from a session/load
// replay to tlItems.
func replayedItems(tl acp.Timeline) []tlItem {
	var items []tlItem
	for _, it := range tl.Items {
		switch {
		case it.Message != nil:
			kind := "agent"
			switch it.Message.Kind {
			case schema.UpdateUserMessageChunk:
				kind = "user"
			case schema.UpdateAgentThoughtChunk:
				kind = "thought"
			}
			for _, b := range it.Message.Content {
				text := "(a " + b.Type() + " block)"
				if b.Text != nil {
					text = b.Text.Text
				}
				items = append(items, tlItem{Kind: kind, Text: text})
			}
		case it.ToolCall != nil:
			tc := it.ToolCall
			var text string
			for _, c := range tc.Content {
				if c.Content != nil && c.Content.Content.Text != nil {
					text += c.Content.Content.Text.Text
				}
			}
			name := tc.Name // the tool's name; the title is for people
			if name == "" {
				name = tc.Title
			}
			items = append(items, tlItem{Kind: "tool", ID: tc.ID, Name: name, Status: string(tc.Status), Text: text})
		case it.Compaction != nil:
			c := it.Compaction
			item := tlItem{Kind: "compaction", ID: c.ID, Status: string(c.Status), Text: c.SummaryText()}
			if c.Error != nil {
				item.Err = *c.Error
			}
			items = append(items, item)
		}
	}
	return items
}

// diffItems describes how got differs from want, or returns "" when they
// are equal.
func diffItems(want, got []tlItem) string {
	first := -1
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			first = i
			break
		}
	}
	if first < 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d items, want %d; first difference at item %d\n", len(got), len(want), first)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i].String()
		}
		if i < len(got) {
			g = got[i].String()
		}
		mark := "  "
		if w != g {
			mark = "≠ "
		}
		fmt.Fprintf(&b, "%s%3d want %s\n      got  %s\n", mark, i, w, g)
	}
	return b.String()
}

// duplicates reports the user texts and the tool call and compaction IDs
// that occur more than once.
func duplicates(items []tlItem) []string {
	seen := map[string]int{}
	var dups []string
	for _, it := range items {
		key := ""
		switch it.Kind {
		case "user":
			key = "user message " + fmt.Sprintf("%q", it.Text)
		case "tool", "compaction":
			key = it.Kind + " " + it.ID
		default:
			continue
		}
		if seen[key]++; seen[key] == 2 {
			dups = append(dups, key)
		}
	}
	return dups
}

// leaseRefusal is the JSON-RPC error of a session/load refused because
// another agent process serves the session.
type leaseRefusal struct {
	Message string
	Session string    // data.sessionId
	Holder  string    // data.sessionkit.leasedBy
	Expires time.Time // data.sessionkit.leaseExpires
}

// asLeaseRefusal checks that err is the agent's answer for a session that
// another process serves, for session id: an internal error (-32603) whose
// message says so and whose data names the session, the holder and the
// lease's expiry.
func asLeaseRefusal(err error, id string) (*leaseRefusal, error) {
	var je *acp.RPCError
	if !errors.As(err, &je) {
		return nil, fmt.Errorf("not an error of the agent (acp.RPCError): %v", err)
	}
	if je.Code != jsonrpc.InternalError {
		return nil, fmt.Errorf("code %d, want %d (internal error): %v", je.Code, jsonrpc.InternalError, je)
	}
	if !strings.Contains(je.Message, "is served by another agent process") || !strings.Contains(je.Message, fmt.Sprintf("%q", id)) {
		return nil, fmt.Errorf("message %q does not say that session %q is served by another agent process", je.Message, id)
	}
	var data struct {
		SessionID  string `json:"sessionId"`
		Sessionkit struct {
			LeasedBy     string `json:"leasedBy"`
			LeaseExpires string `json:"leaseExpires"`
		} `json:"sessionkit"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil {
		return nil, fmt.Errorf("data %s: %v", je.Data, err)
	}
	r := &leaseRefusal{Message: je.Message, Session: data.SessionID, Holder: data.Sessionkit.LeasedBy}
	switch {
	case data.SessionID != id:
		return nil, fmt.Errorf("data.sessionId %q, want %q (data %s)", data.SessionID, id, je.Data)
	case r.Holder == "":
		return nil, fmt.Errorf("data.sessionkit.leasedBy is empty (data %s)", je.Data)
	case !strings.Contains(je.Message, r.Holder):
		return nil, fmt.Errorf("message %q does not name the holder %q", je.Message, r.Holder)
	}
	r.Expires, err = time.Parse(time.RFC3339Nano, data.Sessionkit.LeaseExpires)
	if err != nil {
		return nil, fmt.Errorf("data.sessionkit.leaseExpires %q: %v", data.Sessionkit.LeaseExpires, err)
	}
	return r, nil
}

// isUnknownSession reports whether err is the agent's answer for a session
// it does not serve (-32002).
func isUnknownSession(err error) bool {
	var je *acp.RPCError
	return errors.As(err, &je) && je.Code == jsonrpc.ResourceNotFound
}

// readStored reads a session's timeline from the database directly, as a
// process that holds no lease.
func readStored(ctx context.Context, url, id string) ([]history.Entry, error) {
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	tl, err := st.Timeline(ctx, id)
	return tl, errors.Join(err, st.Close())
}

// compactionStatus returns the status of compaction cid in a stored
// timeline, or "" when it is not there.
func compactionStatus(entries []history.Entry, cid string) history.CompactionStatus {
	for _, e := range entries {
		if e.Compaction != nil && e.Compaction.CompactID == cid {
			return e.Compaction.Status
		}
	}
	return ""
}
