package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// player plays a Script through a session: it is the session's turn
// provider (it answers each turn step with the script's next assistant
// message) and its tools (each answers a call with the script's result for
// that call ID). Summaries are not its business: the session's
// SummaryProvider makes them.
type player struct {
	mu      sync.Mutex
	replies []Msg             // the script's assistant messages, in order
	next    int               // the first reply not given yet
	results map[string]string // tool call ID → its result
}

func newPlayer(s *Script) *player {
	p := &player{results: map[string]string{}}
	for i, m := range s.Msgs {
		switch m.Role {
		case history.RoleAssistant:
			p.replies = append(p.replies, m)
		case history.RoleTool:
			p.results[m.CallID] = s.Msgs[i].Text
		}
	}
	return p
}

// Info implements provider.Describer.
func (p *player) Info() provider.Info { return provider.Info{Name: "fidelity-script"} }

// Complete implements provider.Provider for turn steps.
func (p *player) Complete(_ context.Context, req *provider.Request, onDelta func(string)) (*provider.Response, error) {
	if req.Purpose != provider.PurposeTurn {
		return nil, errors.New("fidelity: the script player makes no summaries (SummaryProvider does)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= len(p.replies) {
		return nil, errors.New("fidelity: the script has no assistant message left")
	}
	m := p.replies[p.next]
	p.next++
	if onDelta != nil && m.Text != "" {
		onDelta(m.Text)
	}
	in := compact.EstimateTokens(req.System+req.Summary, 0) + compact.EstimateMessages(req.Messages, 0)
	out := compact.EstimateMessages([]history.Message{{Text: m.Text, ToolCalls: m.Calls}}, 0)
	return &provider.Response{
		Message: history.Message{Role: history.RoleAssistant, Text: m.Text, ToolCalls: m.Calls},
		Usage:   provider.Usage{InputTokens: in, OutputTokens: out},
	}, nil
}

// tools are the coding tools the scripts call, each answered from the
// script.
func (p *player) tools() []session.Tool {
	run := func(ctx context.Context, _ json.RawMessage) (string, error) {
		id := session.ToolCallID(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		out, ok := p.results[id]
		if !ok {
			return "", fmt.Errorf("fidelity: the script has no result for call %s", id)
		}
		return out, nil
	}
	schema := func(props ...string) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i, p := range props {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:{\"type\":\"string\"}", p)
		}
		b.WriteString("}}")
		return json.RawMessage(b.String())
	}
	return []session.Tool{
		{Name: "read_file", Description: "Read a file of the project.", Parameters: schema("path"), Run: run},
		{Name: "grep", Description: "Search the project's files for a pattern.", Parameters: schema("pattern", "path"), Run: run},
		{Name: "edit_file", Description: "Replace text in a file.", Parameters: schema("path", "old_text", "new_text"), Run: run},
		{Name: "run_command", Description: "Run a shell command in the project.", Parameters: schema("command"), Run: run},
		{Name: "list_files", Description: "List the files of a directory.", Parameters: schema("path"), Run: run},
	}
}

// play runs every turn of s through sess and returns the IDs the session
// gave the script's messages, index for index. It checks that the session
// holds exactly the script's messages.
func play(ctx context.Context, sess *session.Session, s *Script) ([]string, error) {
	for _, start := range s.Turns {
		h, err := sess.Prompt(ctx, session.PromptRequest{Text: s.Msgs[start].Text})
		if err != nil {
			return nil, err
		}
		res, err := h.Wait(ctx)
		if err != nil {
			return nil, err
		}
		if res.Err != nil {
			return nil, fmt.Errorf("turn at message %d: %w", start, res.Err)
		}
	}
	active, err := sess.Active(ctx)
	if err != nil {
		return nil, err
	}
	if len(active) != len(s.Msgs) {
		return nil, fmt.Errorf("fidelity: the session holds %d messages, the script %d", len(active), len(s.Msgs))
	}
	ids := make([]string, len(active))
	for i, m := range active {
		want := s.Msgs[i]
		if m.Role != want.Role || m.Text != want.Text || m.ToolCallID != want.CallID || len(m.ToolCalls) != len(want.Calls) {
			return nil, fmt.Errorf("fidelity: message %d of the session differs from the script", i)
		}
		ids[i] = m.ID
	}
	return ids, nil
}
