package offline

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/sessionkit/sessionkit/provider"
)

// The requests a user makes of a coding agent's tools without naming them
// (turn rule 2): an edit, a command, a file to read.
var (
	quotedArg = "\"([^\"]+)\"|`([^`]+)`|'([^']+)'|(\\S+)"
	editRE    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\breplace\s+(?:` + quotedArg + `)\s+with\s+(?:` + quotedArg + `)\s+in\s+(\S+)`)
	})
	planRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*plan\s*:\s*(\S.*)$`) })
	runRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?i)\\brun\\s+`([^`]+)`") })
	listRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:list|show(?:\s+me)?)\s+(?:all\s+)?(?:the\s+)?files\b|\bwhat\s+files\b|\bwhich\s+files\b`)
	})
	fileRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[\s(\["'` + "`" + `])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:go|mod|sum|txt|md|json|ya?ml|toml|js|mjs|ts|tsx|py|rs|c|h|cc|cpp|java|kt|rb|sh|html|css|sql|csv|xml|ini|cfg|conf|lock))\b`)
	})
)

// intent returns the tool call a user message asks for without naming a
// tool: "replace X with Y in F" calls a tool with path, old and new text
// properties (edit_file); "run `cmd`" one with a command property
// (run_command); a message that names a file (a name with a common source
// or text extension) one whose name says it reads and that has a path
// property (read_file); "list the files" (or "list files", "show me the
// files", "what files", "which files") one whose name says it lists and
// that has a path property (list_files), with the directory after "in" or
// none. X and Y may be quoted ("…", `…`, '…').
func intent(text string, tools []provider.ToolSpec) (provider.ToolSpec, json.RawMessage, bool) {
	if m := editRE().FindStringSubmatch(text); m != nil {
		old, nw, file := firstOf(m[1:5]), firstOf(m[5:9]), trimToken(m[9])
		for _, t := range tools {
			path, oldP, newP := "", "", ""
			for _, p := range schemaProperties(t.Parameters) {
				n := strings.ToLower(p.name)
				switch {
				case strings.HasPrefix(n, "old"):
					oldP = p.name
				case strings.HasPrefix(n, "new"):
					newP = p.name
				case pathish(n):
					path = p.name
				}
			}
			if path != "" && oldP != "" && newP != "" {
				return t, object(path, file, oldP, old, newP, nw), true
			}
		}
	}
	if m := runRE().FindStringSubmatch(text); m != nil {
		for _, t := range tools {
			for _, p := range schemaProperties(t.Parameters) {
				if p.name == "command" {
					return t, object("command", m[1]), true
				}
			}
		}
	}
	if listRE().MatchString(text) {
		for _, t := range tools {
			if !strings.Contains(strings.ToLower(t.Name), "list") {
				continue
			}
			for _, p := range schemaProperties(t.Parameters) {
				if pathish(p.name) {
					b := argBuilder{text: text, after: text}
					if dir := b.placeAfter(); dir != "" {
						return t, object(p.name, dir), true
					}
					return t, json.RawMessage(`{}`), true
				}
			}
		}
	}
	if m := fileRE().FindStringSubmatch(text); m != nil {
		for _, t := range tools {
			if !strings.Contains(strings.ToLower(t.Name), "read") {
				continue
			}
			for _, p := range schemaProperties(t.Parameters) {
				if pathish(p.name) {
					return t, object(p.name, m[1]), true
				}
			}
		}
	}
	return provider.ToolSpec{}, nil, false
}

// planIntent finds "plan: a; done b; c", which calls the tool named plan
// (session.PlanTool) with the steps: one that begins "done " completed,
// the first other one in progress, the rest pending; "plan: clear" clears
// the plan. It comes before every other intent (the text names the tool).
func planIntent(text string, tools []provider.ToolSpec) (provider.ToolSpec, json.RawMessage, bool) {
	if m := planRE().FindStringSubmatch(strings.TrimSpace(text)); m != nil {
		for _, t := range tools {
			if t.Name == "plan" {
				return t, planArgs(m[1]), true
			}
		}
	}
	return provider.ToolSpec{}, nil, false
}

// planArgs are the plan tool's arguments for steps, as planIntent says.
func planArgs(steps string) json.RawMessage {
	type entry struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	entries := []entry{}
	if !strings.EqualFold(strings.TrimSpace(steps), "clear") {
		current := false
		for s := range strings.SplitSeq(steps, ";") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			e := entry{Content: s, Status: "pending"}
			if rest, ok := strings.CutPrefix(s, "done "); ok {
				e = entry{Content: strings.TrimSpace(rest), Status: "completed"}
			} else if !current {
				e.Status, current = "in_progress", true
			}
			entries = append(entries, e)
		}
	}
	b, _ := json.Marshal(map[string]any{"entries": entries})
	return b
}

// firstOf is the first non-empty group.
func firstOf(groups []string) string {
	for _, g := range groups {
		if g != "" {
			return g
		}
	}
	return ""
}

// object encodes name/value pairs as a JSON object, in order.
func object(kv ...string) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}
