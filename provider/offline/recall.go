package offline

import (
	"regexp"
	"strings"
	"sync"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// recallTool is the name of the session's built-in archive search
// (session.RecallTool).
const recallTool = "recall"

// recallCall returns the arguments of a call to the recall tool for the
// user's text q (turn rule 4): when the request offers recall, q is a
// question, and neither Active nor the retained summary holds a sentence
// sharing at least half of q's content words, the question goes to the
// archive as it is.
func recallCall(req *provider.Request, q string) ([]byte, bool) {
	offered := false
	for _, t := range req.Tools {
		offered = offered || t.Name == recallTool
	}
	if !offered || !isQuestion(q) {
		return nil, false
	}
	words := contentWords(q)
	if len(words) == 0 {
		return nil, false
	}
	if _, score, ok := recall(req, len(req.Messages)-1, q); ok && 2*score >= len(words) {
		return nil, false
	}
	return object("query", collapse(q)), true
}

// hitLine is one hit of the recall tool's answer to a query: "- message ID
// [role], where: snippet".
var hitLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^- message (\S+) \[([^\]]+)\], ([^:]+): (.*)$`) })

// fromRecall is the reply to the recall tool's results at the end of
// req.Messages (turn rule 3 for recall), for the last user question: the
// sentence of the hits, or of the messages read, that shares the most
// content words with it, quoted with where it was found. When the best
// sentence of the hits' snippets holds less than half of the question's
// content words, the reply reads the best hit's message in full instead
// (a recall call with its message_id), and answers from that.
func fromRecall(req *provider.Request) (history.Message, bool) {
	msgs := req.Messages
	first := len(msgs)
	for first > 0 && msgs[first-1].Role == history.RoleTool {
		first--
	}
	q := ""
	for i := first - 1; i >= 0; i-- {
		if msgs[i].Role == history.RoleUser {
			q = msgs[i].Text
			break
		}
	}
	words := contentWords(q)
	reply := history.Message{Role: history.RoleAssistant}
	var (
		best      string
		bestScore int
		bestWhere string
		topHit    string // the first hit's message ID, "" for a read
		found     bool
	)
	for i := first; i < len(msgs); i++ {
		if toolName(msgs[:first], msgs[i].ToolCallID) != recallTool {
			continue
		}
		found = true
		if history.ToolFailed(msgs[i].Text) {
			reply.Text = "I could not search the archive: " + truncate(collapse(msgs[i].Text), quoteChars)
			return reply, true
		}
		where := "the archive"
		for j, line := range strings.Split(msgs[i].Text, "\n") {
			text := line
			switch m := hitLine().FindStringSubmatch(line); {
			case m != nil:
				text = m[4]
				where = "message " + m[1] + ", " + m[3]
				if topHit == "" {
					topHit = m[1]
				}
			case j == 0:
				continue // the answer's heading, which repeats the query
			case strings.HasPrefix(line, "[message "):
				where = strings.TrimSuffix(strings.TrimPrefix(line, "["), "]")
				continue
			}
			text = strings.NewReplacer("«", "", "»", "").Replace(text)
			for _, s := range sentences(text) {
				if strings.HasSuffix(s, "?") {
					continue // a question is no answer
				}
				if n := overlap(words, contentWords(s)); n > bestScore {
					best, bestScore, bestWhere = s, n, where
				}
			}
		}
	}
	switch {
	case !found:
		return reply, false
	case topHit != "" && 2*bestScore < len(words):
		reply.Text = "Calling " + recallTool + "."
		reply.ToolCalls = []history.ToolCall{{ID: "call_" + requestHash(req), Name: recallTool, Arguments: object("message_id", topHit)}}
	case bestScore == 0:
		reply.Text = "The archive holds nothing about: " + lead(q, restateChars)
	default:
		reply.Text = "From the archive (" + bestWhere + "): \"" + truncate(collapse(best), quoteChars) + "\""
	}
	return reply, true
}
