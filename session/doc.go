// Package session is the agent side of a conversation with a model: a
// [Session] owns the canonical history, the configuration, an ordered input
// queue of prompts, steers, configuration changes and compactions, and a
// timeline of events.
//
//	s, err := session.New(ctx, session.Config{Provider: offline.New()})
//	if err != nil { ... }
//	defer s.Close()
//	turn, err := s.Prompt(ctx, session.PromptRequest{Text: "hello"})
//	res, err := turn.Wait(ctx)
//	c, err := s.Compact(ctx, session.CompactRequest{})
//	<-c.Finished()
//	fmt.Println(c.Result().Reason)
//
// # Opening
//
// [New] creates or resumes a session; [Open] opens only one that exists
// (history.ErrNotFound otherwise). On reopen, settings that Configure
// changed keep their stored values and the others follow Config;
// [Session.Settings] reports the effective ones (docs/session.md).
//
// # The input queue
//
// Every public call validates its input synchronously, queues the command
// and returns a [Handle] at once; invalid input returns an error wrapping
// [ErrInvalid] and queues nothing. Prompts start a turn only when the session
// is idle. Steer, Configure, Compact and Uncompact are checkpoint commands: they are
// taken at the next step checkpoint of the active turn (after a step's
// assistant message and tool results are committed, before the next provider
// request), or at once when the session is idle, in their exact queue order,
// and always before the next prompt's turn. A turn that ends before another
// checkpoint leaves them queued; they run as it ends, before its Handle
// finishes. See docs/session.md for the diagram and docs/design.md §2.
//
// # Compaction
//
// Compact and the automatic threshold (Config.AutoCompactTokens) run the
// same algorithm (package compact): the oldest floor(n/2) user and assistant
// messages of Active are summarized by exactly one model call and archived as
// a history.Segment in one store transaction. The Handle's result says
// compacted, nothing_to_compact or compact_failed; nothing is committed
// unless a non-empty summary exists. Automatic compaction backs off after a
// failure (docs/design.md §3.3, [AutoCompactEvent]). See docs/compaction.md.
//
// Opt-in controls (docs/design.md §3.5, §4.11): Config.SummaryProvider writes
// the summaries with another model; Config.BeforeCompact sees each plan in
// the worker and may change the instructions, supply the summary or veto;
// Config.CompactOnOverflow compacts once and retries a step the provider
// rejected as too long (trigger "overflow"); Config.ContextWindow bounds the
// summary input; CompactRequest.Through archives up to a chosen message; and
// [Session.Uncompact] undoes the newest compaction.
//
// # Recall and pruning
//
// Nothing archived is lost: [Session.Search] and [Session.Messages] search
// and read the session's messages, archived or active, and Config.Recall
// gives the model the same as the built-in tool recall ([RecallTool]).
// Config.PruneToolResults keeps old long tool results out of the model's
// requests without a model call. Every compaction records how many of the
// archived facts its summary kept ([CompactResult].Fidelity). See
// docs/compaction.md.
//
// # Ownership and concurrency
//
// One goroutine owns a session's state; provider calls, tool runs and store
// writes run one at a time in a worker goroutine that receives copies and
// posts its results back. No mutex guards session state. Every message is
// committed to the store before the event that reports it is published.
//
// # Events
//
// [Session.Subscribe] delivers the timeline: messages, text deltas,
// compaction lifecycle mutations and timeline actions, usage, turns. Each
// event has a sequence number; durable events can be replayed, deltas are
// live only. A subscriber that falls behind is ended with a
// [SlowSubscriberError] and can resubscribe from its last sequence number.
// Events are for presentation; application logic waits on Handles.
package session
