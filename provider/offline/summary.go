package offline

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/transcript"
	"github.com/sessionkit/sessionkit/provider"
)

// Headings of a summary.
const (
	summaryTitle     = "## Summary of earlier conversation"
	headingRequests  = "### User requests"
	headingFacts     = "### Decisions and facts"
	headingTools     = "### Tools used"
	headingEarlier   = "### Earlier summary"
	requestChars     = 160
	factChars        = 200
	toolArgChars     = 80
	outcomeChars     = 100
	maxFacts         = 12
	maxToolBullets   = 10
	omittedNoteShape = "- … (%d more)"
)

// bullet is one line of a summary section.
type bullet struct {
	text  string
	rank  int // drop order: the highest rank is dropped first
	goal  int // 1-based chronological position among the user's goals; 0 for other bullets
	focus bool
	// command: a tool call bullet of a command, whose outcome follows it.
	command bool
}

type section struct {
	heading string
	bullets []bullet
}

// Ranks of bullets; higher ranks are dropped first when the summary is too
// long. The user's goals are the requests of the transcript and the requests
// carried over from earlier summaries; the first of them and the most recent
// keyGoals are kept longest.
const (
	rankKeyGoal = iota
	rankFact
	rankGoal
	rankEarlierFact
	rankTool
	rankEarlierTool
)

const keyGoals = 8

// Markers of carried-over goals in the Earlier summary section, so that they
// are recognised again by the next compaction.
const (
	markRequest = "(request) "
	markSteer   = "(steer) "
)

// summarize produces the extractive summary of a summary request.
func summarize(req *provider.Request, limit int) string {
	var texts []string
	for _, m := range req.Messages {
		if m.Role != history.RoleTool {
			texts = append(texts, m.Text)
		}
	}
	in := transcript.Parse(strings.Join(texts, "\n"))
	entries := in.Entries
	focus := focusWords(in.Instructions)
	seen := map[string]bool{}

	requests := userRequests(entries, seen)
	facts := decisionsAndFacts(entries, seen, focus)
	tools := toolsUsed(entries)
	earlier := carryOver(in.Previous, seen)
	rankGoals(earlier, requests)

	sections := []section{
		{headingRequests, requests},
		{headingFacts, facts},
		{headingTools, tools},
		{headingEarlier, earlier},
	}
	empty := true
	for i := range sections {
		markFocus(sections[i].bullets, focus)
		if len(sections[i].bullets) > 0 {
			empty = false
		}
	}
	if empty {
		n := len(entries)
		noun := "messages were"
		if n == 1 {
			noun = "message was"
		}
		return truncateHard(fmt.Sprintf("%s\n- %d earlier %s compacted", summaryTitle, n, noun), limit)
	}
	return render(sections, limit)
}

// key normalizes a bullet for deduplication.
func key(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, markRequest), markSteer)
	return strings.ToLower(collapse(strings.TrimRight(s, ".!… ")))
}

// rankGoals numbers the goals chronologically (the carried-over ones, which
// come first in earlier, then the requests) and makes the first and the most
// recent ones key goals.
func rankGoals(earlier, requests []bullet) {
	var goals []*bullet
	for i := range earlier {
		if earlier[i].goal > 0 {
			goals = append(goals, &earlier[i])
		}
	}
	for i := range requests {
		goals = append(goals, &requests[i])
	}
	for i, g := range goals {
		g.goal = i + 1
		g.rank = rankGoal
		if i == 0 || i >= len(goals)-keyGoals {
			g.rank = rankKeyGoal
		}
	}
}

func userRequests(entries []transcript.Entry, seen map[string]bool) []bullet {
	var out []bullet
	for _, e := range entries {
		if e.Kind != transcript.User {
			continue
		}
		text := lead(e.Text, requestChars)
		if text == "" {
			continue
		}
		k := key(text)
		if seen[k] {
			continue
		}
		seen[k] = true
		if e.Steer {
			text = markSteer + text
		}
		out = append(out, bullet{text: text, rank: rankGoal})
	}
	return out
}

var decisionWords = map[string]bool{
	"decided": true, "decide": true, "decision": true, "will": true, "won't": true, "use": true,
	"uses": true, "using": true, "chose": true, "choose": true, "chosen": true, "must": true,
	"should": true, "agreed": true, "agree": true, "because": true, "prefer": true,
	"require": true, "required": true, "always": true, "never": true,
}

// factScore counts decision words and identifier-like tokens (file names,
// paths, numbers) of a sentence.
func factScore(s string) int {
	score := 0
	for _, f := range strings.Fields(s) {
		w := trimToken(f)
		if w == "" {
			continue
		}
		if decisionWords[strings.ToLower(w)] {
			score++
			continue
		}
		if strings.ContainsAny(w, "./_\\") || strings.ContainsAny(w, "0123456789") {
			score++
		}
	}
	return score
}

// statusLineRE matches the status line of this provider's own
// acknowledgements, so it does not come back as a fact.
var statusLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\(\d+ messages? in context; [^)]*\)$`) })

func decisionsAndFacts(entries []transcript.Entry, seen map[string]bool, focus map[string]bool) []bullet {
	type fact struct {
		text  string
		score int
		order int
	}
	var cands []fact
	for _, e := range entries {
		if e.Kind != transcript.User && e.Kind != transcript.Assistant && e.Kind != transcript.Other {
			continue
		}
		request := ""
		if e.Kind == transcript.User {
			request = lead(e.Text, requestChars)
		}
		for _, block := range blocks(e.Text) {
			for _, s := range sentences(block) {
				for _, p := range []string{"Noted: ", "Earlier you said: ", "Earlier I said: "} {
					s = strings.TrimPrefix(s, p)
				}
				if utf8.RuneCountInString(s) < 4 || strings.HasSuffix(s, "?") || statusLineRE().MatchString(s) {
					continue
				}
				if request != "" && strings.Contains(request, s) {
					continue // already a user request bullet
				}
				score := factScore(s)
				if len(focus) > 0 && overlap(focus, contentWords(s)) > 0 {
					score += 2
				}
				if score == 0 {
					continue
				}
				s = truncate(s, factChars)
				k := key(s)
				if seen[k] {
					continue
				}
				seen[k] = true
				cands = append(cands, fact{text: s, score: score, order: len(cands)})
			}
		}
	}
	if len(cands) > maxFacts {
		slices.SortStableFunc(cands, func(a, b fact) int { return b.score - a.score })
		cands = cands[:maxFacts]
		slices.SortFunc(cands, func(a, b fact) int { return a.order - b.order })
	}
	out := make([]bullet, len(cands))
	for i, c := range cands {
		out[i] = bullet{text: c.text, rank: rankFact}
	}
	return out
}

func toolsUsed(entries []transcript.Entry) []bullet {
	var out []bullet
	seen := map[string]bool{}
	called := map[string]bool{}
	more := 0
	add := func(name, text string) {
		called[name] = true
		if seen[text] {
			return
		}
		seen[text] = true
		if len(out) == maxToolBullets {
			more++
			return
		}
		out = append(out, bullet{text: text, rank: rankTool})
	}
	// The outcome of a command, a failure or a declined call is kept with
	// its call: the call waiting for its result, by tool.
	waiting := map[string]int{}
	for _, e := range entries {
		name := e.Tool
		if name == "" {
			name = "a tool"
		}
		switch e.Kind {
		case transcript.Call:
			args := collapse(e.Text)
			n := len(out)
			add(name, name+"("+truncate(args, toolArgChars)+")")
			waiting[name] = -1
			if len(out) > n {
				waiting[name] = n
				out[n].command = strings.Contains(args, `"command"`)
			}
		case transcript.Result:
			if !called[name] {
				add(name, name+" (result only)")
			}
			if i, ok := waiting[name]; ok && i >= 0 {
				if o := outcome(e.Text, out[i].command); o != "" {
					out[i].text += " → " + o
				}
			}
			delete(waiting, name)
		}
	}
	if more > 0 {
		out = append(out, bullet{text: fmt.Sprintf("… and %d more tool calls", more), rank: rankTool})
	}
	return out
}

// outcome is what a tool call's result says about how it went, for the
// summary: the first line of a command's result (its exit status), a
// failure or a declined call; "" for other results (a file's text).
func outcome(result string, command bool) string {
	first, _, _ := strings.Cut(strings.TrimSpace(result), "\n")
	switch {
	case command, history.ToolFailed(first), strings.HasPrefix(strings.ToLower(first), "the user declined"):
		return truncate(collapse(first), outcomeChars)
	}
	return ""
}

// blocks splits text into paragraphs: wrapped lines are joined, blank lines,
// list items and headings start a new block, fenced code is skipped.
func blocks(text string) []string {
	var out, cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	inFence := false
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			inFence = !inFence
		case inFence:
		case t == "":
			flush()
		case strings.HasPrefix(t, "#"), strings.HasPrefix(t, "- "), strings.HasPrefix(t, "* "),
			strings.HasPrefix(t, "+ "), strings.HasPrefix(t, "> "), numberedRE().MatchString(t):
			flush()
			t = numberedRE().ReplaceAllString(t, "")
			cur = append(cur, strings.TrimSpace(strings.TrimLeft(t, "#-*+> ")))
		default:
			cur = append(cur, t)
		}
	}
	flush()
	return out
}

var numberedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+[.)]\s+`) })

// carryOver turns the previous summary into bullets, in this order: goals
// it carried over itself, its user requests (both marked as goals), then its
// facts and free text, then its tools.
func carryOver(prev string, seen map[string]bool) []bullet {
	const (
		oldGoals = iota
		newGoals
		other
		tools
	)
	var groups [4][]bullet
	group := other
	for line := range strings.SplitSeq(prev, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			h := strings.ToLower(line)
			switch {
			case strings.Contains(h, "request"), strings.Contains(h, "goal"):
				group = newGoals
			case strings.Contains(h, "earlier summary"):
				group = oldGoals
			case strings.Contains(h, "tool"):
				group = tools
			default:
				group = other
			}
			continue
		}
		var items []string
		switch {
		case strings.HasPrefix(line, "- "), strings.HasPrefix(line, "* "), strings.HasPrefix(line, "+ "):
			items = []string{strings.TrimSpace(line[2:])}
		case numberedRE().MatchString(line):
			items = []string{numberedRE().ReplaceAllString(line, "")}
		default:
			items = sentences(line)
		}
		for _, it := range items {
			if it == "" || strings.HasPrefix(it, "…") {
				continue
			}
			k := key(it)
			if seen[k] {
				continue
			}
			seen[k] = true
			b := bullet{text: it, rank: rankEarlierFact}
			marked := strings.HasPrefix(it, markRequest) || strings.HasPrefix(it, markSteer)
			g := group
			switch {
			case group == newGoals:
				if !marked {
					b.text = markRequest + it
				}
				b.goal = 1
			case group == oldGoals && marked:
				b.goal = 1
			case group == oldGoals:
				g = other
			case group == tools:
				b.rank = rankEarlierTool
			}
			groups[g] = append(groups[g], b)
		}
	}
	return slices.Concat(groups[:]...)
}

var focusRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bfocus(?:ing)?(?:\s+(?:on|upon)\s+|\s*:\s*)([^.;\n]+)`)
})

// focusWords reads "focus on X" (or "focus: X") in the instructions.
func focusWords(instructions string) map[string]bool {
	words := map[string]bool{}
	for _, m := range focusRE().FindAllStringSubmatch(instructions, -1) {
		for w := range contentWords(m[1]) {
			words[w] = true
		}
	}
	return words
}

// markFocus flags the bullets that mention a focus word and moves them first.
func markFocus(bs []bullet, focus map[string]bool) {
	if len(focus) == 0 {
		return
	}
	for i := range bs {
		bs[i].focus = overlap(focus, contentWords(bs[i].text)) > 0
	}
	slices.SortStableFunc(bs, func(a, b bullet) int {
		switch {
		case a.focus == b.focus:
			return 0
		case a.focus:
			return -1
		}
		return 1
	})
}

// render writes the sections that have bullets, dropping whole bullets until
// the text fits in limit runes: non-focus bullets before focus bullets, higher
// ranks first, later bullets of a rank first, except goals: the oldest go
// first, but the very first goal goes last. A section that lost bullets says
// how many, when those notes fit too.
func render(sections []section, limit int) string {
	type ref struct{ s, b int }
	var order []ref
	base := utf8.RuneCountInString(summaryTitle) // title, headings and every bullet
	for i, sec := range sections {
		if len(sec.bullets) == 0 {
			continue
		}
		base += 1 + utf8.RuneCountInString(sec.heading)
		for j, b := range sec.bullets {
			base += 1 + utf8.RuneCountInString("- "+b.text)
			order = append(order, ref{i, j})
		}
	}
	// Drop order: the first element of order is dropped first.
	slices.SortStableFunc(order, func(a, b ref) int {
		x, y := sections[a.s].bullets[a.b], sections[b.s].bullets[b.b]
		if x.focus != y.focus {
			if x.focus {
				return 1
			}
			return -1
		}
		if x.rank != y.rank {
			return y.rank - x.rank
		}
		if x.goal > 0 && y.goal > 0 {
			switch {
			case x.goal == 1:
				return 1 // the first goal goes last
			case y.goal == 1:
				return -1
			}
			return x.goal - y.goal // then the oldest go first
		}
		if a.s != b.s {
			return b.s - a.s
		}
		return b.b - a.b
	})
	noteLen := func(n int) int {
		if n == 0 {
			return 0
		}
		return 1 + utf8.RuneCountInString(fmt.Sprintf(omittedNoteShape, n))
	}
	kept := make([][]bool, len(sections))
	dropped := make([]int, len(sections))
	// fit drops bullets until the text fits, counting the notes on omitted
	// bullets when notes is set, and returns the resulting length.
	fit := func(notes bool) int {
		for i, sec := range sections {
			kept[i] = make([]bool, len(sec.bullets))
			for j := range kept[i] {
				kept[i][j] = true
			}
			dropped[i] = 0
		}
		length := base
		for _, r := range order {
			if length <= limit {
				break
			}
			kept[r.s][r.b] = false
			length -= 1 + utf8.RuneCountInString("- "+sections[r.s].bullets[r.b].text)
			if notes {
				length -= noteLen(dropped[r.s])
				length += noteLen(dropped[r.s] + 1)
			}
			dropped[r.s]++
		}
		return length
	}
	notes := true
	if fit(true) > limit {
		notes = false // not even the notes fit: keep what the limit allows
		fit(false)
	}
	var sb strings.Builder
	sb.WriteString(summaryTitle)
	for i, sec := range sections {
		if len(sec.bullets) == 0 {
			continue
		}
		sb.WriteString("\n" + sec.heading)
		for j, b := range sec.bullets {
			if kept[i][j] {
				sb.WriteString("\n- " + b.text)
			}
		}
		if notes && dropped[i] > 0 {
			sb.WriteString("\n" + fmt.Sprintf(omittedNoteShape, dropped[i]))
		}
	}
	return truncateHard(sb.String(), limit)
}

// truncateHard cuts s at limit runes; it is the last resort when not even
// the headings fit.
func truncateHard(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return truncate(s, limit)
}
