// Package transcript owns the text of a summary request: the one user
// message that carries the previous summary, the messages to summarize and
// the instructions. The compact package writes it ([Render]); the offline
// provider reads it back ([Parse]). Nothing else knows the format, so a
// change of it is made here once and checked by one round-trip test.
//
//	text := transcript.Render(transcript.Document{
//		Previous: summary,
//		Entries:  transcript.FromMessages(prefix, 2000),
//	})
//	doc := transcript.Parse(text) // doc.Entries[i].Kind, .Tool, .Text
//
// # The format
//
//	<previous-summary>
//	## Summary of earlier conversation ...
//	</previous-summary>
//
//	<transcript>
//	[user] fix the build
//	[assistant] Looking at the error.
//	[assistant → tool read_file] {"path":"main.go"}
//	[tool read_file] package main …
//	[user, steer] use Go 1.26
//	</transcript>
//
//	<instructions>
//	focus on the tests
//	</instructions>
//
//	Write the updated summary of the conversation above now.
//
// The previous-summary and instructions sections are left out when empty.
// Each entry starts a line with its label in brackets, so that a model reads
// the transcript as a record to summarize rather than a conversation to
// continue; the later lines of its text follow as they are, with two
// exceptions that keep a text from changing the structure around it:
//
//   - a line that starts like a label ("[user] ...", after any number of
//     backslashes) gets one more backslash in front;
//   - a closing tag of a section ("</transcript>", "</previous-summary>",
//     "</instructions>", with any number of backslashes after the "<") gets
//     one more backslash after the "<", in every section.
//
// [Parse] removes both. Render writes every text without the white space
// around it, an entry's text also without carriage returns at its line
// ends, and every tool name on one line without "]" (see [Document]).
//
// # Reading other text
//
// Parse accepts any text, not only Render's: a request made by hand, several
// messages joined, CRLF line ends, a section without its closing tag (it
// ends where the next section begins), entries without any section (the text
// outside every section is then the transcript), labels with extra spaces,
// "->" for "→" and "tool:" for "tool". Text before the first entry, and an
// entry labelled "[system]", become entries of kind [Other].
package transcript

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// Kind is what an entry of a transcript stands for.
type Kind int

// Kinds of entries.
const (
	// Other is text Parse found before the first entry, or under the
	// label "[system]", which is how Render writes it. A transcript made
	// from messages has none.
	Other Kind = iota
	// User is a user message; Steer says whether it arrived as a steer.
	User
	// Assistant is the text of an assistant message.
	Assistant
	// Call is one tool call of an assistant message: Tool is the tool's
	// name and Text its arguments.
	Call
	// Result is a tool's output: Tool names the tool, Text is the output.
	Result
)

// Entry is one entry of a transcript.
type Entry struct {
	Kind  Kind
	Steer bool   // User only: the message arrived as a steer
	Tool  string // Call and Result only: the tool's name
	Text  string
}

// Document is everything a summary request's message carries.
//
// Render writes a document in its canonical form: every text without the
// white space around it, an entry's text also with no carriage return at a
// line end; a tool name with its line breaks made spaces, "]" made ")",
// without white space around it or a ":" in front; Steer only on a User
// entry, Tool only on a Call or a Result, and a Kind it does not know made
// Other. For every document d, Parse(Render(d)) is d in that form.
type Document struct {
	Previous     string  // the retained summary so far, "" before the first compaction
	Entries      []Entry // the messages to summarize, oldest first
	Instructions string  // guidance for this summary, "" for none
}

// final is the last line of a rendered document: the request itself.
const final = "Write the updated summary of the conversation above now."

// The three sections.
const (
	tagPrevious     = "previous-summary"
	tagTranscript   = "transcript"
	tagInstructions = "instructions"
)

var tags = [...]string{tagPrevious, tagTranscript, tagInstructions}

// closers are the closing tags of the sections, without their "<".
var closers = [...]string{"/" + tagPrevious + ">", "/" + tagTranscript + ">", "/" + tagInstructions + ">"}

// Render writes d in the format of the package documentation, in one
// allocation for a document without escapes.
func Render(d Document) string {
	prev := strings.TrimSpace(d.Previous)
	instr := strings.TrimSpace(d.Instructions)
	var b strings.Builder
	b.Grow(len(prev) + entriesSize(d.Entries) + len(instr) + 128)
	if prev != "" {
		b.WriteString("<previous-summary>\n")
		writeText(&b, prev, false)
		b.WriteString("\n</previous-summary>\n\n")
	}
	b.WriteString("<transcript>\n")
	writeEntries(&b, d.Entries)
	b.WriteString("\n</transcript>")
	if instr != "" {
		b.WriteString("\n\n<instructions>\n")
		writeText(&b, instr, false)
		b.WriteString("\n</instructions>")
	}
	b.WriteString("\n\n" + final + "\n")
	return b.String()
}

// RenderEntries writes the entries alone, as they appear between the
// transcript tags: one after the other, separated by a newline.
func RenderEntries(entries []Entry) string {
	var b strings.Builder
	b.Grow(entriesSize(entries))
	writeEntries(&b, entries)
	return b.String()
}

// entriesSize is about the rendered entries' size (at least it, unless a
// text needs escapes), so that one allocation holds them.
func entriesSize(entries []Entry) int {
	const perEntry = 32 // brackets, label, newline
	n := 0
	for i := range entries {
		n += len(entries[i].Text) + len(entries[i].Tool) + perEntry
	}
	return n
}

func writeEntries(b *strings.Builder, entries []Entry) {
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			b.WriteByte('\n')
		}
		text := strings.TrimSpace(e.Text)
		switch e.Kind {
		case User:
			if e.Steer {
				b.WriteString("[user, steer] ")
			} else {
				b.WriteString("[user] ")
			}
		case Assistant:
			b.WriteString("[assistant] ")
		case Call:
			b.WriteString("[assistant → tool ")
			b.WriteString(cleanName(e.Tool))
			b.WriteString("] ")
		case Result:
			b.WriteString("[tool ")
			b.WriteString(cleanName(e.Tool))
			b.WriteString("] ")
		default:
			b.WriteString("[system] ")
		}
		writeLines(b, text)
	}
}

// writeLines writes an entry's text after its label: the first line as it
// is, the later ones escaped where they would read as a label.
func writeLines(b *strings.Builder, text string) {
	first, rest, more := strings.Cut(text, "\n")
	writeEscapedTags(b, strings.TrimRight(first, "\r"))
	if more {
		b.WriteByte('\n')
		writeText(b, rest, true)
	}
}

// writeText writes text with the closing tags of every section escaped, and,
// when lines is set, every line that starts like a label escaped and the
// carriage returns at line ends left out.
func writeText(b *strings.Builder, text string, lines bool) {
	if !lines {
		writeEscapedTags(b, text)
		return
	}
	for {
		line, next, more := strings.Cut(text, "\n")
		line = strings.TrimRight(line, "\r")
		if startsLikeLabel(line) {
			b.WriteByte('\\')
		}
		writeEscapedTags(b, line)
		if !more {
			return
		}
		b.WriteByte('\n')
		text = next
	}
}

// writeEscapedTags writes s with one more backslash after the "<" of every
// closing tag of a section, however many backslashes it already has.
func writeEscapedTags(b *strings.Builder, s string) {
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		if closingTagAfter(s) {
			b.WriteByte('\\')
		}
	}
}

// closingTagAfter reports whether s (what follows a "<") is any number of
// backslashes, then "/", a section's name and ">".
func closingTagAfter(s string) bool {
	s = strings.TrimLeft(s, `\`)
	for _, c := range closers {
		if strings.HasPrefix(s, c) {
			return true
		}
	}
	return false
}

// unescapeTags removes one backslash after the "<" of every escaped closing
// tag of s.
func unescapeTags(s string) string {
	if !strings.Contains(s, `<\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, `<\`)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		if closingTagAfter(s) {
			s = s[1:]
		}
	}
}

// cleanName puts a tool name on one line without "]" and without a ":" or
// white space in front, so that it cannot end or break its label, and reads
// back as it was.
func cleanName(name string) string {
	if strings.ContainsAny(name, "]\n\r") {
		name = strings.Map(func(r rune) rune {
			switch r {
			case ']':
				return ')'
			case '\n', '\r':
				return ' '
			}
			return r
		}, name)
	}
	return strings.TrimSpace(strings.TrimLeftFunc(name, func(r rune) bool { return r == ':' || unicode.IsSpace(r) }))
}

// labelRE matches the start of an entry: a known label in brackets.
var labelRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[\s*(user|assistant|tool|system)\b([^\]]*)\]\s?(.*)$`)
})

// toolRE reads the tool's name after "tool" in a label.
var toolRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:\s*:\s*|\s+|$)(.*)$`) })

// callRE reads the label of a tool call, after "assistant".
var callRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:→|->|>)\s*tool(?:\s*:\s*|\s+|$)(.*)$`) })

// startsLikeLabel reports whether line, after any backslashes it starts
// with, reads as the start of an entry.
func startsLikeLabel(line string) bool {
	line = strings.TrimLeft(line, `\`)
	return strings.HasPrefix(line, "[") && labelRE().MatchString(line)
}

// Parse reads a document from s. It reads any text (see the package
// documentation, section Reading other text) and never fails: at worst the
// whole of s is one entry of kind [Other]. Entry texts, the previous summary
// and the instructions come without the white space around them.
func Parse(s string) Document {
	var (
		d             Document
		prev, instr   []string
		outside       strings.Builder
		hasTranscript bool
	)
	pos := 0
	for {
		tag, at := "", -1
		for _, t := range tags {
			if i := strings.Index(s[pos:], "<"+t+">"); i >= 0 && (at < 0 || pos+i < at) {
				tag, at = t, pos+i
			}
		}
		if at < 0 {
			break
		}
		outside.WriteString(s[pos:at])
		start := at + len(tag) + 2
		closing := "</" + tag + ">"
		var i int
		if tag == tagTranscript {
			// Render escapes the closing tag everywhere; text written by
			// hand may quote it in an entry, so the last one counts.
			i = strings.LastIndex(s[start:], closing)
		} else {
			i = strings.Index(s[start:], closing)
		}
		var end, next int
		if i >= 0 {
			end, next = start+i, start+i+len(closing)
		} else {
			// Unclosed: the section ends where the next one begins.
			end = len(s)
			for _, t := range tags {
				if j := strings.Index(s[start:], "\n<"+t+">"); t != tag && j >= 0 && start+j < end {
					end = start + j
				}
			}
			next = end
		}
		content := strings.Trim(s[start:end], "\r\n")
		switch tag {
		case tagPrevious:
			prev = append(prev, content)
		case tagTranscript:
			hasTranscript = true
			d.Entries = append(d.Entries, parseEntries(content)...)
		case tagInstructions:
			instr = append(instr, content)
		}
		pos = next
	}
	if !hasTranscript {
		// No transcript section: what is outside every section is the
		// transcript, without stray closing tags.
		outside.WriteString(s[pos:])
		rest := outside.String()
		for _, t := range tags {
			rest = strings.ReplaceAll(rest, "</"+t+">", "")
		}
		d.Entries = parseEntries(rest)
	}
	d.Previous = strings.TrimSpace(unescapeTags(strings.Join(prev, "\n")))
	d.Instructions = strings.TrimSpace(unescapeTags(strings.Join(instr, "\n")))
	return d
}

// parseEntries splits a transcript into entries. An entry starts at a line
// that starts with a label; other lines continue the entry before them.
func parseEntries(t string) []Entry {
	var out []Entry
	fresh := false // the last entry is an Other entry without a line yet
	for line := range strings.SplitSeq(t, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if e, ok := parseLabel(line); ok {
			out = append(out, e)
			fresh = false
			continue
		}
		if len(out) == 0 {
			if strings.TrimSpace(line) == "" {
				continue
			}
			out = append(out, Entry{Kind: Other})
			fresh = true
		}
		if strings.HasPrefix(line, `\`) && startsLikeLabel(line) {
			line = line[1:]
		}
		line = unescapeTags(line)
		last := &out[len(out)-1]
		if fresh {
			last.Text, fresh = line, false
		} else {
			last.Text += "\n" + line
		}
	}
	for i := range out {
		out[i].Text = strings.TrimSpace(out[i].Text)
	}
	return out
}

// parseLabel reads the entry a line starts, if it starts one.
func parseLabel(line string) (Entry, bool) {
	if !strings.HasPrefix(line, "[") {
		return Entry{}, false
	}
	m := labelRE().FindStringSubmatch(line)
	if m == nil {
		return Entry{}, false
	}
	rest := m[2]
	e := Entry{Text: unescapeTags(m[3])}
	switch m[1] {
	case "user":
		e.Kind = User
		e.Steer = strings.Contains(strings.ToLower(rest), "steer")
	case "assistant":
		e.Kind = Assistant
		if c := callRE().FindStringSubmatch(rest); c != nil {
			e.Kind, e.Tool = Call, strings.TrimSpace(c[1])
		}
	case "tool":
		e.Kind = Result
		if r := toolRE().FindStringSubmatch(rest); r != nil {
			e.Tool = strings.TrimSpace(r[1])
		} else {
			e.Tool = strings.Trim(rest, " :")
		}
	default:
		e.Kind = Other
	}
	return e, true
}

// FromMessages returns the entries of msgs, oldest first: one for each user
// message and each tool result, one for the text of each assistant message
// (left out when it is white space and the message has tool calls) and one
// for each of its tool calls. Tool outputs and call arguments longer than
// maxToolOutput bytes are cut on a rune boundary, with a note of how much was
// cut; maxToolOutput <= 0 keeps them whole. A result is labelled with the
// name of the call it answers when msgs hold that call, else with the call's
// ID. The entries share their texts with msgs.
func FromMessages(msgs []history.Message, maxToolOutput int) []Entry {
	out := make([]Entry, 0, len(msgs))
	var names map[string]string // tool call ID → tool name, from the calls seen
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case history.RoleUser:
			out = append(out, Entry{Kind: User, Steer: m.Steer, Text: userText(m, maxToolOutput)})
		case history.RoleAssistant:
			if len(m.ToolCalls) == 0 || strings.TrimSpace(m.Text) != "" {
				out = append(out, Entry{Kind: Assistant, Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				if names == nil {
					names = map[string]string{}
				}
				names[tc.ID] = tc.Name
				args := strings.TrimSpace(string(tc.Arguments))
				if args == "" {
					args = "{}"
				}
				out = append(out, Entry{Kind: Call, Tool: tc.Name, Text: truncate(args, maxToolOutput)})
			}
		case history.RoleTool:
			name := names[m.ToolCallID]
			if name == "" {
				name = m.ToolCallID
			}
			out = append(out, Entry{Kind: Result, Tool: name, Text: truncate(m.Text, maxToolOutput)})
		}
	}
	return out
}

// userText is the text of a user message's entry: its text with each
// attachment named on a line of its own where it stands, "[link: name,
// uri]", "[resource: uri]" followed by the resource's text (cut to
// maxToolOutput like a tool's output), or "[image: name, mime type]"; an
// image's bytes are left out.
func userText(m *history.Message, maxToolOutput int) string {
	if len(m.Attachments) == 0 {
		return m.Text
	}
	var b strings.Builder
	line := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	for _, p := range m.Parts() {
		a := p.Attachment
		if a == nil {
			line()
			b.WriteString(p.Text)
			continue
		}
		line()
		switch a.Kind {
		case history.AttachLink:
			fmt.Fprintf(&b, "[link: %s, %s]", oneLine(a.Name), oneLine(a.URI))
		case history.AttachResource:
			fmt.Fprintf(&b, "[resource: %s]", oneLine(a.URI))
			if t := strings.TrimSpace(a.Text); t != "" {
				b.WriteString("\n" + truncate(t, maxToolOutput))
			}
		case history.AttachImage:
			name := a.Name
			if name == "" {
				name = a.URI
			}
			if name == "" {
				fmt.Fprintf(&b, "[image: %s]", oneLine(a.MIMEType))
			} else {
				fmt.Fprintf(&b, "[image: %s, %s]", oneLine(name), oneLine(a.MIMEType))
			}
		default:
			fmt.Fprintf(&b, "[%s]", oneLine(string(a.Kind)))
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// oneLine is s with its line breaks made spaces and "]" made ")", so that a
// name stays inside the brackets of its line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "]", ")").Replace(strings.TrimSpace(s))
}

// truncate cuts s to at most max bytes on a rune boundary and says how much
// was cut.
func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [truncated %d chars]", s[:cut], len(s)-cut)
}
