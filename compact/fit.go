package compact

import (
	"fmt"
	"math"
	"strings"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/transcript"
)

// CutThrough is the cut of a compaction that archives active up to and
// including the message with ID id, moved forward past the tool results
// that follow it so that no tool call is separated from its results
// (docs/design.md §4.11). N counts Active's user and assistant messages as in
// [CutFor]; K counts those of the prefix. ok is false when no message of
// active has that ID.
func CutThrough(active []history.Message, id string) (p Cut, ok bool) {
	end := -1
	for i := range active {
		if active[i].Counted() {
			p.N++
		}
		if active[i].ID == id && end < 0 {
			end = i
		}
	}
	if end < 0 {
		return Cut{N: p.N}, false
	}
	for end+1 < len(active) && active[end+1].Role == history.RoleTool {
		end++
	}
	p.Archive = end + 1
	for i := range active[:p.Archive] {
		if active[i].Counted() {
			p.K++
		}
	}
	return p, true
}

// DefaultBytesPerToken is the estimate of how many bytes of text make one
// token when no provider figure calibrates it: about 4 for English text
// and code with the tokenizers of current models. [EstimateTokens] uses it.
const DefaultBytesPerToken = 4.0

// messageOverhead is the estimate of the tokens a message costs beyond its
// text (role and framing).
const messageOverhead = 4

// EstimateTokens estimates the tokens of text: its length in bytes divided
// by bytesPerToken (DefaultBytesPerToken when it is not positive), rounded
// up. It is the documented estimate used where a provider reports no
// figure (docs/compaction.md).
func EstimateTokens(text string, bytesPerToken float64) int {
	if bytesPerToken <= 0 {
		bytesPerToken = DefaultBytesPerToken
	}
	return int(math.Ceil(float64(len(text)) / bytesPerToken))
}

// EstimateMessages estimates the tokens msgs take in a request: their
// texts and tool call arguments ([EstimateTokens]) plus a few tokens of
// framing per message.
func EstimateMessages(msgs []history.Message, bytesPerToken float64) int {
	n := 0
	for i := range msgs {
		n += messageOverhead + EstimateTokens(msgs[i].Text, bytesPerToken)
		for _, tc := range msgs[i].ToolCalls {
			n += EstimateTokens(tc.Name, bytesPerToken) + EstimateTokens(string(tc.Arguments), bytesPerToken)
		}
	}
	return n
}

// DefaultSummaryMaxTokens is the summary's maximum output when a context
// window bounds the summary input and Composer.MaxTokens is 0; it is also
// capped at a quarter of the window.
const DefaultSummaryMaxTokens = 4096

// maxOutput is the summary's maximum output under a context window.
func (c *Composer) maxOutput() int {
	if c.MaxTokens > 0 {
		return c.MaxTokens
	}
	return max(1, min(DefaultSummaryMaxTokens, c.ContextWindow/4))
}

// entriesOf returns how many transcript entries each message of msgs
// makes (see transcript.FromMessages).
func entriesOf(m *history.Message) int {
	switch m.Role {
	case history.RoleAssistant:
		n := len(m.ToolCalls)
		if n == 0 || strings.TrimSpace(m.Text) != "" {
			n++
		}
		return n
	case history.RoleUser, history.RoleTool:
		return 1
	}
	return 0
}

// LeftOutMarker is the text of the transcript entry that stands for the
// oldest messages a context window left out of the summary input.
func LeftOutMarker(n int) string {
	return fmt.Sprintf("%d earlier %s left out of this summary input so that it fits the model's context window; the previous summary above stands for what came before.",
		n, map[bool]string{true: "message was", false: "messages were"}[n == 1])
}

// fit returns the entries of the transcript of in and how many of the
// oldest messages it leaves out so that the request stays within the
// context window minus the summary's maximum output. Tool outputs are cut
// first (always, to MaxToolOutput); then the oldest messages are left out,
// one by one, behind a marker entry. When even the newest message alone
// does not fit, its text is cut too. fixed is the rest of the request's
// estimated size (system prompt, previous summary, instructions).
func (c *Composer) fit(in Input, fixed int) ([]transcript.Entry, int) {
	entries := transcript.FromMessages(in.Prefix, c.maxToolOutput())
	if c.ContextWindow <= 0 {
		return entries, 0
	}
	budget := c.ContextWindow - c.maxOutput() - fixed
	bpt := c.BytesPerToken
	size := func(e *transcript.Entry) int {
		return messageOverhead + EstimateTokens(e.Tool, bpt) + EstimateTokens(e.Text, bpt)
	}
	sizes := make([]int, len(in.Prefix)) // per message
	total, k := 0, 0
	for i := range in.Prefix {
		n := entriesOf(&in.Prefix[i])
		for j := k; j < k+n; j++ {
			sizes[i] += size(&entries[j])
		}
		k += n
		total += sizes[i]
	}
	if total <= budget {
		return entries, 0
	}
	marker := messageOverhead + EstimateTokens(LeftOutMarker(len(in.Prefix)), bpt)
	drop, first := 0, 0 // messages left out, and the first entry kept
	for drop < len(in.Prefix)-1 && total+marker > budget {
		total -= sizes[drop]
		first += entriesOf(&in.Prefix[drop])
		drop++
	}
	kept := entries[first:]
	if total+marker > budget && len(kept) > 0 {
		// The newest message alone is too long: keep the start of each of
		// its entries that fits.
		room := max(0, budget-marker)
		out := make([]transcript.Entry, 0, len(kept))
		for _, e := range kept {
			allowed := int(float64(max(0, room-messageOverhead)) * bytesPer(bpt))
			if len(e.Text) > allowed {
				e.Text = e.Text[:allowed] + " …[cut to fit the context window]"
			}
			room -= size(&e)
			out = append(out, e)
		}
		kept = out
	}
	if drop == 0 {
		return kept, 0
	}
	out := make([]transcript.Entry, 0, len(kept)+1)
	out = append(out, transcript.Entry{Kind: transcript.Other, Text: LeftOutMarker(drop)})
	return append(out, kept...), drop
}

func bytesPer(bpt float64) float64 {
	if bpt <= 0 {
		return DefaultBytesPerToken
	}
	return bpt
}
