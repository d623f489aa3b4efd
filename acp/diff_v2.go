package acp

import (
	"encoding/json"
	"fmt"
	"github.com/sessionkit/sessionkit/acp/schema"
	"path/filepath"
	"strings"
)

// v2Content converts tool call content to its v2 shapes: a v1 diff
// ({path, oldText, newText}) becomes the v2 diff, {changes: [{operation:
// "add" or "modify", path}], patch: {format: "git_patch", text}}, with the
// patch made from the two texts, its file named relative to cwd (the
// session's working directory) as git apply takes it there. A Partial diff
// (fragments, not the whole file) has no patch: one made of fragments would
// not apply. Other content is the same in both.
func v2Content(content []schema.ToolCallContent, cwd string) []schema.ToolCallContent {
	out := make([]schema.ToolCallContent, len(content))
	for i, c := range content {
		out[i] = c
		if d := c.Diff; d != nil {
			op := "modify"
			if d.OldText == "" && !d.Partial {
				op = "add"
			}
			v2 := map[string]any{
				"type":    "diff",
				"changes": []map[string]string{{"operation": op, "path": d.Path}},
			}
			if !d.Partial {
				v2["patch"] = map[string]string{"format": "git_patch", "text": gitPatch(patchName(d.Path, cwd), d.OldText, d.NewText)}
			}
			raw, err := json.Marshal(v2)
			if err == nil {
				out[i] = schema.ToolCallContent{Unknown: &schema.UnknownVariant{Tag: "diff", Raw: raw}}
			}
		}
	}
	return out
}

// patchName is how a patch names the file at path: relative to cwd when
// it lies inside it, otherwise the path without its leading slash.
func patchName(path, cwd string) string {
	if cwd != "" {
		if rel, err := filepath.Rel(filepath.Clean(cwd), filepath.Clean(path)); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return strings.TrimPrefix(filepath.ToSlash(path), "/")
}

// gitPatch is a patch in git's format that turns oldText (empty: a new
// file) into newText at name, as git apply takes it: one hunk around the
// lines that differ (those both share at the start and at the end are left
// out) with up to three lines of context on each side, and git's marker
// after a last line without a newline.
func gitPatch(name, oldText, newText string) string {
	oldLines, newLines := splitLines(oldText), splitLines(newText)
	pre := 0
	for pre < len(oldLines) && pre < len(newLines) && oldLines[pre] == newLines[pre] {
		pre++
	}
	suf := 0
	for suf < len(oldLines)-pre && suf < len(newLines)-pre && oldLines[len(oldLines)-1-suf] == newLines[len(newLines)-1-suf] {
		suf++
	}
	lead := min(pre, patchContext)
	trail := min(suf, patchContext)
	before := oldLines[pre-lead : pre]
	removed, added := oldLines[pre:len(oldLines)-suf], newLines[pre:len(newLines)-suf]
	after := oldLines[len(oldLines)-suf : len(oldLines)-suf+trail]
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n", name, name)
	if oldText == "" {
		b.WriteString("new file mode 100644\n--- /dev/null\n")
	} else {
		fmt.Fprintf(&b, "--- a/%s\n", name)
	}
	fmt.Fprintf(&b, "+++ b/%s\n", name)
	fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(pre-lead, lead+len(removed)+trail), hunkRange(pre-lead, lead+len(added)+trail))
	for _, l := range before {
		writePatchLine(&b, ' ', l)
	}
	for _, l := range removed {
		writePatchLine(&b, '-', l)
	}
	for _, l := range added {
		writePatchLine(&b, '+', l)
	}
	for _, l := range after {
		writePatchLine(&b, ' ', l)
	}
	return b.String()
}

// patchContext is the number of context lines on each side of a hunk.
const patchContext = 3

// hunkRange is a hunk header's range of n lines after the first skip.
func hunkRange(skip, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", skip)
	}
	return fmt.Sprintf("%d,%d", skip+1, n)
}

// splitLines splits text into its lines, each with its newline (the last
// may have none).
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// writePatchLine writes one line of a hunk; a line without a newline (the
// last of its file) is followed by git's marker.
func writePatchLine(b *strings.Builder, mark byte, line string) {
	b.WriteByte(mark)
	b.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}
