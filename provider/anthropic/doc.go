// Package anthropic is a [provider.Provider] for Anthropic's Messages API
// (Claude models), built on the official SDK,
// github.com/anthropics/anthropic-sdk-go/v2. No SDK type appears in its
// exported API.
//
//	p, err := anthropic.New(
//		anthropic.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")),
//		anthropic.WithModel("claude-sonnet-5-5"),
//	)
//	if err != nil { ... }
//	resp, err := p.Complete(ctx, &provider.Request{
//		Purpose:  provider.PurposeTurn,
//		System:   "You are terse.",
//		Messages: []history.Message{{Role: history.RoleUser, Text: "hi"}},
//	}, func(delta string) { fmt.Print(delta) })
//
// [FromEnv] builds a provider from ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// SESSIONKIT_MODEL. The SDK itself reads no environment variable and no
// credentials file: the provider's options are its whole configuration.
//
// # Requests
//
// The system prompt is the first block of system. A retained summary is a
// second system block made of [provider.SummaryPreamble], a blank line and
// the summary between <summary> and </summary>, so that the model reads it
// as clearly marked context rather than as a message to answer (docs/design.md
// §4.10). Then the messages, as content blocks:
//
//   - a user message is a text block;
//   - an assistant message is a text block (when it has text) followed by one
//     tool_use block per tool call, its arguments as input ("{}" when
//     empty);
//   - a tool message is a tool_result block (by tool_use_id; without content
//     when its text is empty) in the user message that follows the
//     assistant message. Consecutive tool results are one user message, and
//     a user message right after them (a steer) joins it, after its
//     tool_result blocks.
//
// The first message is always a user message: when the history starts with
// an assistant message (after a compaction it can), a short user text
// saying that the conversation continues from the summary comes first. No
// text block is ever empty: a user message, or an assistant message
// without text and tool calls, that has no text is sent as "(empty)"; the
// history keeps the empty text. Tools are sent with their JSON Schema as
// input_schema (an object schema without properties when they have none).
// max_tokens, which the API requires, is Request.MaxTokens, or
// [WithMaxTokens] ([DefaultMaxTokens]) when the request gives none.
//
// A summary request (purpose [provider.PurposeSummary]) is an ordinary
// request: its System (the summarizer instructions) and its Messages (the
// rendered transcript as one user message). It never sends tool
// definitions, even when some are present.
//
// # Prompt caching
//
// Every request carries cache_control {"type": "ephemeral"} breakpoints on
// the last tool, the system prompt, the summary and the last content block
// of the last message: at most four, the API's limit. The next step of a
// turn, and the next turn, read the whole conversation so far from the
// cache and pay full price only for what was appended; after a compaction
// the tools and the system prompt are still read from the cache. A summary
// request has its own breakpoints on its instructions and its transcript.
// [WithPromptCaching](false) sends none.
//
// # Usage
//
// The Messages API's input_tokens counts only the input after the last
// cache breakpoint: the tokens read from the cache (cache_read_input_tokens)
// and written to it (cache_creation_input_tokens) are reported apart. The
// provider adds them up, so that [provider.Usage].InputTokens is everything
// the request consumed as input, and the automatic compaction trigger
// (docs/design.md §3.1) sees the conversation's real size; CacheReadTokens and
// CacheWriteTokens keep the two parts. In a stream, message_start carries the
// input figures and message_delta the output (cumulative; input figures in a
// message_delta replace those of message_start).
//
// # Streaming
//
// When Complete is given an onDelta function the request is streamed
// (stream: true). The events are message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop,
// ping and error. Every text_delta is passed to onDelta as soon as its event
// is decoded, in order, with no buffering; input_json_delta fragments are
// appended to their tool_use block's arguments. A stream that ends without
// message_stop is truncated: Complete returns an error, never a partial
// response. An error event ends the attempt with that error. A tool_use
// whose assembled input is not valid JSON (the model reached max_tokens
// inside it) is an error too: committed, it would make every later request
// of the session invalid. Without
// onDelta the request is a plain, non-streaming call (the SDK refuses one
// whose max_tokens would take longer than ten minutes: stream those).
//
// # Extended thinking
//
// [WithThinkingBudget] turns extended thinking on for turn requests
// (thinking: {type: enabled, budget_tokens}). The model's thinking_delta
// events are reported as thoughts as they arrive (provider.ReportThought,
// never onDelta), and each thinking block is kept, with the signature of
// its signature_delta, in the message's Thoughts (a redacted_thinking
// block as its data). Later requests send an assistant message's signed
// thoughts back as its first blocks, before its text and tool_use, as the
// API requires of the assistant message a turn's tool results answer;
// thoughts without a signature (another provider's) are left out, and
// without thinking no thought is sent. Summary requests never think.
//
// # Retries
//
// A failed attempt is retried, up to [WithMaxRetries] times (3 by default),
// when it is transient and no delta has been passed to onDelta yet: HTTP
// 429, 5xx and 529 (overloaded_error), an error event of type
// overloaded_error, api_error or rate_limit_error (the API reports overload
// this way once a stream has started), connection errors (refused, reset,
// unexpected EOF, timeouts) and truncated streams. Other 4xx, malformed
// events and other error events are not retried. Once a delta has been
// delivered the attempt is never retried, since the caller has already seen
// part of it. The SDK's own retries are off: they cannot know about
// delivered deltas.
//
// Between attempts the provider waits with exponential backoff and jitter
// ([WithBackoff], 500ms doubling up to 8s by default). A retry-after header
// on a retried response (seconds or an HTTP date) replaces the backoff,
// capped at [MaxRetryAfter]. The wait ends at once when the context is done.
// Every failure is returned as an [*Error]; its Retries field says how many
// retries were made.
//
// # Time limits
//
// Each attempt runs under two limits: [WithTimeout] (the whole attempt,
// first byte sent to last byte read; 10 minutes by default) and
// [WithIdleTimeout] (no byte from the server, headers or body, for that
// long; 2 minutes by default). A limit reached fails the attempt with a
// retryable [*Error] that names the limit, retried as a connection error
// is. A success response whose body is not the API's (an HTML page) is an
// error that quotes its first line and is not retried.
//
// # Errors
//
// [*Error] carries the HTTP status, the error type, the message and the
// request ID. A 400 invalid_request_error saying "prompt is too long" (or
// that the input and max_tokens exceed the context limit) wraps
// [provider.ErrContextOverflow]. The API key never appears in an error or a
// log line: it is redacted from every text the server sends back, and the
// SDK's error value, which holds the request and its headers, is not kept.
package anthropic
