package provider

import "context"

type thoughtKey struct{}

// WithThoughtDeltas returns a copy of ctx under which [ReportThought]
// calls report. A session passes such a ctx to [Provider.Complete] to show
// the model's reasoning as it streams (history.Message.Thoughts holds it
// once the response is complete); report runs on the goroutine that
// called Complete and must return promptly.
func WithThoughtDeltas(ctx context.Context, report func(text string)) context.Context {
	return context.WithValue(ctx, thoughtKey{}, report)
}

// ReportThought hands a delta of the model's reasoning to the function ctx
// carries ([WithThoughtDeltas]), and does nothing when it carries none or
// text is empty. A provider whose model reasons (Anthropic's extended
// thinking, an OpenAI-compatible server's reasoning_content) calls it as
// the reasoning arrives, and returns the whole reasoning in the response
// message's Thoughts; the providers of sessionkit do. Like a text delta, a
// reported thought makes an attempt not retryable.
func ReportThought(ctx context.Context, text string) {
	if report, ok := ctx.Value(thoughtKey{}).(func(string)); ok && report != nil && text != "" {
		report(text)
	}
}
