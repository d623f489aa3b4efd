// Package offline is the embedded default [provider.Provider]: it answers
// without a network, without randomness and without reading the clock, so the
// same request always gets the same response. It makes sessionkit usable out
// of the box (demos, quickstart, tests of whole programs) and gives compaction
// a real, extractive summarizer.
//
//	p := offline.New(offline.WithDeltaSize(2))
//	resp, err := p.Complete(ctx, &provider.Request{
//		Purpose:  provider.PurposeTurn,
//		Messages: []history.Message{{ID: "1", Role: history.RoleUser, Text: "Use tabs in main.go."}},
//	}, func(delta string) { fmt.Print(delta) })
//	// resp.Message.Text: "Noted: Use tabs in main.go.\n(1 message in context; no summary of earlier conversation)"
//
// # Turn replies
//
// A [provider.PurposeTurn] request is answered by the first rule that applies:
//
//  1. The last message is a user message, the request declares tools and the
//     user names one of them (case-insensitive, underscores and hyphens may be
//     written as spaces): the reply is "Calling <tool>." with one tool call to
//     that tool. Its arguments are built from the tool's JSON Schema
//     properties and values found in the user text ("name: value", quoted
//     strings, file names, the words after "for", "of", "about" or ":").
//  2. The last message is a user message that names no tool but asks for
//     what a coding agent's tools do: "replace X with Y in F" (X and Y in
//     double, single or back quotes when they have spaces) calls a tool with
//     path, old_* and new_* properties (edit_file) with F, X and Y; "run
//     `cmd`" calls a tool with a command property (run_command); a message
//     that names a file (main.go, docs/notes.md: a name with a common source
//     or text extension) calls a tool whose name contains "read" with a path
//     property (read_file) on it. The reply is "Calling <tool>.".
//  3. The request ends with tool results: the reply reports them, one line
//     "<tool> returned: <first 200 characters>" per result. Results of the
//     recall tool (session.Config.Recall) answer the user's question
//     instead: the reply quotes the sentence of the hits or messages read
//     that shares the most content words with it, and where it was found
//     ("From the archive (message ID, archived by compaction 1): ...").
//     When no sentence of the hits' snippets holds half of the question's
//     content words, the reply first reads the best hit's message in full
//     (recall with its message_id) and answers from that.
//  4. The last user message is a question ("?", a question word, "remember",
//     "recall"). When the request offers the recall tool and neither Active
//     nor the retained summary holds a sentence sharing at least half of
//     the question's content words, the reply calls recall with the
//     question as its query. Otherwise the reply quotes the earlier
//     sentence, in Active or in the retained summary, that shares the most
//     content words with it.
//  5. Otherwise the reply acknowledges the request: "Noted: <first sentence>"
//     followed by the number of messages in context and whether a summary of
//     earlier conversation is present.
//
// # Summaries
//
// A [provider.PurposeSummary] request carries the input the compact package
// renders: an optional <previous-summary> section, a <transcript> section of
// entries such as "[user] ...", "[assistant] ...", "[assistant → tool name]
// args", "[tool name] result" and "[user, steer] ...", and an optional
// <instructions> section. The reply is Markdown with the sections "User
// requests", "Decisions and facts", "Tools used" and "Earlier summary"; the
// last one carries the bullets of the previous summary over, so the user's
// goals survive consecutive compactions: carried-over user requests are marked
// "(request)" (steers "(steer)") and listed first, so the next compaction
// still knows them as goals. "focus on X" in the instructions puts the bullets
// that mention X first. The summary is bounded by [WithMaxSummaryChars]: whole
// bullets are dropped, least important first (tools, then older facts, then
// older goals, then facts; the first goal and the most recent ones go last,
// bullets mentioning the focus after all others); headings are kept. It is
// never empty.
//
// # Streaming and usage
//
// When onDelta is non-nil the reply text is delivered in deltas of a few words
// ([WithDeltaSize]) whose concatenation is exactly the final text; ctx is
// checked before every delta. Token usage is estimated with [CountTokens]:
// input is the system prompt, the retained summary, and every message text and
// tool-call argument of the request; output is the reply text and its
// tool-call arguments.
package offline
