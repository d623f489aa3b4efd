package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionkit/sessionkit/internal/textcut"
)

// MaxNameLen is the longest tool name the providers accept.
const MaxNameLen = 64

// hashLen is the number of hex digits of the hash a name ends in when it
// is cut or shared.
const hashLen = 8

type listedTool struct {
	server     int // index in the Set
	serverName string
	tool       *sdk.Tool
}

// toolNames names each tool mcp__<server>__<tool> with every character
// outside [a-zA-Z0-9_-] replaced by '_'. A name longer than MaxNameLen,
// or one that more than one tool would get, is cut and ends in '_' and a
// hash of the server's and the tool's names as given, so that the names
// are unique and depend only on the servers' names and tools.
func toolNames(tools []listedTool) []string {
	base := make([]string, len(tools))
	count := map[string]int{}
	for i, t := range tools {
		base[i] = "mcp__" + sanitize(t.serverName) + "__" + sanitize(t.tool.Name)
		count[base[i]]++
	}
	names := make([]string, len(tools))
	used := map[string]bool{}
	for i, b := range base {
		if count[b] == 1 && len(b) <= MaxNameLen {
			names[i] = b
			used[b] = true
		}
	}
	for i, b := range base {
		if names[i] != "" {
			continue
		}
		key := tools[i].serverName + "\x00" + tools[i].tool.Name
		for salt := 0; ; salt++ {
			n := hashed(b, key, salt)
			if !used[n] {
				names[i] = n
				used[n] = true
				break
			}
		}
	}
	return names
}

// hashed cuts base and appends a hash of key (and salt, past 0).
func hashed(base, key string, salt int) string {
	if salt > 0 {
		key += fmt.Sprintf("\x00%d", salt)
	}
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	if len(base) > MaxNameLen-len(suffix) {
		base = base[:MaxNameLen-len(suffix)]
	}
	return base + suffix
}

// sanitize replaces every character outside [a-zA-Z0-9_-] with '_'
// (one per character, not per byte).
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// clean makes text from a server safe to show a model or a user: every
// control character other than newline and tab, every invisible
// character that reorders or hides text (bidirectional controls,
// zero-width characters) and every byte that is not UTF-8 is shown
// escaped (textcut.Escape: \x1b, \u202e, \xff); then it is cut to at
// most max bytes, ending in "…" when cut.
func clean(s string, max int) string {
	s = textcut.Escape(s)
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	return textcut.Prefix(s, max-len(ellipsis)) + ellipsis
}

// checkSchema says why a tool's input schema cannot be offered ("" when
// it can): it must be a JSON object of at most max bytes whose type, when
// it names one, is "object".
func checkSchema(t *sdk.Tool, max int) string {
	if t.InputSchema == nil {
		return ""
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return fmt.Sprintf("its input schema cannot be encoded: %v", err)
	}
	if len(raw) > max {
		return fmt.Sprintf("its input schema is %d bytes (at most %d)", len(raw), max)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return "its input schema is not a JSON object"
	}
	if typ, ok := m["type"]; ok && typ != "object" {
		return fmt.Sprintf("its input schema is of type %v, not object", typ)
	}
	return ""
}

// objectSchema returns the schema with "type":"object" where it names no
// type, and an empty object schema for none.
func objectSchema(raw []byte) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if _, ok := m["type"]; ok {
		return raw
	}
	m["type"] = "object"
	out, _ := json.Marshal(m)
	return out
}

// render turns a tool result into text: text content as it is, other
// content named in brackets (its name, URI and MIME type cleaned and cut
// to max bytes), an embedded text resource under its URI; the structured
// content as JSON when there is no other content. Parts are joined by
// newlines.
func render(res *sdk.CallToolResult, max int) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, media("image", c.MIMEType, len(c.Data), max))
		case *sdk.AudioContent:
			parts = append(parts, media("audio", c.MIMEType, len(c.Data), max))
		case *sdk.ResourceLink:
			s := "[resource link " + clean(c.URI, max)
			if c.Name != "" {
				s += " " + quoted(clean(c.Name, max))
			}
			if c.MIMEType != "" {
				s += ", " + clean(c.MIMEType, max)
			}
			parts = append(parts, s+"]")
		case *sdk.EmbeddedResource:
			r := c.Resource
			if r == nil {
				parts = append(parts, "[resource without contents]")
				continue
			}
			s := "[resource " + clean(r.URI, max)
			if r.MIMEType != "" {
				s += ", " + clean(r.MIMEType, max)
			}
			if len(r.Blob) > 0 || r.Text == "" {
				parts = append(parts, s+fmt.Sprintf(", %d bytes]", len(r.Blob)))
				continue
			}
			parts = append(parts, s+"]\n"+r.Text)
		default:
			parts = append(parts, fmt.Sprintf("[content of an unknown kind %T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func media(kind, mime string, n, max int) string {
	if mime == "" {
		return fmt.Sprintf("[%s, %d bytes]", kind, n)
	}
	return fmt.Sprintf("[%s %s, %d bytes]", kind, clean(mime, max), n)
}

func quoted(s string) string { return `"` + s + `"` }
