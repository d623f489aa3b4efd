package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/sessionkit/sessionkit/internal/retry"
	"github.com/sessionkit/sessionkit/provider"
)

// Error is the error [Provider.Complete] returns for every failed request;
// find it with errors.As. Its text never contains the API key.
type Error struct {
	// StatusCode is the HTTP status of the failed response, 0 when there was
	// none (connection error, error sent inside a stream, cancellation).
	StatusCode int
	// Type and Code are the "type" and "code" of the server's error object,
	// when it sent one.
	Type, Code string
	// Message is the server's error message, or the start of a non-JSON
	// error body, with the API key redacted. It is empty when the server sent
	// nothing.
	Message string
	// Retries is the number of retries made before giving up.
	Retries int
	// Retryable reports whether the failure is transient (HTTP 429 or 5xx, a
	// connection error, a truncated stream): trying again later may succeed.
	// It stays true when the provider stopped retrying because its retries
	// were exhausted or because deltas had already been delivered.
	Retryable bool
	// Err is the underlying error: ctx.Err() when the context ended the
	// request, otherwise the transport or decoding error (its text with the
	// API key redacted).
	Err error
}

// Error returns a one-line description: status, message, error type and
// code, and the number of retries.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("openai: ")
	if e.StatusCode > 0 {
		fmt.Fprintf(&b, "HTTP %d: ", e.StatusCode)
	}
	switch {
	case e.Message != "":
		b.WriteString(e.Message)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("request failed")
	}
	switch {
	case e.Type != "" && e.Code != "":
		fmt.Fprintf(&b, " (type %s, code %s)", e.Type, e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (type %s)", e.Type)
	case e.Code != "":
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	switch {
	case e.Retries == 1:
		b.WriteString(" (after 1 retry)")
	case e.Retries > 1:
		fmt.Fprintf(&b, " (after %d retries)", e.Retries)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

const redactedText = retry.Redacted

func redact(s, secret string) string { return retry.Redact(s, secret) }

func (p *Provider) redactErr(err error) error { return retry.RedactErr(err, p.apiKey) }

// failure wraps an error that happened before any request was sent.
func (p *Provider) failure(err error) *Error {
	return &Error{Err: p.redactErr(err)}
}

// cancelled is the error for a request ended by its context.
func (p *Provider) cancelled(ctx context.Context, retries int) *Error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return &Error{Err: p.redactErr(err), Retries: retries}
}

// codeContextLength is the error code OpenAI (and servers that copy it)
// send for a request longer than the model's context.
const codeContextLength = "context_length_exceeded"

// typeContextSize is the error type llama.cpp's server sends for a
// request longer than its context ("exceed_context_size_error").
const typeContextSize = "exceed_context_size_error"

// overflowMessages are the texts, lower case, by which OpenAI-compatible
// servers that send no context_length_exceeded code say a request is
// longer than the model's context:
//
//   - vLLM: "This model's maximum context length is 4096 tokens. However,
//     you requested 5000 tokens (...)"; newer versions also "... is longer
//     than the maximum model length of 4096" and "... is too long and
//     exceeds limit of 4096";
//   - llama.cpp server: "the request exceeds the available context size,
//     try increasing it" and "request (4476 tokens) exceeds the available
//     context size (4096 tokens)" (type exceed_context_size_error);
//   - Ollama: "the input length exceeds the context length" and, from its
//     older runner, "prompt too long; exceeded max context length by 12
//     tokens".
var overflowMessages = []string{
	"maximum context length",
	"longer than the maximum model length",
	"exceeds the available context size",
	"exceeds the context length",
	"exceeded max context length",
	"is too long and exceeds limit",
}

// contextOverflow reports whether e is a rejection of a request longer
// than the model's context: OpenAI's code, llama.cpp's type, or one of
// the messages of overflowMessages in an error response (any HTTP error
// status: Ollama reports some as 500) or an error object sent in a stream.
func contextOverflow(e *Error) bool {
	if e.Code == codeContextLength || e.Type == typeContextSize {
		return true
	}
	if e.StatusCode != 0 && e.StatusCode < http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(e.Message)
	for _, m := range overflowMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// maxMessage bounds the part of a non-JSON error body kept in Message.
const maxMessage = 200

// classify turns the error of one attempt into an *Error (Retries unset).
func (p *Provider) classify(err error, att *attempt) *Error {
	e := &Error{Err: p.redactErr(err)}
	var (
		reqErr  *goopenai.RequestError
		apiErr  *goopenai.APIError
		bodyErr *retry.BodyError
	)
	if errors.As(err, &bodyErr) {
		// A success status with a body that is not the API's (a proxy's
		// HTML page): the same request gets the same page again.
		e.StatusCode, e.Message = bodyErr.StatusCode, bodyErr.Error()
		return e
	}
	// A RequestError (non-JSON or odd error body) may wrap a partly decoded
	// APIError without status, so look at it first.
	if errors.As(err, &reqErr) {
		e.StatusCode = reqErr.HTTPStatusCode
		e.Message = bodySnippet(reqErr.Body, p.apiKey)
	}
	if errors.As(err, &apiErr) {
		if e.StatusCode == 0 {
			e.StatusCode = apiErr.HTTPStatusCode
		}
		e.Type = apiErr.Type
		e.Code = codeString(apiErr.Code)
		if apiErr.Message != "" {
			e.Message = apiErr.Message
		}
	}
	if e.StatusCode == 0 && reqErr == nil && apiErr == nil {
		// The error body could not be read: keep the status the transport saw.
		if st := att.statusCode(); st >= http.StatusBadRequest {
			e.StatusCode = st
		}
	}
	if e.Message == "" && e.StatusCode > 0 && reqErr != nil {
		e.Message = http.StatusText(e.StatusCode)
	}
	e.Message = redact(e.Message, p.apiKey)
	e.Type = redact(e.Type, p.apiKey)
	e.Code = redact(e.Code, p.apiKey)

	overflow := contextOverflow(e)
	if overflow {
		e.Err = fmt.Errorf("%w: %w", provider.ErrContextOverflow, e.Err)
	}

	switch {
	case e.StatusCode > 0:
		e.Retryable = e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
	case apiErr != nil:
		e.Retryable = false // an error object sent inside a stream
	case errors.Is(err, errTruncated):
		e.Retryable = true
	default:
		e.Retryable = isConnError(err)
	}
	if overflow {
		e.Retryable = false // the same request overflows again
	}
	return e
}

// bodySnippet returns the start of an error body on one line, with secret
// redacted before it is cut.
func bodySnippet(body []byte, secret string) string { return retry.Snippet(body, maxMessage, secret) }

// codeString renders the "code" of an error object, a string or a number.
// go-openai decodes "code": null as the number 0, so 0 means no code.
func codeString(code any) string {
	switch c := code.(type) {
	case nil:
		return ""
	case int:
		if c == 0 {
			return ""
		}
		return strconv.Itoa(c)
	case string:
		return c
	default:
		return fmt.Sprint(c)
	}
}

// isConnError reports whether err is a transient connection failure.
func isConnError(err error) bool { return retry.IsConnError(err) }
