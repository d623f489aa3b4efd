package offline

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/sessionkit/sessionkit/provider"
)

// property is the part of a JSON Schema property the argument builder reads.
type property struct {
	name     string
	typ      string
	enum     []string
	required bool
}

// schemaProperties returns the properties of an object schema in the order
// they are written, with their types ("string" when none is given).
func schemaProperties(raw json.RawMessage) []property {
	var schema struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &schema) != nil || len(schema.Properties) == 0 {
		return nil
	}
	required := map[string]bool{}
	for _, r := range schema.Required {
		required[r] = true
	}
	dec := json.NewDecoder(bytes.NewReader(schema.Properties))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var props []property
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return props
		}
		name, _ := tok.(string)
		var body json.RawMessage
		if err := dec.Decode(&body); err != nil {
			return props
		}
		var def struct {
			Type json.RawMessage `json:"type"`
			Enum []any           `json:"enum"`
		}
		_ = json.Unmarshal(body, &def) // a boolean schema has no type: string
		p := property{name: name, typ: schemaType(def.Type), required: required[name]}
		for _, e := range def.Enum {
			if s, ok := e.(string); ok {
				p.enum = append(p.enum, s)
			}
		}
		props = append(props, p)
	}
	return props
}

// schemaType reads "type": a string, or the first non-null type of a list.
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	return "string"
}

// argBuilder finds argument values in a user message.
type argBuilder struct {
	text     string
	after    string // the text after the tool mention
	toolName string
	used     map[string]bool
	quoted   []string
}

var quotedRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("\"([^\"]+)\"|`([^`]+)`|“([^”]+)”|(?:^|\\s)'([^']+)'(?:$|[\\s.,;:!?])")
})

// buildArguments returns a JSON object with a value for the tool's
// properties, in schema order; "{}" when the tool declares none.
func buildArguments(tool provider.ToolSpec, text string, mentionEnd int) json.RawMessage {
	b := &argBuilder{text: text, after: text[mentionEnd:], toolName: strings.ToLower(tool.Name), used: map[string]bool{}}
	for _, m := range quotedRE().FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if g = strings.TrimSpace(g); g != "" {
				b.quoted = append(b.quoted, g)
			}
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	firstString := true
	for _, p := range schemaProperties(tool.Parameters) {
		var v any
		var ok bool
		switch p.typ {
		case "string":
			v, ok = b.stringValue(p, firstString)
			firstString = false
		case "integer", "number":
			v, ok = b.numberValue(p)
		case "boolean":
			v, ok = b.boolValue(p)
		case "array":
			v, ok = []any{}, p.required
		case "object":
			v, ok = map[string]any{}, p.required
		}
		if !ok {
			continue
		}
		key, _ := json.Marshal(p.name)
		val, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return json.RawMessage(buf.Bytes())
}

// explicit finds "name: value", "name = value" or "name is value".
func (b *argBuilder) explicit(name string) (string, bool) {
	for _, v := range nameVariants(name) {
		re, err := regexp.Compile(`(?i)(?:^|[^\pL\pN_])` + regexp.QuoteMeta(v) + `\s*(?:=|:|\sis\s)\s*("[^"]*"|` + "`[^`]*`" + `|\S+)`)
		if err != nil {
			continue
		}
		if m := re.FindStringSubmatch(b.text); m != nil {
			val := m[1]
			if len(val) >= 2 && (val[0] == '"' || val[0] == '`') {
				return val[1 : len(val)-1], true
			}
			if val = trimToken(val); val != "" {
				return val, true
			}
		}
	}
	return "", false
}

func (b *argBuilder) take(v string) (string, bool) {
	b.used[v] = true
	return v, true
}

func (b *argBuilder) stringValue(p property, first bool) (any, bool) {
	if v, ok := b.explicit(p.name); ok {
		return b.take(v)
	}
	if len(p.enum) > 0 {
		lower := strings.ToLower(b.text)
		for _, e := range p.enum {
			if findWord(lower, strings.ToLower(e)) >= 0 {
				return b.take(e)
			}
		}
		if p.required {
			return b.take(p.enum[0])
		}
		return nil, false
	}
	for _, q := range b.quoted {
		if !b.used[q] && !b.isToolName(q) {
			return b.take(q)
		}
	}
	if !first && !p.required {
		return nil, false
	}
	guesses := []func() string{b.phrase, b.pathLike}
	switch {
	case pathish(p.name) && !p.required:
		// An optional path is a path the text names, or none: never the
		// words of the request ("Use list_files" lists ".", not a
		// directory named "Use list_files").
		guesses = []func() string{b.pathLike, b.placeAfter}
	case pathish(p.name):
		guesses = []func() string{b.pathLike, b.placeAfter, b.phrase, b.rest, func() string { return trimValue(b.text) }}
	default:
		guesses = append(guesses, b.rest, func() string { return trimValue(b.text) })
	}
	for _, g := range guesses {
		if v := g(); v != "" && !b.used[v] && !b.isToolName(v) && !b.mentionsTool(v) {
			return b.take(v)
		}
	}
	if !p.required {
		return nil, false
	}
	return "", true
}

// isToolName reports whether v is the tool's name (as written or spaced).
func (b *argBuilder) isToolName(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	for _, n := range nameVariants(b.toolName) {
		if v == n {
			return true
		}
	}
	return false
}

// mentionsTool reports whether v is words around the tool's name ("Use
// list_files"), which are the request, not an argument.
func (b *argBuilder) mentionsTool(v string) bool {
	lower := strings.ToLower(v)
	for _, n := range nameVariants(b.toolName) {
		if findWord(lower, n) >= 0 {
			return true
		}
	}
	return false
}

var placeRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(?:in|under|inside|of)\s+(?:the\s+)?(?:directory\s+|folder\s+)?(\S+)`)
})

// placeAfter is the word after "in", "under", "inside" or "of" ("the
// files in src"), preferring the part after the tool's mention.
func (b *argBuilder) placeAfter() string {
	for _, s := range []string{b.after, b.text} {
		if m := placeRE().FindStringSubmatch(s); m != nil {
			if v := trimToken(m[1]); v != "" && !stopWords[strings.ToLower(v)] {
				return v
			}
		}
	}
	return ""
}

// stopWords are words after "in" that name no place.
var stopWords = map[string]bool{"it": true, "there": true, "here": true, "this": true, "that": true, "order": true, "full": true, "detail": true}

// pathish reports whether a property name asks for a path or address.
func pathish(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"path", "file", "dir", "url", "uri", "src", "dst", "target"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

var (
	phraseRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(?:\b(?:for|of|about)\s+|:\s*)(.+)`) })
	phraseEndRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\s+(?:for|in|with|using|on|at)\s|,`) })
)

// phrase is the text after "for", "of", "about" or ":", preferring the part
// of the message after the tool mention, up to the end of its sentence, a
// comma or the next "for", "in", "with", "using", "on" or "at".
func (b *argBuilder) phrase() string {
	for _, s := range []string{b.after, b.text} {
		if m := phraseRE().FindStringSubmatch(s); m != nil {
			v := m[1]
			if loc := phraseEndRE().FindStringIndex(v); loc != nil {
				v = v[:loc[0]]
			}
			if v = trimValue(v); v != "" {
				return v
			}
		}
	}
	return ""
}

// pathLike is the first word that looks like a file name, path or
// identifier and is not the tool's name.
func (b *argBuilder) pathLike() string {
	for _, s := range []string{b.after, b.text} {
		for _, f := range strings.Fields(s) {
			w := trimToken(f)
			if w == "" || strings.ToLower(w) == b.toolName {
				continue
			}
			if strings.ContainsAny(w, "/._\\") {
				return w
			}
		}
	}
	return ""
}

// rest is the text after the tool mention.
func (b *argBuilder) rest() string {
	return trimValue(b.after)
}

// trimValue keeps the first sentence of s without trailing punctuation,
// surrounding quotes and a trailing "please".
func trimValue(s string) string {
	s = collapse(s)
	if parts := sentences(s); len(parts) > 0 {
		s = parts[0]
	}
	for {
		t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(s, "please"), "Please"))
		t = strings.Trim(t, "\"'`“”.,;:!? ")
		if t == s {
			break
		}
		s = t
	}
	return truncate(s, 200)
}

var numberRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-?\d+(?:\.\d+)?`) })

func (b *argBuilder) numberValue(p property) (any, bool) {
	parse := func(s string) (any, bool) {
		if p.typ == "integer" {
			n, err := strconv.ParseInt(s, 10, 64)
			return n, err == nil
		}
		f, err := strconv.ParseFloat(s, 64)
		return json.Number(strconv.FormatFloat(f, 'f', -1, 64)), err == nil
	}
	if v, ok := b.explicit(p.name); ok {
		if n, ok := parse(v); ok {
			b.used[v] = true
			return n, true
		}
	}
	if !p.required {
		return nil, false
	}
	for _, f := range strings.Fields(b.text) {
		w := trimToken(f)
		if numberRE().FindString(w) != w || b.used[w] {
			continue
		}
		if n, ok := parse(w); ok {
			b.used[w] = true
			return n, true
		}
	}
	return 0, true
}

func (b *argBuilder) boolValue(p property) (any, bool) {
	if v, ok := b.explicit(p.name); ok {
		switch strings.ToLower(v) {
		case "true", "yes", "on", "1":
			return true, true
		case "false", "no", "off", "0":
			return false, true
		}
	}
	return false, p.required
}
