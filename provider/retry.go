package provider

import (
	"context"
	"time"
)

// Retry is a provider's report that a request failed and is about to be
// tried again (see [ReportRetry]). Providers retry transient failures
// themselves; this tells the caller that the answer is delayed and why, for
// example so that an editor can say "rate limited, retrying in 20s".
type Retry struct {
	Retry      int           // the retry about to be made: 1 for the first
	MaxRetries int           // the retries the provider allows in all
	Wait       time.Duration // how long it waits before the retry
	// RateLimited reports that the server refused the request for its rate
	// or load (HTTP 429, or Anthropic's 529 overloaded), rather than failing
	// in another transient way (a 5xx, a dropped connection, a timeout).
	RateLimited bool
	Err         error // the failure being retried
}

type retryKey struct{}

// WithRetryReports returns a copy of ctx under which [ReportRetry] calls
// report. A session passes such a ctx to [Provider.Complete] to publish the
// provider's retries as they happen; report runs on the goroutine that
// called Complete and must return promptly.
func WithRetryReports(ctx context.Context, report func(Retry)) context.Context {
	return context.WithValue(ctx, retryKey{}, report)
}

// ReportRetry hands r to the function ctx carries ([WithRetryReports]), and
// does nothing when it carries none. A provider that retries calls it before
// it waits for each retry; the providers of sessionkit do.
func ReportRetry(ctx context.Context, r Retry) {
	if report, ok := ctx.Value(retryKey{}).(func(Retry)); ok && report != nil {
		report(r)
	}
}
