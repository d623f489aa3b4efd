// Package acp speaks the Agent Client Protocol (ACP v1, and the v2 draft
// beside it) for sessionkit: the agent side ([Serve]) turns each ACP session
// into a session.Session, and the client side ([Dial], [RemoteSession],
// [Timeline]) reduces what an agent sends with the Session Compaction RFD's
// semantics. The wire types are in package
// [github.com/sessionkit/sessionkit/acp/schema].
//
//	err := acp.Serve(ctx, os.Stdin, os.Stdout, acp.ServerOptions{
//		Session: session.Config{Provider: offline.New(), Store: store},
//	})
//
// The client side drives an agent like a local session:
//
//	c, err := acp.Start(ctx, "acp-agent", nil, acp.ClientOptions{})
//	rs, err := c.NewSession(ctx, cwd)
//	h, err := rs.Prompt(ctx, session.PromptRequest{Text: "hello"})
//	<-h.Finished()
//	for _, it := range rs.Timeline().Items { ... }
//
// # Compaction over ACP
//
// A client that advertises clientCapabilities.session.compaction (an
// object) in initialize sees each compaction as one entity: a
// compaction_update with status in_progress when it starts, one
// compaction_summary_chunk per summary delta, and exactly one terminal
// update (completed with the final summary as an authoritative replacement;
// failed with error and summary null; cancelled with summary null). All of
// them come before the response to the session/prompt they occurred in. A
// client without the capability (absent, null, or not an object) never
// receives a compaction_* update, live or on replay: it gets agent text.
// With nothing to compact there is no entity, only agent text. session/load
// replays the stored timeline, each compaction at its position as one
// terminal update. See docs/acp.md for the mapping of every rule.
//
// # Versions
//
// Each connection speaks the version its initialize chose: 1 for a request
// for 1, 2 for a request for 2 or more, the [schema.UnsupportedProtocolVersion]
// error below 1 ([ServerOptions.V1Only] keeps every connection on v1). Both
// versions are fed by the same session events through the same owner
// goroutine per ACP session; a per-connection surface builds the wire items
// (v2: a {messageId} receipt for each prompt, state_update for the turn's
// state, messageId on every chunk, tool calls created by tool_call_update,
// typed commands, compaction updates without any capability). The client
// side has its own per-connection surface, chosen by the agent's answer to
// initialize, for the requests it sends and the answers it reads.
//
// # Commands and extensions
//
// "/compact [instructions]" as a prompt runs a manual compaction; the agent
// advertises it in available_commands_update. The _sessionkit/compact
// request queues a compaction and is answered at once with its ID; the
// _sessionkit/compact_finished notification carries the result.
//
// # Wire types
//
// Every message the package sends or reads has a Go type in package schema.
// Unions ([schema.SessionUpdate], [schema.ContentBlock],
// [schema.ToolCallContent]) are decoded by their discriminator, never by
// shape; unknown kinds are kept verbatim. Nullable patch fields are
// [schema.Optional] values: the zero value is omitted, [schema.Null]
// clears, [schema.Value] replaces; they never encode null or [] by
// accident.
package acp
