package compact

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/sessionkit/sessionkit/history"
)

// FactKind is the kind of a [Fact].
type FactKind string

// Kinds of facts, in the order [Facts] looks for them in a text.
const (
	FactURL         FactKind = "url"         // an http or https URL
	FactPath        FactKind = "path"        // a file path: with a directory, or a name with a common extension
	FactIdentifier  FactKind = "identifier"  // an identifier in a code span (`ParseConfig`, `pkg.Func()`)
	FactQuantity    FactKind = "quantity"    // a number with a unit (30s, 512 MB, 99.9%)
	FactError       FactKind = "error"       // a line that reports an error (error:, panic:, FAIL, exception)
	FactCommand     FactKind = "command"     // a command that was run (a tool call's command argument, a "$ " line)
	FactInstruction FactKind = "instruction" // a sentence of the user's with always, never, don't, do not or must
)

// Fact is one thing a summary should keep, as [Facts] found it.
type Fact struct {
	Kind FactKind
	// Text is the fact as it appears in the messages (an error line or an
	// instruction as one line, at most maxFactText bytes).
	Text string
}

// maxFactText bounds the Text of an error line or an instruction.
const maxFactText = 200

var (
	factURL   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`https?://[^\s<>"'` + "`" + `()\[\]{}]+`) })
	factSpan  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`\n]{1,120})`") })
	factIdent = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?$`)
	})
	// factPath is matched against one token (see pathDelims) from its
	// start: a path begins at the start of a text or after a delimiter.
	factPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[\w]|(?:[\w-][\w.-]*)?[\w-]\.(?:go|mod|sum|txt|md|json|ya?ml|toml|js|mjs|ts|tsx|py|rs|c|h|cc|cpp|java|kt|rb|sh|html|css|sql|csv|xml|ini|cfg|conf|lock|proto|env))\b`)
	})
	factErrLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:\w*error:|\bpanic:|\bfatal:|^FAIL\b|--- FAIL|\bexception\b|\btraceback\b|: undefined:|: cannot )`)
	})
	factRule = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:always|never|don't|dont|do not|must|mustn't|must not)\b`)
	})
)

// The cheap checks that let Facts skip a regular expression on a text
// that cannot match it: Facts runs on every compaction's whole prefix, so
// it looks at each byte a small number of times (every text is scanned
// for these words first, and only the lines, tokens or windows that can
// hold a fact meet a regular expression).
var (
	errMarkers  = newMarkerSet("error:", "panic:", "fatal:", "fail", "exception", "traceback", ": undefined:", ": cannot ")
	ruleMarkers = newMarkerSet("always", "never", "don't", "dont", "do not", "must")
)

// pathDelims are the characters a path may follow (factPath's left
// context): white space, ( [ " ' ` = and :.
const pathDelims = " \t\n\r\f([\"'`=:"

// factUnits are the units a number with a unit ends in (without case).
var factUnits = map[string]bool{}

func init() {
	for _, u := range strings.Fields(`ms µs us ns s sec secs second seconds min mins minute minutes h hour hours
		day days kib mib gib tib kb mb gb tb byte bytes % px token tokens line lines file files
		request requests rps qps mhz ghz x times retries workers connections threads cores`) {
		factUnits[u] = true
	}
}

// markerSet is a list of lower-case ASCII words that containsFold finds in
// one pass over a text.
type markerSet struct {
	words   []string
	starts  [256]bool     // the bytes a word starts with, in either case, and every byte above ASCII
	byFirst [256][]string // the words by their first byte, without it
}

func newMarkerSet(words ...string) *markerSet {
	m := &markerSet{words: words}
	for i := range 256 {
		c := byte(i)
		// A byte above ASCII sends containsFold the other way.
		m.starts[c] = c >= utf8.RuneSelf || slices.ContainsFunc(words, func(w string) bool { return asciiLower[c] == w[0] })
	}
	for _, w := range words {
		m.byFirst[w[0]] = append(m.byFirst[w[0]], w[1:])
	}
	return m
}

// asciiLower maps an ASCII byte to its lower case; other bytes to
// themselves.
var asciiLower = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// containsFold reports whether s holds one of m's words without case:
// containsAny(strings.ToLower(s), m.words), in one pass and without a copy
// when s is ASCII (other texts take that path).
func (m *markerSet) containsFold(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !m.starts[c] {
			continue
		}
		if c >= utf8.RuneSelf {
			return containsAny(strings.ToLower(s), m.words)
		}
		for _, w := range m.byFirst[asciiLower[c]] {
			if hasPrefixFold(s[i+1:], w) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold reports whether s begins with the lower-case ASCII word w,
// compared without ASCII case.
func hasPrefixFold(s, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for j := range len(w) {
		if asciiLower[s[j]] != w[j] {
			return false
		}
	}
	return true
}

// containsAny reports whether s holds one of words.
func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// Facts extracts, deterministically, the facts a summary of msgs should
// keep, each once (the first time it occurs, compared without case), in
// the order they occur:
//
//   - from user and assistant text: URLs, file paths, identifiers in code
//     spans, numbers with units, error lines, commands on "$ " lines;
//   - from the user's text also the explicit instructions: each sentence
//     with always, never, don't, do not or must;
//   - from tool calls: the paths (arguments named path, file, dir, ...)
//     and the commands (arguments named command or cmd) they ran;
//   - from tool results: error lines and URLs only (a file's contents or a
//     listing are what the archive keeps, not facts to carry).
func Facts(msgs []history.Message) []Fact {
	var f factSet
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case history.RoleTool:
			f.urls(m.Text)
			f.errors(m.Text)
		default:
			f.text(m.Text, m.Role == history.RoleUser)
			for _, c := range m.ToolCalls {
				f.call(c)
			}
		}
	}
	return f.out
}

type factSet struct {
	seen map[string]bool
	out  []Fact
}

func (f *factSet) add(k FactKind, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if len(text) > maxFactText {
		text = cutRunes(text, maxFactText)
	}
	key := string(k) + "\x00" + strings.ToLower(text)
	if f.seen[key] {
		return
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[key] = true
	f.out = append(f.out, Fact{Kind: k, Text: text})
}

// text extracts the facts of a user's (user set) or assistant's text.
func (f *factSet) text(s string, user bool) {
	rest := f.urls(s)
	if strings.IndexByte(rest, '`') >= 0 {
		for _, m := range factSpan().FindAllStringSubmatch(rest, -1) {
			span := strings.TrimSpace(m[1])
			if factIdent().MatchString(span) {
				f.add(FactIdentifier, span)
			}
		}
	}
	f.paths(rest)
	f.numbers(rest)
	f.errors(s)
	if strings.Contains(s, "$ ") {
		for line := range strings.SplitSeq(s, "\n") {
			if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$ "); ok {
				f.add(FactCommand, cmd)
			}
		}
	}
	if user && ruleMarkers.containsFold(s) {
		for _, sent := range splitSentences(s) {
			if factRule().MatchString(sent) {
				f.add(FactInstruction, sent)
			}
		}
	}
}

// paths adds the file paths of s: each token (s cut at pathDelims) that
// holds a slash or a dot is matched against factPath from its start.
func (f *factSet) paths(s string) {
	if strings.IndexByte(s, '/') < 0 && strings.IndexByte(s, '.') < 0 {
		return // no token can hold a slash or a dot
	}
	for i := 0; i < len(s); {
		for i < len(s) && isPathDelim[s[i]] {
			i++
		}
		start, mark := i, false
		for ; i < len(s) && !isPathDelim[s[i]]; i++ {
			mark = mark || s[i] == '/' || s[i] == '.'
		}
		if !mark {
			continue
		}
		if m := factPath().FindStringSubmatch(s[start:i]); m != nil {
			if p := strings.TrimRight(m[1], "."); pathLike(p) {
				f.add(FactPath, p)
			}
		}
	}
}

// isPathDelim holds the bytes of pathDelims (all of them ASCII).
var isPathDelim = func() (t [256]bool) {
	for i := range len(pathDelims) {
		t[pathDelims[i]] = true
	}
	return t
}()

// numbers adds the numbers with a unit of s: a number (digits, maybe a
// fraction after . or ,) that follows the start of s or a character that
// is neither a word character nor a dot, then at most one white-space
// character, then a unit of factUnits that ends where the word does. It
// reads each byte a bounded number of times (no regular expression).
func (f *factSet) numbers(s string) {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if start > 0 && (isWordByte(s[start-1]) || s[start-1] == '.') {
			continue
		}
		if i+1 < len(s) && (s[i] == '.' || s[i] == ',') && isDigit(s[i+1]) {
			for i++; i < len(s) && isDigit(s[i]); i++ {
			}
		}
		num, j := s[start:i], i
		sp := ""
		if j < len(s) && strings.IndexByte(" \t\n\r\f", s[j]) >= 0 {
			sp, j = s[j:j+1], j+1
		}
		k := j
		switch {
		case k < len(s) && s[k] == '%':
			k++
		case strings.HasPrefix(s[k:], "µ"):
			k += len("µ")
			fallthrough
		default:
			for k < len(s) && ('a' <= s[k]|0x20 && s[k]|0x20 <= 'z') {
				k++
			}
		}
		if k == j || k < len(s) && isWordByte(s[k]) || !factUnits[strings.ToLower(s[j:k])] {
			i-- // the loop's i++ goes on after the number
			continue
		}
		f.add(FactQuantity, num+sp+s[j:k])
		i = k - 1
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isWordByte(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// urls adds the URLs of s and returns s without them.
func (f *factSet) urls(s string) string {
	if !strings.Contains(s, "http") {
		return s
	}
	for _, u := range factURL().FindAllString(s, -1) {
		f.add(FactURL, strings.TrimRight(u, ".,;:!?"))
	}
	return factURL().ReplaceAllString(s, " ")
}

// errors adds the lines of s that report an error.
func (f *factSet) errors(s string) {
	if !errMarkers.containsFold(s) {
		return
	}
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && factErrLine().MatchString(line) && len(contentWords(line)) > 0 {
			f.add(FactError, line)
		}
	}
}

// call adds the paths and the command of a tool call.
func (f *factSet) call(c history.ToolCall) {
	var args map[string]any
	if json.Unmarshal(c.Arguments, &args) != nil {
		return
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a map's order is not deterministic
	for _, k := range keys {
		v, ok := args[k].(string)
		if !ok {
			continue
		}
		switch n := strings.ToLower(k); {
		case n == "command" || n == "cmd":
			f.add(FactCommand, v)
		case n == "path" || n == "file" || n == "filename" || n == "file_path" || n == "dir" || n == "directory":
			f.add(FactPath, v)
		}
	}
}

// pathLike tells a path from words joined by a slash ("and/or"): it has
// an extension, starts at a root (/, ./, ../, ~/) or has two slashes, and
// is not a number (1.5, 3/4).
func pathLike(p string) bool {
	if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' && r != '/' }) < 0 {
		return false
	}
	last := p[strings.LastIndexByte(p, '/')+1:]
	return strings.Contains(last, ".") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, ".") ||
		strings.HasPrefix(p, "~/") || strings.Count(p, "/") >= 2
}

// splitSentences cuts s into its sentences and lines.
func splitSentences(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		start := 0
		for i := 0; i < len(line); i++ {
			if c := line[i]; (c == '.' || c == '!' || c == '?' || c == ';') && (i+1 == len(line) || line[i+1] == ' ') {
				out = append(out, strings.TrimSpace(line[start:i+1]))
				start = i + 1
			}
		}
		if t := strings.TrimSpace(line[start:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// In reports whether the fact occurs in text (a summary): its text, without
// case, for every kind but error lines and instructions, which a summary
// words its own way: for those, at least three quarters of their content
// words (words of four letters or more); a number with a unit is found with
// or without a space between them.
func (f Fact) In(text string) bool {
	return f.in(newSummaryText(text))
}

// summaryText is a summary as Fact.in reads it: lower-cased, and its
// content words (made on first use; [Fidelity] reads them once for all
// facts).
type summaryText struct {
	text, lower string
	words       map[string]bool
}

func newSummaryText(text string) *summaryText {
	return &summaryText{text: text, lower: strings.ToLower(text)}
}

func (t *summaryText) has(w string) bool {
	if t.words == nil {
		t.words = map[string]bool{}
		for _, w := range contentWords(t.text) {
			t.words[w] = true
		}
	}
	return t.words[w]
}

func (f Fact) in(t *summaryText) bool {
	switch f.Kind {
	case FactError, FactInstruction:
		words := contentWords(f.Text)
		if len(words) == 0 {
			return strings.Contains(t.lower, strings.ToLower(f.Text))
		}
		n := 0
		for _, w := range words {
			if t.has(w) {
				n++
			}
		}
		return 4*n >= 3*len(words)
	case FactQuantity:
		// 30s, 30 s: with or without the space.
		bare := strings.ToLower(strings.ReplaceAll(f.Text, " ", ""))
		num := strings.TrimRightFunc(bare, func(r rune) bool { return !unicode.IsDigit(r) })
		return strings.Contains(t.lower, bare) || strings.Contains(t.lower, num+" "+bare[len(num):])
	}
	return strings.Contains(t.lower, strings.ToLower(f.Text))
}

// contentWords are the distinct lower-case words of s of four letters or
// more, in order.
func contentWords(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		if len(w) >= 4 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Fidelity measures how many of the facts of prefix (see [Facts]) occur in
// summary (see [Fact.In]): the figure every committed Segment records.
// Missing lists the first lost ones, at most history.MaxFidelityMissing,
// each as "kind: text".
func Fidelity(prefix []history.Message, summary string) history.Fidelity {
	return FidelityOf(Facts(prefix), summary)
}

// FidelityOf is [Fidelity] for the facts of a prefix extracted before (a
// session extracts them while the summary call runs).
func FidelityOf(facts []Fact, summary string) history.Fidelity {
	fid := history.Fidelity{Facts: len(facts)}
	t := newSummaryText(summary)
	for _, f := range facts {
		if f.in(t) {
			fid.Kept++
		} else if len(fid.Missing) < history.MaxFidelityMissing {
			fid.Missing = append(fid.Missing, string(f.Kind)+": "+f.Text)
		}
	}
	return fid
}

// cutRunes cuts s to at most n bytes on a rune boundary.
func cutRunes(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
