package offline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// Lengths of the excerpts a turn reply quotes.
const (
	toolExcerptChars = 200
	quoteChars       = 300
	restateChars     = 160
)

// turnReply computes the assistant message for a turn request.
func turnReply(req *provider.Request) history.Message {
	reply := history.Message{Role: history.RoleAssistant}
	if n := len(req.Messages); n > 0 {
		last := &req.Messages[n-1]
		switch last.Role {
		case history.RoleUser:
			if tool, args, ok := planIntent(last.Text, req.Tools); ok {
				reply.Text = "Updating the plan."
				reply.ToolCalls = []history.ToolCall{{ID: "call_" + requestHash(req), Name: tool.Name, Arguments: args}}
				return reply
			}
			if tool, end, ok := pickTool(last.Text, req.Tools); ok {
				reply.Text = "Calling " + tool.Name + "."
				reply.ToolCalls = []history.ToolCall{{
					ID:        "call_" + requestHash(req),
					Name:      tool.Name,
					Arguments: buildArguments(tool, last.Text, end),
				}}
				return reply
			}
			if tool, args, ok := intent(last.Text, req.Tools); ok {
				reply.Text = "Calling " + tool.Name + "."
				reply.ToolCalls = []history.ToolCall{{ID: "call_" + requestHash(req), Name: tool.Name, Arguments: args}}
				return reply
			}
			if args, ok := recallCall(req, last.Text); ok {
				reply.Text = "Calling " + recallTool + "."
				reply.ToolCalls = []history.ToolCall{{ID: "call_" + requestHash(req), Name: recallTool, Arguments: args}}
				return reply
			}
		case history.RoleTool:
			if r, ok := fromRecall(req); ok {
				return r
			}
			reply.Text = reportToolResults(req.Messages)
			return reply
		}
	}
	reply.Text = answer(req)
	return reply
}

// requestHash is a short digest of everything a reply depends on.
func requestHash(req *provider.Request) string {
	h := sha256.New()
	put := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	put(string(req.Purpose))
	put(req.System)
	put(req.Summary)
	for _, m := range req.Messages {
		put(string(m.Role))
		put(m.Text)
		put(m.ToolCallID)
		put(strconv.FormatBool(m.Steer))
		for _, c := range m.ToolCalls {
			put(c.ID)
			put(c.Name)
			put(string(c.Arguments))
		}
	}
	for _, t := range req.Tools {
		put(t.Name)
		put(string(t.Parameters))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// nameVariants are the ways a user may write a tool name: as is, and with
// underscores and hyphens as spaces.
func nameVariants(name string) []string {
	lower := strings.ToLower(name)
	spaced := strings.NewReplacer("_", " ", "-", " ").Replace(lower)
	if spaced == lower {
		return []string{lower}
	}
	return []string{lower, spaced}
}

// pickTool returns the tool the text names first (the longest name on a tie)
// and the byte offset just after the mention.
func pickTool(text string, tools []provider.ToolSpec) (provider.ToolSpec, int, bool) {
	lower := strings.ToLower(text)
	best, bestPos, bestLen := -1, 0, 0
	for i, t := range tools {
		if strings.TrimSpace(t.Name) == "" {
			continue
		}
		for _, v := range nameVariants(t.Name) {
			pos := findWord(lower, v)
			if pos < 0 {
				continue
			}
			if best < 0 || pos < bestPos || (pos == bestPos && len(v) > bestLen) {
				best, bestPos, bestLen = i, pos, len(v)
			}
		}
	}
	if best < 0 {
		return provider.ToolSpec{}, 0, false
	}
	// strings.ToLower may change byte lengths; map the offset back to text
	// only when it is safe, otherwise search from the start.
	end := bestPos + bestLen
	if len(lower) != len(text) {
		end = 0
	}
	return tools[best], end, true
}

// reportToolResults reports the trailing tool messages of msgs.
func reportToolResults(msgs []history.Message) string {
	first := len(msgs)
	for first > 0 && msgs[first-1].Role == history.RoleTool {
		first--
	}
	var lines []string
	for i := first; i < len(msgs); i++ {
		m := &msgs[i]
		name := toolName(msgs[:first], m.ToolCallID)
		out := collapse(m.Text)
		if out == "" {
			lines = append(lines, name+" returned nothing.")
			continue
		}
		lines = append(lines, name+" returned: "+truncate(out, toolExcerptChars))
	}
	return strings.Join(lines, "\n")
}

// toolName finds the name of the tool call id among the assistant messages
// of msgs, latest first.
func toolName(msgs []history.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id && c.Name != "" {
				return c.Name
			}
		}
	}
	if id == "" {
		return "A tool"
	}
	return "Tool call " + id
}

// answer replies to the last user message from the conversation itself.
func answer(req *provider.Request) string {
	last := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == history.RoleUser {
			last = i
			break
		}
	}
	status := contextStatus(req)
	if last < 0 {
		return "There is no user request to answer yet.\n" + status
	}
	q := req.Messages[last].Text
	restated := lead(q, restateChars)
	if restated == "" {
		restated = "(an empty message)"
	}
	if isQuestion(q) {
		if quote, _, ok := recall(req, last, q); ok {
			return quote
		}
		return "I found nothing earlier in the conversation about: " + restated + "\n" + status
	}
	return "Noted: " + restated + "\n" + status
}

func contextStatus(req *provider.Request) string {
	n := len(req.Messages)
	noun := "messages"
	if n == 1 {
		noun = "message"
	}
	sum := "no summary of earlier conversation"
	if strings.TrimSpace(req.Summary) != "" {
		sum = "a summary of earlier conversation is present"
	}
	return fmt.Sprintf("(%d %s in context; %s)", n, noun, sum)
}

var questionWords = map[string]bool{
	"what": true, "what's": true, "which": true, "who": true, "whom": true, "whose": true,
	"when": true, "where": true, "why": true, "how": true, "did": true, "was": true, "were": true,
}

// isQuestion reports whether text asks about the conversation.
func isQuestion(text string) bool {
	lower := strings.ToLower(text)
	if strings.Contains(lower, "?") {
		return true
	}
	for _, w := range []string{"remember", "recall", "remind me"} {
		if findWord(lower, w) >= 0 {
			return true
		}
	}
	fields := strings.Fields(lower)
	return len(fields) > 0 && questionWords[trimToken(fields[0])]
}

// Sources of a recalled sentence, most trusted first.
const (
	fromUser = iota
	fromSummary
	fromTool
	fromAssistant
)

type candidate struct {
	text   string
	source int
	tool   string
	score  int
	recent int // larger is more recent
}

func (c *candidate) better(o *candidate) bool {
	if c.score != o.score {
		return c.score > o.score
	}
	if c.source != o.source {
		return c.source < o.source
	}
	return c.recent > o.recent
}

// recall finds the earlier sentence that shares the most content words with
// the question q (message index skip) and quotes it.
func recall(req *provider.Request, skip int, q string) (string, int, bool) {
	words := contentWords(q)
	if len(words) == 0 {
		return "", 0, false
	}
	var best *candidate
	consider := func(c candidate) {
		if strings.HasSuffix(c.text, "?") {
			return
		}
		c.score = overlap(words, contentWords(c.text))
		if c.score > 0 && (best == nil || c.better(best)) {
			best = &c
		}
	}
	order := 0
	for _, line := range strings.Split(req.Summary, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimSpace(strings.TrimLeft(line, "-*+ "))
		line = strings.TrimPrefix(strings.TrimPrefix(line, markRequest), markSteer)
		for _, s := range sentences(line) {
			order++
			consider(candidate{text: s, source: fromSummary, recent: order})
		}
	}
	for i := range req.Messages {
		if i == skip {
			continue
		}
		m := &req.Messages[i]
		c := candidate{source: fromAssistant}
		switch m.Role {
		case history.RoleUser:
			c.source = fromUser
		case history.RoleTool:
			c.source = fromTool
			c.tool = toolName(req.Messages[:i], m.ToolCallID)
		}
		for _, line := range strings.Split(m.Text, "\n") {
			for _, s := range sentences(line) {
				order++
				c.text, c.recent = s, order
				consider(c)
			}
		}
	}
	if best == nil {
		return "", 0, false
	}
	quote := `"` + truncate(collapse(best.text), quoteChars) + `"`
	switch best.source {
	case fromUser:
		return "Earlier you said: " + quote, best.score, true
	case fromSummary:
		return "From the summary of earlier conversation: " + quote, best.score, true
	case fromTool:
		return "Earlier " + best.tool + " returned: " + quote, best.score, true
	}
	return "Earlier I said: " + quote, best.score, true
}
