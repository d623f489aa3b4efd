package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/sessionkit/sessionkit/internal/retry"
	"github.com/sessionkit/sessionkit/provider"
)

// Error is the error [Provider.Complete] returns for every failed request;
// find it with errors.As. Its text never contains the API key.
type Error struct {
	// StatusCode is the HTTP status of the failed response, 0 when there was
	// none (connection error, error event inside a stream, cancellation).
	StatusCode int
	// Type is the "type" of the server's error object, for example
	// "overloaded_error" or "invalid_request_error", when it sent one.
	Type string
	// Message is the server's error message, or the start of a non-JSON
	// error body, with the API key redacted. It is empty when the server sent
	// nothing.
	Message string
	// RequestID is the request-id header of the failed response, if any.
	RequestID string
	// Retries is the number of retries made before giving up.
	Retries int
	// Retryable reports whether the failure is transient (HTTP 429, 5xx and
	// 529, an overloaded or api error event in a stream, a connection error,
	// a truncated stream): trying again later may succeed. It stays true
	// when the provider stopped retrying because its retries were exhausted
	// or because deltas had already been delivered.
	Retryable bool
	// Err is the underlying error: ctx.Err() when the context ended the
	// request, [provider.ErrContextOverflow] when the request is longer than
	// the model's context, otherwise the transport or decoding error (its
	// text with the API key redacted), or nil for other errors the server
	// sent (the SDK's error value is not kept: it holds the request, whose
	// headers carry the key).
	Err error

	// retryAfter is the wait a retry-after header asked for, -1 if none.
	retryAfter time.Duration
}

// Error returns a one-line description: status, message, error type, and
// the number of retries, for example
// "anthropic: HTTP 529: Overloaded (type overloaded_error) (after 3 retries)".
func (e *Error) Error() string {
	what := "request failed"
	if e.Message != "" {
		what = e.Message
	} else if e.Err != nil {
		what = e.Err.Error()
	}
	parts := []string{"anthropic:"}
	if e.StatusCode > 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d:", e.StatusCode))
	}
	parts = append(parts, what)
	if e.Type != "" {
		parts = append(parts, "(type "+e.Type+")")
	}
	if e.Retries > 0 {
		unit := "retries"
		if e.Retries == 1 {
			unit = "retry"
		}
		parts = append(parts, fmt.Sprintf("(after %d %s)", e.Retries, unit))
	}
	return strings.Join(parts, " ")
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// maxMessage bounds the part of a non-JSON error body kept in Message.
const maxMessage = 200

// failure wraps an error that happened before any request was sent.
func (p *Provider) failure(err error) *Error {
	return &Error{Err: retry.RedactErr(err, p.o.apiKey), retryAfter: -1}
}

// cancelled is the error for a request ended by its context.
func (p *Provider) cancelled(ctx context.Context, retries int) *Error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return &Error{Err: retry.RedactErr(err, p.o.apiKey), Retries: retries, retryAfter: -1}
}

// classify turns the error of one attempt into an *Error (Retries unset).
func (p *Provider) classify(err error) *Error {
	e := &Error{retryAfter: -1}
	var bodyErr *retry.BodyError
	if errors.As(err, &bodyErr) {
		// A success status with a body that is not the API's (a proxy's
		// HTML page): the same request gets the same page again.
		e.StatusCode, e.Message, e.Err = bodyErr.StatusCode, bodyErr.Error(), bodyErr
		return e
	}
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) {
		e.Err = retry.RedactErr(err, p.o.apiKey)
		e.Retryable = errors.Is(err, errTruncated) || retry.IsConnError(err)
		return e
	}
	e.Type = retry.Redact(string(apiErr.Type()), p.o.apiKey)
	e.Message = apiErr.Message
	if e.Message == "" && e.Type == "" {
		e.Message = retry.Snippet([]byte(apiErr.RawJSON()), maxMessage, p.o.apiKey)
	}
	e.Message = retry.Redact(e.Message, p.o.apiKey)
	e.RequestID = apiErr.RequestID
	if apiErr.StatusCode < http.StatusBadRequest {
		// An error event inside a stream whose response was 200 OK. The
		// API sends overloaded and internal errors this way.
		switch e.Type {
		case "overloaded_error", "api_error", "rate_limit_error":
			e.Retryable = true
		}
	} else {
		e.StatusCode = apiErr.StatusCode
		if e.Message == "" {
			e.Message = http.StatusText(e.StatusCode)
		}
		e.Retryable = e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
		if e.Retryable && apiErr.Response != nil {
			if d, ok := retry.ParseRetryAfter(apiErr.Response.Header.Get("Retry-After"), time.Now(), MaxRetryAfter); ok {
				e.retryAfter = d
			}
		}
	}
	if isOverflow(e) {
		e.Err = provider.ErrContextOverflow
	}
	return e
}

// isOverflow reports whether the server rejected the request as longer
// than the model's context: a 400 invalid_request_error whose message says
// "prompt is too long" (or, for the input plus max_tokens, that they
// exceed the context limit).
func isOverflow(e *Error) bool {
	if e.StatusCode != http.StatusBadRequest || e.Type != "invalid_request_error" {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "exceed context limit")
}
