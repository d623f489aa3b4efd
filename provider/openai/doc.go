// Package openai is a [provider.Provider] for any OpenAI-compatible Chat
// Completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama, LiteLLM, ...),
// built on github.com/sashabaranov/go-openai. No go-openai type appears in
// its exported API.
//
//	p, err := openai.New(
//		openai.WithBaseURL("http://localhost:8080/v1"),
//		openai.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
//		openai.WithModel("gpt-4o-mini"),
//	)
//	if err != nil { ... }
//	resp, err := p.Complete(ctx, &provider.Request{
//		Purpose:  provider.PurposeTurn,
//		System:   "You are terse.",
//		Messages: []history.Message{{Role: history.RoleUser, Text: "hi"}},
//	}, func(delta string) { fmt.Print(delta) })
//
// [FromEnv] builds a provider from OPENAI_BASE_URL, OPENAI_API_KEY and
// SESSIONKIT_MODEL.
//
// # Streaming
//
// When Complete is given an onDelta function the request is streamed
// (stream: true, stream_options.include_usage: true). Every text delta is
// passed to onDelta as soon as its chunk is decoded, in order, with no
// buffering. Tool calls are assembled from their fragments by index. Usage is
// read from the final chunk, which carries no choices. A stream that ends
// without a finish_reason or without that usage chunk is truncated: Complete
// returns an error, never a partial response. Without onDelta the request is
// a plain, non-streaming Chat Completions call.
//
// # Reasoning
//
// A reasoning model served by vLLM, Ollama or DeepSeek streams its
// reasoning as reasoning_content deltas before its content: each is
// reported as a thought (provider.ReportThought, never onDelta) and the
// whole reasoning is the message's one Thought (history.Message.Thoughts),
// streamed or not. It is never sent back: DeepSeek refuses requests whose
// messages carry reasoning_content.
//
// # Usage
//
// [provider.Usage].InputTokens is prompt_tokens, which already counts the
// tokens the server read from its prompt cache; CacheReadTokens is the part
// of it that prompt_tokens_details.cached_tokens reports. Chat Completions
// reports no cache writes, so CacheWriteTokens stays 0.
//
// # Retries
//
// A failed attempt is retried, up to [WithMaxRetries] times (3 by default),
// when it is transient and no delta has been passed to onDelta yet: HTTP 429
// and 5xx, connection errors (refused, reset, unexpected EOF, timeouts) and
// truncated streams. Other 4xx, malformed responses and errors sent inside a
// stream are not retried. Once a delta has been delivered the attempt is
// never retried, since the caller has already seen part of it.
//
// Between attempts the provider waits with exponential backoff and jitter
// ([WithBackoff], 500ms doubling up to 8s by default). A Retry-After header on
// a 429 or 503 response (seconds or an HTTP date) replaces the backoff,
// capped at one minute so that a server cannot stall a session for ever. The
// wait ends at once when the context is done. Every failure is returned as an
// [*Error]; its Retries field says how many retries were made.
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
// # Temperature
//
// go-openai omits a zero temperature from the request body, which would
// silently give the server's default instead. WithTemperature(0) is
// therefore sent as the smallest positive float32
// ([math.SmallestNonzeroFloat32]), which asks for greedy decoding. Without
// WithTemperature no temperature is sent and the server's default applies.
//
// # Summary context
//
// A turn request is sent as: the system prompt as the first system message
// (when non-empty); then, when the request carries a retained summary, a
// second system message made of [provider.SummaryPreamble], a blank line and
// the summary between <summary> and </summary>, so that the model reads it as
// clearly marked context rather than as a message to answer; then the Active
// messages in order. A request with purpose [provider.PurposeSummary] is
// sent the same way (its System is the summarizer prompt, its one message
// the transcript) and never sends tool definitions, even when some are
// present.
//
// # Large messages
//
// go-openai encodes a request through a MarshalJSON per message, which
// copies every content several times (31.7 ms for a 2.5 MB message, the
// size of a summary request at 10,000 messages). The provider therefore
// hands go-openai a placeholder for every message content of 32 KiB or
// more, and the transport streams the body with each of them escaped in
// place, a chunk at a time, while the HTTP client sends it, so no copy of
// the body is ever held whole. The body's length is counted first
// (Content-Length is exact), a retry escapes the texts again, and the body
// is byte for byte the one go-openai would have encoded.
package openai
