package acp

import (
	"encoding/json"
	"fmt"
	"strings"
)

// v2Content converts tool call content to its v2 shapes: a v1 diff
// ({path, oldText, newText}) becomes the v2 diff, {changes: [{operation:
// "add" or "modify", path}], patch: {format: "git_patch", text}}, with the
// patch made from the two texts. Other content is the same in both.
func v2Content(content []ToolCallContent) []ToolCallContent {
	out := make([]ToolCallContent, len(content))
	for i, c := range content {
		out[i] = c
		if d := c.Diff; d != nil {
			op := "modify"
			if d.OldText == "" {
				op = "add"
			}
			raw, err := json.Marshal(map[string]any{
				"type":    "diff",
				"changes": []map[string]string{{"operation": op, "path": d.Path}},
				"patch":   map[string]string{"format": "git_patch", "text": gitPatch(d.Path, d.OldText, d.NewText)},
			})
			if err == nil {
				out[i] = ToolCallContent{Unknown: &UnknownVariant{Tag: "diff", Raw: raw}}
			}
		}
	}
	return out
}

// gitPatch is a patch in git's format that turns oldText (empty: a new
// file) into newText at path: one hunk around the lines that differ (the
// lines both share at the start and at the end are left out).
func gitPatch(path, oldText, newText string) string {
	name := strings.TrimPrefix(path, "/")
	oldLines, newLines := splitLines(oldText), splitLines(newText)
	pre := 0
	for pre < len(oldLines) && pre < len(newLines) && oldLines[pre] == newLines[pre] {
		pre++
	}
	suf := 0
	for suf < len(oldLines)-pre && suf < len(newLines)-pre && oldLines[len(oldLines)-1-suf] == newLines[len(newLines)-1-suf] {
		suf++
	}
	removed, added := oldLines[pre:len(oldLines)-suf], newLines[pre:len(newLines)-suf]
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\n", name, name)
	if oldText == "" {
		b.WriteString("new file mode 100644\n--- /dev/null\n")
	} else {
		fmt.Fprintf(&b, "--- a/%s\n", name)
	}
	fmt.Fprintf(&b, "+++ b/%s\n", name)
	fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(pre, len(removed)), hunkRange(pre, len(added)))
	for _, l := range removed {
		writePatchLine(&b, '-', l)
	}
	for _, l := range added {
		writePatchLine(&b, '+', l)
	}
	return b.String()
}

// hunkRange is a hunk header's range of n lines after the first skip.
func hunkRange(skip, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", skip)
	}
	return fmt.Sprintf("%d,%d", skip+1, n)
}

// splitLines splits text into its lines, without their newlines.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

func writePatchLine(b *strings.Builder, mark byte, line string) {
	b.WriteByte(mark)
	b.WriteString(line)
	b.WriteByte('\n')
}
