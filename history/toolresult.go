package history

import "strings"

// ToolErrorPrefix begins the Text of a tool result (RoleTool) that reports
// a failure: the tool returned an error or panicked, was unknown, did not
// run, or was cancelled (the session writes such results; a tool's own
// output that begins with it counts as one too). The model reads it, and
// clients show the call as failed.
const ToolErrorPrefix = "error:"

// ToolFailed reports whether text, a tool result's, reports a failure: it
// begins with ToolErrorPrefix.
func ToolFailed(text string) bool {
	return strings.HasPrefix(text, ToolErrorPrefix)
}
