package acp

// The owner's side of a session's tools (see acp/mcp.go): ending them with
// the session. What they tell the user goes as notices (acp/notice.go).

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
	close func() // Toolset.Close
}
