package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	internaloptions "github.com/sessionkit/sessionkit/internal/options"
	"github.com/sessionkit/sessionkit/internal/retry"
	"github.com/sessionkit/sessionkit/provider"
)

// Defaults of [New].
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
	// DefaultEnvModel is the model [FromEnv] uses when SESSIONKIT_MODEL is
	// unset or empty.
	DefaultEnvModel = "gpt-4o-mini"
	// MaxRetryAfter caps the wait a Retry-After header can ask for.
	MaxRetryAfter = 60 * time.Second
	// DefaultTimeout bounds each attempt when [WithTimeout] is not given.
	DefaultTimeout = 10 * time.Minute
	// DefaultIdleTimeout bounds the wait for each byte of a response when
	// [WithIdleTimeout] is not given.
	DefaultIdleTimeout = 2 * time.Minute
)

// ErrConfig is wrapped by the errors [New] and [FromEnv] return for an
// invalid configuration.
var ErrConfig = errors.New("openai: invalid configuration")

// Option configures a [Provider]; see [New].
type Option func(*options)

type options struct {
	baseURL     string
	apiKey      string
	model       string
	httpClient  *http.Client
	maxRetries  int
	backoffBase time.Duration
	backoffMax  time.Duration
	temperature *float32
	logger      *zap.Logger
	timeout     time.Duration
	idleTimeout time.Duration
	noImages    bool
	embedModel  string
}

// WithImages says whether the model behind the endpoint reads images
// (default true). With false the provider is no [provider.ImageTaker] that
// takes any: a session refuses a prompt with an image, and an ACP agent
// does not advertise images, instead of the server failing the request.
// Use it for an OpenAI-compatible server whose model reads text only.
func WithImages(on bool) Option { return func(o *options) { o.noImages = !on } }

// WithEmbeddingModel sets the model of [Provider.Embed] (for example
// "text-embedding-3-small", or "nomic-embed-text" on Ollama); without it
// Embed fails. The chat model ([WithModel]) is not used for embeddings.
func WithEmbeddingModel(model string) Option { return func(o *options) { o.embedModel = model } }

// WithBaseURL sets the API base URL, up to and including the version path,
// for example "http://localhost:8080/v1". A URL without a path gets "/v1"
// ("http://localhost:8080" is the same as "http://localhost:8080/v1");
// one with another path, for example "https://host/openai/v2", is used as
// it is. The default is OpenAI's "https://api.openai.com/v1".
func WithBaseURL(url string) Option { return func(o *options) { o.baseURL = url } }

// WithAPIKey sets the key sent as a bearer token. Without a key no
// Authorization header is sent (local servers often need none). The key never
// appears in errors or logs.
func WithAPIKey(key string) Option { return func(o *options) { o.apiKey = key } }

// WithModel sets the model name sent with every request. It is required.
func WithModel(model string) Option { return func(o *options) { o.model = model } }

// WithHTTPClient sets the HTTP client. The provider uses a shallow copy whose
// transport is wrapped to read Retry-After headers; the client passed in is
// not modified. nil means a new default client.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithMaxRetries sets how many times a failed attempt may be retried (see
// the package documentation, section Retries). 0 disables retries; negative
// values are a configuration error. The default is [DefaultMaxRetries].
func WithMaxRetries(n int) Option { return func(o *options) { o.maxRetries = n } }

// WithBackoff sets the exponential backoff between retries: the n-th retry
// waits about base·2ⁿ, capped at max, with random jitter of up to half the
// delay removed. base must be positive and max at least base. The defaults
// are [DefaultBackoffBase] and [DefaultBackoffMax].
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) { o.backoffBase, o.backoffMax = base, max }
}

// WithTemperature sets the sampling temperature; negative values are a
// configuration error. 0 is sent as [math.SmallestNonzeroFloat32] because
// go-openai drops a zero temperature from the request (see the package
// documentation, section Temperature). Without this option no temperature is
// sent.
func WithTemperature(t float32) Option { return func(o *options) { o.temperature = &t } }

// WithLogger sets the logger for retries and failures. The default discards
// everything.
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
// or stream) for d fails with a retryable [*Error] that names the limit. A
// server that accepts the connection and never answers is found after d. 0
// means no limit; negative is a configuration error. The default is
// [DefaultIdleTimeout].
func WithIdleTimeout(d time.Duration) Option { return func(o *options) { o.idleTimeout = d } }

// Provider is a [provider.Provider] for an OpenAI-compatible Chat Completions
// endpoint. It is safe for concurrent use.
type Provider struct {
	client      *goopenai.Client
	model       string
	apiKey      string
	maxRetries  int
	backoffBase time.Duration
	backoffMax  time.Duration
	temperature *float32
	noImages    bool
	embedModel  string
	log         *zap.Logger
	limits      retry.Limits

	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter returns a random duration in [0, n]; tests may replace it.
	jitter func(n time.Duration) time.Duration
}

var _ provider.Provider = (*Provider)(nil)

// apply returns the defaults with opts applied.
func apply(opts []Option) options {
	return internaloptions.Apply(options{maxRetries: DefaultMaxRetries, backoffBase: DefaultBackoffBase, backoffMax: DefaultBackoffMax, timeout: DefaultTimeout, idleTimeout: DefaultIdleTimeout}, opts)
}

// checkBaseURL reports a base URL that is not an absolute http or https URL
// with a host, so that a typo fails here and not at the first request.
func checkBaseURL(raw string) error {
	if problem := internaloptions.BaseURLProblem(raw); problem != "" {
		return fmt.Errorf("%w: base URL %q %s", ErrConfig, raw, problem)
	}
	return nil
}

// normalizeBaseURL adds the "/v1" path to a base URL that has no path
// ("http://localhost:8080" and "http://localhost:8080/v1" are the same
// server), so that both forms work, as they do for provider/anthropic. A
// URL with a path is used as it is.
func normalizeBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || strings.Trim(u.Path, "/") != "" {
		return raw
	}
	u.Path = "/v1"
	return u.String()
}

// New returns a provider configured by opts. It returns an error wrapping
// [ErrConfig] when no model is given, when the base URL is not an absolute
// http or https URL, when max retries or temperature is negative, or when
// the backoff is invalid. New makes no request.
func New(opts ...Option) (*Provider, error) {
	o := apply(opts)
	if o.baseURL != "" {
		if err := checkBaseURL(o.baseURL); err != nil {
			return nil, err
		}
	}
	switch {
	case o.model == "":
		return nil, fmt.Errorf("%w: a model is required (WithModel)", ErrConfig)
	case o.maxRetries < 0:
		return nil, fmt.Errorf("%w: max retries %d is negative", ErrConfig, o.maxRetries)
	case o.backoffBase <= 0 || o.backoffMax < o.backoffBase:
		return nil, fmt.Errorf("%w: backoff base %v must be positive and max %v at least base", ErrConfig, o.backoffBase, o.backoffMax)
	case o.temperature != nil && *o.temperature < 0:
		return nil, fmt.Errorf("%w: temperature %v is negative", ErrConfig, *o.temperature)
	case o.timeout < 0:
		return nil, fmt.Errorf("%w: timeout %v is negative (0 means no limit)", ErrConfig, o.timeout)
	case o.idleTimeout < 0:
		return nil, fmt.Errorf("%w: idle timeout %v is negative (0 means no limit)", ErrConfig, o.idleTimeout)
	case o.apiKey != "" && strings.TrimSpace(o.apiKey) == "":
		return nil, fmt.Errorf("%w: the API key is blank (only white space)", ErrConfig)
	}

	cfg := goopenai.DefaultConfig(o.apiKey)
	if o.baseURL != "" {
		cfg.BaseURL = normalizeBaseURL(o.baseURL)
	}
	cfg.HTTPClient = wrapClient(o.httpClient, o.apiKey)

	log := o.logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Provider{
		client:      goopenai.NewClientWithConfig(cfg),
		model:       o.model,
		apiKey:      o.apiKey,
		maxRetries:  o.maxRetries,
		backoffBase: o.backoffBase,
		backoffMax:  o.backoffMax,
		temperature: o.temperature,
		noImages:    o.noImages,
		embedModel:  o.embedModel,
		limits: retry.Limits{
			Request: o.timeout, RequestName: "openai request timeout (WithTimeout)",
			Idle: o.idleTimeout, IdleName: "openai idle timeout (WithIdleTimeout)",
		},
		log:    log.With(zap.String("provider", "openai"), zap.String("model", o.model)),
		sleep:  sleepCtx,
		jitter: randomJitter,
	}, nil
}

// ImagesVar is the variable [FromEnv] reads [WithImages] from: true or
// false (as strconv.ParseBool takes them); unset or empty keeps the default.
const ImagesVar = "SESSIONKIT_OPENAI_IMAGES"

// FromEnv returns a provider configured from the environment: OPENAI_BASE_URL
// (base URL), OPENAI_API_KEY (API key), SESSIONKIT_MODEL (model, default
// [DefaultEnvModel] when unset or empty) and [ImagesVar] ([WithImages]). Options in opts are applied after
// the environment, so they override it.
//
// With neither a key nor a base URL (from the environment or opts) it
// returns an error wrapping [ErrConfig] that says to set OPENAI_API_KEY or
// OPENAI_BASE_URL: without them the first request would go to OpenAI's API
// without credentials. A malformed OPENAI_BASE_URL is an error wrapping
// [ErrConfig] that names the variable. Other errors are those of [New].
func FromEnv(opts ...Option) (*Provider, error) {
	env := []Option{WithModel(internaloptions.EnvModel(DefaultEnvModel))}
	if v := os.Getenv("OPENAI_BASE_URL"); v != "" {
		if err := checkBaseURL(v); err != nil {
			return nil, fmt.Errorf("OPENAI_BASE_URL: %w", err)
		}
		env = append(env, WithBaseURL(v))
	}
	if v := os.Getenv("OPENAI_API_KEY"); v != "" {
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%w: OPENAI_API_KEY is blank (only white space): set the key, or unset the variable", ErrConfig)
		}
		env = append(env, WithAPIKey(v))
	}
	if v := os.Getenv(ImagesVar); v != "" {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%w: %s is %q: give true or false (whether the model reads images)", ErrConfig, ImagesVar, v)
		}
		env = append(env, WithImages(on))
	}
	if o := apply(append(env, opts...)); o.apiKey == "" && o.baseURL == "" {
		return nil, fmt.Errorf("%w: no API key and no base URL: set OPENAI_API_KEY (OpenAI's API) or OPENAI_BASE_URL (another OpenAI-compatible server)", ErrConfig)
	}
	return New(append(env, opts...)...)
}

// Model returns the model name the provider sends.
func (p *Provider) Model() string { return p.model }

// Complete sends req as one Chat Completions request, streamed when onDelta
// is non-nil, and returns the assistant message with the usage the server
// reported. Message.ID and CreatedAt are left for the caller to assign.
//
// The request is built as described in the package documentation (section
// Summary context). Transient failures are retried as described in section
// Retries. Every failure is returned as an [*Error]; when ctx is done the
// error wraps ctx.Err().
func (p *Provider) Complete(ctx context.Context, req *provider.Request, onDelta func(text string)) (*provider.Response, error) {
	if req == nil {
		return nil, p.failure(errors.New("nil request"))
	}
	creq, err := p.buildRequest(req)
	if err != nil {
		return nil, p.failure(err)
	}
	large, err := extractLarge(&creq)
	if err != nil {
		return nil, p.failure(err)
	}
	if large != nil {
		ctx = context.WithValue(ctx, spliceKey{}, large)
	}
	var resp *provider.Response
	err = p.policy().Run(ctx, func(ctx context.Context, retries int) (bool, retry.Verdict) {
		att := &attempt{}
		actx, watch := retry.Start(context.WithValue(ctx, attemptKey{}, att), p.limits)
		defer watch.Stop()
		var (
			delivered bool
			err       error
		)
		if onDelta != nil {
			resp, delivered, err = p.stream(actx, creq, onDelta)
		} else {
			resp, err = p.complete(actx, creq)
		}
		if err == nil {
			return true, retry.Verdict{}
		}
		e := p.classify(err, att)
		if te := watch.Err(); te != nil && ctx.Err() == nil {
			e = &Error{Err: te, Retryable: true}
		}
		e.Retries = retries
		v := retry.Verdict{Err: e, Retryable: e.Retryable, Delivered: delivered, RetryAfter: -1}
		if d, ok := att.retryAfter(); ok {
			v.RetryAfter = d
		}
		return false, v
	}, func(retries int) error { return p.cancelled(ctx, retries) })
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// policy returns the retry policy of one request.
func (p *Provider) policy() *retry.Policy {
	return &retry.Policy{MaxRetries: p.maxRetries, Backoff: p.backoff, Sleep: p.sleep, Log: p.log, OnRetry: p.reportRetry}
}

// reportRetry reports a retry to the caller (provider.ReportRetry).
func (p *Provider) reportRetry(ctx context.Context, n int, wait time.Duration, err error) {
	var e *Error
	limited := errors.As(err, &e) && e.StatusCode == http.StatusTooManyRequests
	provider.ReportRetry(ctx, provider.Retry{Retry: n, MaxRetries: p.maxRetries, Wait: wait, RateLimited: limited, Err: err})
}

// complete makes one non-streaming attempt.
func (p *Provider) complete(ctx context.Context, creq goopenai.ChatCompletionRequest) (*provider.Response, error) {
	resp, err := p.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, errNoChoices
	}
	choice := resp.Choices[0]
	for _, c := range resp.Choices {
		if c.Index == 0 {
			choice = c
			break
		}
	}
	calls := make([]toolCallParts, 0, len(choice.Message.ToolCalls))
	for _, tc := range choice.Message.ToolCalls {
		calls = append(calls, toolCallParts{id: tc.ID, name: tc.Function.Name, args: []byte(tc.Function.Arguments)})
	}
	msg := assistantMessage(choice.Message.Content, calls)
	if r := choice.Message.ReasoningContent; r != "" {
		msg.Thoughts = []history.Thought{{Text: r}}
	}
	return &provider.Response{
		Message: msg,
		Usage:   usageOf(&resp.Usage),
		Model:   resp.Model,
	}, nil
}

// usageOf maps the server's usage. prompt_tokens already counts the cached
// tokens (prompt_tokens_details.cached_tokens is a part of it), so it is
// InputTokens as it is, and cached_tokens is CacheReadTokens. Chat
// Completions reports no cache writes.
func usageOf(u *goopenai.Usage) provider.Usage {
	out := provider.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = u.PromptTokensDetails.CachedTokens
	}
	return out
}

// Info implements provider.Describer: name "openai" and the model it sends.
func (p *Provider) Info() provider.Info { return provider.Info{Name: "openai", Model: p.model} }

var _ provider.Describer = (*Provider)(nil)
