package acp

import "strconv"

// The owner's side of a session's tools (see acp/mcp.go): ending them with
// the session and telling the user what they report.

// endTools ends the session's tools, once: when the session has ended,
// before the response to a session/close (its MCP servers are gone when
// the client hears it is closed), or as the owner exits.
func (a *agentSession) endTools() {
	if f := a.tools.close; f != nil {
		a.tools.close = nil
		f()
	}
}

// toolState is what an ACP session holds of its Toolset, owned by its
// owner goroutine (close runs once the owner has exited).
type toolState struct {
	close   func()   // Toolset.Close
	notices []string // Toolset.Notices not yet told
	told    int      // messages told the user (Tell), for their IDs
}

// tellNotices tells the user the Toolset's Notices, once: after the
// response that opened the session.
func (a *agentSession) tellNotices() {
	for _, n := range a.tools.notices {
		a.tell(n)
	}
	a.tools.notices = nil
}

// tell queues text for the user about the session itself (not from the
// model): agent text of a message of its own. This is the one place that
// decides how the agent tells the user such things (a notice, where the
// client takes notices, once this package sends them).
func (a *agentSession) tell(text string) {
	a.tools.told++
	a.note("tell_"+strconv.Itoa(a.tools.told), text)
}
