package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	internaloptions "github.com/sessionkit/sessionkit/internal/options"
	"github.com/sessionkit/sessionkit/internal/retry"
	"github.com/sessionkit/sessionkit/provider"
)

// Defaults of [New] and [FromEnv].
const (
	// DefaultMaxRetries is the number of retries when [WithMaxRetries] is not
	// given.
	DefaultMaxRetries = 3
	// DefaultBackoffBase is the first backoff delay when [WithBackoff] is not
	// given.
	DefaultBackoffBase = 500 * time.Millisecond
	// DefaultBackoffMax is the largest backoff delay when [WithBackoff] is not
	// given.
	DefaultBackoffMax = 8 * time.Second
	// DefaultMaxTokens is the max_tokens sent when neither the request nor
	// [WithMaxTokens] gives one (the Messages API requires it).
	DefaultMaxTokens = 8192
	// DefaultEnvModel is the model [FromEnv] uses when SESSIONKIT_MODEL is
	// unset or empty.
	DefaultEnvModel = "claude-sonnet-5-5"
	// MaxRetryAfter caps the wait a retry-after header can ask for.
	MaxRetryAfter = 60 * time.Second
	// DefaultTimeout bounds each attempt when [WithTimeout] is not given.
	DefaultTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds the wait for each byte of a response when
	// [WithIdleTimeout] is not given.
	DefaultIdleTimeout = 2 * time.Minute
)

// ErrConfig is wrapped by the errors [New] and [FromEnv] return for an
// invalid configuration.
var ErrConfig = errors.New("anthropic: invalid configuration")

// Option configures a [Provider]; see [New].
type Option func(*options)

type options struct {
	baseURL     string
	apiKey      string
	model       string
	maxTokens   int
	httpClient  *http.Client
	maxRetries  int
	backoffBase time.Duration
	backoffMax  time.Duration
	noCache     bool
	logger      *zap.Logger
	timeout     time.Duration
	idleTimeout time.Duration
	thinking    int // WithThinkingBudget; 0 = off
}

// WithBaseURL sets the API base URL, for example "http://localhost:8080"
// or, the same server, "http://localhost:8080/v1" (a final "/v1" is
// removed: requests go to its /v1/messages). The default is Anthropic's
// "https://api.anthropic.com".
func WithBaseURL(url string) Option { return func(o *options) { o.baseURL = url } }

// WithAPIKey sets the API key, sent the way the official SDK sends it. It is
// required. The key never appears in errors or logs.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithModel sets the model name sent with every request, for example
// "claude-sonnet-5-5". It is required.
func WithModel(model string) Option { return func(o *options) { o.model = model } }

// WithMaxTokens sets the max_tokens of requests that give none
// (Request.MaxTokens 0). It must be positive; the default is
// [DefaultMaxTokens].
func WithMaxTokens(n int) Option { return func(o *options) { o.maxTokens = n } }

// WithHTTPClient sets the HTTP client; nil means a new default client. The
// client's own timeout, if any, bounds every attempt.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithMaxRetries sets the number of retries after a transient failure
// (429, 5xx, 529 overloaded, a connection error: see the package
// documentation, section Retries); 0 means none, a negative number is a
// configuration error. Without it, [DefaultMaxRetries].
func WithMaxRetries(n int) Option { return func(o *options) { o.maxRetries = n } }

// WithBackoff sets the wait before retry n (from 0) when the server sends
// no retry-after: base·2ⁿ, at most max, less a random part of up to half of
// it. base must be positive and max no less than base; without it,
// [DefaultBackoffBase] and [DefaultBackoffMax].
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) { o.backoffBase, o.backoffMax = base, max }
}

// WithPromptCaching turns the cache_control breakpoints on (the default) or
// off (see the package documentation, section Prompt caching).
func WithPromptCaching(on bool) Option { return func(o *options) { o.noCache = !on } }

// WithLogger sets where retries (warnings) and failures (debug) are
// logged; without it nothing is.
func WithLogger(l *zap.Logger) Option { return func(o *options) { o.logger = l } }

// WithTimeout bounds each attempt of a request, from sending it to the last
// byte of the response (a long stream included). An attempt that takes
// longer fails with a retryable [*Error] that names the limit (it wraps a
// timeout error: errors.As finds a net.Error whose Timeout is true). 0
// means no limit; negative is a configuration error. The default is
// [DefaultTimeout].
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithIdleTimeout bounds the wait for each byte of a response: an attempt
// whose server sends nothing (no response headers, or no byte of the body
// or stream; the API's ping events count) for d fails with a retryable
// [*Error] that names the limit. A server that accepts the connection and
// never answers is found after d. 0 means no limit; negative is a
// configuration error. The default is [DefaultIdleTimeout].
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// MinThinkingBudget is the smallest thinking budget the API takes.
const MinThinkingBudget = 1024

// WithThinkingBudget turns extended thinking on for turn requests, with
// at most n tokens of reasoning per response (thinking.budget_tokens): the
// model's reasoning is reported as thoughts as it streams
// (provider.ReportThought) and kept, with its signature, in the
// message's Thoughts, which later requests send back before the
// message's text and tool calls, as the API requires within a turn of
// tool use. Summary requests never think. 0 (the default) is off; a
// budget below [MinThinkingBudget] or not below the max tokens
// ([WithMaxTokens]) is a configuration error. A request whose own
// MaxTokens is not above n is sent without thinking, and so is the rest
// of a turn of tool use whose last assistant message has no signed
// thinking (begun without a budget, or by another provider): the API
// refuses thinking there.
func WithThinkingBudget(n int) Option { return func(o *options) { o.thinking = n } }

// Provider is a [provider.Provider] for Anthropic's Messages API. It is safe
// for concurrent use.
type Provider struct {
	client sdk.Client
	o      options // as given to New, checked
	log    *zap.Logger
	limits retry.Limits

	// sleep and jitter are the backoff's wait and its randomness; tests
	// replace them.
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(n time.Duration) time.Duration
}

var _ provider.Provider = (*Provider)(nil)

// check returns what makes o invalid, or nil.
func (o *options) check() error {
	var problem string
	switch {
	case o.apiKey == "":
		problem = "an API key is required (WithAPIKey)"
	case strings.TrimSpace(o.apiKey) == "":
		problem = "the API key is blank (only white space)"
	case o.model == "":
		problem = "a model is required (WithModel)"
	case o.baseURL != "" && internaloptions.BaseURLProblem(o.baseURL) != "":
		problem = fmt.Sprintf("base URL %q %s", o.baseURL, internaloptions.BaseURLProblem(o.baseURL))
	case o.maxTokens <= 0:
		problem = fmt.Sprintf("max tokens %d is not positive", o.maxTokens)
	case o.maxRetries < 0:
		problem = fmt.Sprintf("max retries %d is negative", o.maxRetries)
	case o.backoffBase <= 0, o.backoffMax < o.backoffBase:
		problem = fmt.Sprintf("backoff base %v must be positive and max %v at least base", o.backoffBase, o.backoffMax)
	case o.timeout < 0:
		problem = fmt.Sprintf("timeout %v is negative (0 means no limit)", o.timeout)
	case o.idleTimeout < 0:
		problem = fmt.Sprintf("idle timeout %v is negative (0 means no limit)", o.idleTimeout)
	case o.thinking != 0 && o.thinking < MinThinkingBudget:
		problem = fmt.Sprintf("thinking budget %d is below the API's minimum of %d tokens (0 turns thinking off)", o.thinking, MinThinkingBudget)
	case o.thinking >= o.maxTokens:
		problem = fmt.Sprintf("thinking budget %d is not below max tokens %d (WithMaxTokens)", o.thinking, o.maxTokens)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrConfig, problem)
}

// apply returns the defaults with opts applied.
func apply(opts []Option) options {
	return internaloptions.Apply(options{maxTokens: DefaultMaxTokens, maxRetries: DefaultMaxRetries, backoffBase: DefaultBackoffBase, backoffMax: DefaultBackoffMax, timeout: DefaultTimeout, idleTimeout: DefaultIdleTimeout}, opts)
}

// normalizeBaseURL removes a final "/v1" path from a base URL (the SDK
// adds it to every request), so that "http://localhost:8080/v1" and
// "http://localhost:8080" are the same server, as they are for
// provider/openai.
func normalizeBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if p := strings.TrimSuffix(u.Path, "/"); strings.HasSuffix(p, "/v1") {
		u.Path = strings.TrimSuffix(p, "/v1")
		return u.String()
	}
	return raw
}

// New returns a provider configured by opts. It returns an error wrapping
// [ErrConfig] when no API key or model is given, when the base URL is not an
// absolute http or https URL, when max tokens is not
// positive, when max retries is negative or the backoff invalid. New makes
// no request and reads no environment variable (see [FromEnv]).
func New(opts ...Option) (*Provider, error) {
	o := apply(opts)
	if err := o.check(); err != nil {
		return nil, err
	}
	// A shallow copy whose transport enforces the time limits of each
	// attempt and refuses success bodies that are not the API's.
	var hc http.Client
	if o.httpClient != nil {
		hc = *o.httpClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &retry.Transport{Base: base, Secret: o.apiKey, Limit: maxMessage}
	sdkOpts := []option.RequestOption{
		// The SDK reads no environment variable and no profile on disk:
		// the options here are the whole configuration.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(o.apiKey),
		option.WithHTTPClient(&hc),
		// Retries are made here, where it is known whether a delta has
		// reached the caller (the SDK would retry a stream it cannot see).
		option.WithMaxRetries(0),
	}
	if o.baseURL != "" {
		sdkOpts = append(sdkOpts, option.WithBaseURL(normalizeBaseURL(o.baseURL)))
	}
	log := o.logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Provider{
		client: sdk.NewClient(sdkOpts...),
		o:      o,
		log:    log.With(zap.String("provider", "anthropic"), zap.String("model", o.model)),
		limits: retry.Limits{
			Request: o.timeout, RequestName: "anthropic request timeout (WithTimeout)",
			Idle: o.idleTimeout, IdleName: "anthropic idle timeout (WithIdleTimeout)",
		},
		sleep:  retry.Sleep,
		jitter: retry.Jitter,
	}, nil
}

// FromEnv returns a provider configured from the environment:
// ANTHROPIC_API_KEY (API key, required), ANTHROPIC_BASE_URL (base URL) and
// SESSIONKIT_MODEL (model, default [DefaultEnvModel] when unset or empty).
// Options in opts are applied after the environment, so they override it.
// Without a key it returns an error wrapping [ErrConfig] that says to set
// ANTHROPIC_API_KEY, and for a malformed ANTHROPIC_BASE_URL one that names
// the variable; other errors are those of [New].
func FromEnv(opts ...Option) (*Provider, error) {
	env := []Option{WithModel(internaloptions.EnvModel(DefaultEnvModel))}
	if v := os.Getenv("ANTHROPIC_BASE_URL"); v != "" {
		if problem := internaloptions.BaseURLProblem(v); problem != "" {
			return nil, fmt.Errorf("%w: ANTHROPIC_BASE_URL %q %s", ErrConfig, v, problem)
		}
		env = append(env, WithBaseURL(v))
	}
	if v := os.Getenv("ANTHROPIC_API_KEY"); v != "" {
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: ANTHROPIC_API_KEY is blank (only white space): set the key, or unset the variable", ErrConfig)
		}
		env = append(env, WithAPIKey(v))
	}
	if apply(append(env, opts...)).apiKey == "" {
		return nil, fmt.Errorf("%w: no API key: set ANTHROPIC_API_KEY", ErrConfig)
	}
	return New(append(env, opts...)...)
}

// Model returns the model name the provider sends.
func (p *Provider) Model() string { return p.o.model }

// Complete sends req as one Messages API request, streamed when onDelta is
// non-nil, and returns the assistant message with the usage the server
// reported. Message.ID and CreatedAt are left for the caller to assign.
//
// The request is built as described in the package documentation (sections
// Requests and Prompt caching). Transient failures are retried as described
// in section Retries. Every failure is returned as an [*Error]; when ctx is
// done the error wraps ctx.Err(), and a request longer than the model's
// context wraps [provider.ErrContextOverflow].
func (p *Provider) Complete(ctx context.Context, req *provider.Request, onDelta func(text string)) (*provider.Response, error) {
	if req == nil {
		return nil, p.failure(errors.New("nil request"))
	}
	params, err := p.buildParams(req)
	if err != nil {
		return nil, p.failure(err)
	}
	var resp *provider.Response
	err = p.policy().Run(ctx, func(ctx context.Context, retries int) (bool, retry.Verdict) {
		actx, watch := retry.Start(ctx, p.limits)
		defer watch.Stop()
		var (
			delivered bool
			err       error
		)
		if onDelta != nil {
			resp, delivered, err = p.stream(actx, params, onDelta)
		} else {
			resp, err = p.complete(actx, params)
		}
		if err == nil {
			return true, retry.Verdict{}
		}
		e := p.classify(err)
		if te := watch.Err(); te != nil && ctx.Err() == nil {
			e = &Error{Err: te, Retryable: true, retryAfter: -1}
		}
		e.Retries = retries
		return false, retry.Verdict{Err: e, Retryable: e.Retryable, Delivered: delivered, RetryAfter: e.retryAfter}
	}, func(retries int) error { return p.cancelled(ctx, retries) })
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// policy returns the retry policy of one request.
func (p *Provider) policy() *retry.Policy {
	backoff := func(n int) time.Duration { return retry.Backoff(p.o.backoffBase, p.o.backoffMax, n, p.jitter) }
	return &retry.Policy{MaxRetries: p.o.maxRetries, Backoff: backoff, Sleep: p.sleep, Log: p.log, OnRetry: p.reportRetry}
}

// reportRetry reports a retry to the caller (provider.ReportRetry).
func (p *Provider) reportRetry(ctx context.Context, n int, wait time.Duration, err error) {
	var e *Error
	limited := errors.As(err, &e) && (e.StatusCode == http.StatusTooManyRequests || e.StatusCode == 529 || e.Type == "rate_limit_error" || e.Type == "overloaded_error")
	provider.ReportRetry(ctx, provider.Retry{Retry: n, MaxRetries: p.o.maxRetries, Wait: wait, RateLimited: limited, Err: err})
}

// complete makes one non-streaming attempt.
func (p *Provider) complete(ctx context.Context, params sdk.MessageNewParams) (*provider.Response, error) {
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return nil, err
	}
	out := history.Message{Role: history.RoleAssistant}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Text += b.Text
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, history.ToolCall{ID: b.ID, Name: b.Name, Arguments: toolArgs(b.Input)})
		case "thinking":
			out.Thoughts = append(out.Thoughts, history.Thought{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			out.Thoughts = append(out.Thoughts, history.Thought{Redacted: b.Data})
		}
	}
	return &provider.Response{
		Message: out,
		Usage:   usageOf(msg.Usage.InputTokens, msg.Usage.CacheCreationInputTokens, msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens),
	}, nil
}

// usageOf maps the Messages API's usage: input_tokens counts only the input
// after the last cache breakpoint, so InputTokens adds the tokens written to
// the cache (cache_creation_input_tokens) and read from it
// (cache_read_input_tokens), which are also reported on their own.
func usageOf(input, cacheWrite, cacheRead, output int64) provider.Usage {
	return provider.Usage{
		InputTokens:      int(input + cacheWrite + cacheRead),
		OutputTokens:     int(output),
		CacheReadTokens:  int(cacheRead),
		CacheWriteTokens: int(cacheWrite),
	}
}

// Info implements provider.Describer: name "anthropic" and the model it
// sends.
func (p *Provider) Info() provider.Info { return provider.Info{Name: "anthropic", Model: p.o.model} }

var _ provider.Describer = (*Provider)(nil)
