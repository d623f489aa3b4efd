package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// instrumentation is the name of the tracer and the meter of sessions.
const instrumentation = "github.com/sessionkit/sessionkit/session"

// CompactionSpanName is the name of the span of a compaction: the
// OpenTelemetry GenAI conventions name no compaction operation yet, so the
// span takes the name of its own operation, as invoke_agent, chat and
// execute_tool do, and its attributes the gen_ai.compaction.* prefix.
const CompactionSpanName = "compaction"

// The GenAI attributes the session's telemetry sets (OpenTelemetry
// semantic conventions for generative AI, in development).
var (
	keyOperation   = attribute.Key("gen_ai.operation.name")
	keyProvider    = attribute.Key("gen_ai.provider.name")
	keyModel       = attribute.Key("gen_ai.request.model")
	keyRespModel   = attribute.Key("gen_ai.response.model")
	keyConv        = attribute.Key("gen_ai.conversation.id")
	keyIn          = attribute.Key("gen_ai.usage.input_tokens")
	keyOut         = attribute.Key("gen_ai.usage.output_tokens")
	keyCacheRead   = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	keyCacheWrite  = attribute.Key("gen_ai.usage.cache_write.input_tokens")
	keyTokenType   = attribute.Key("gen_ai.token.type")
	keyToolName    = attribute.Key("gen_ai.tool.name")
	keyToolCallID  = attribute.Key("gen_ai.tool.call.id")
	keyErrorType   = attribute.Key("error.type")
	keyTrigger     = attribute.Key("gen_ai.compaction.trigger")
	keyArchived    = attribute.Key("gen_ai.compaction.messages_archived")
	keyCtxBefore   = attribute.Key("gen_ai.compaction.context_before")
	keyCtxAfter    = attribute.Key("gen_ai.compaction.context_after")
	keyFidelity    = attribute.Key("gen_ai.compaction.fidelity")
	keyCompactID   = attribute.Key("gen_ai.compaction.id")
	keyCompactDone = attribute.Key("gen_ai.compaction.outcome")
)

// telemetry is a session's traces and metrics; nil when Config has neither
// a TracerProvider nor a MeterProvider, and then nothing is measured.
type telemetry struct {
	tracer   trace.Tracer            // nil without a TracerProvider
	tokens   metric.Int64Histogram   // nil without a MeterProvider
	duration metric.Float64Histogram // nil without a MeterProvider
	conv     attribute.KeyValue

	mu  sync.Mutex
	ops map[opKey]*opAttrs // built once each: see op
}

// opKey names an operation on one provider and model.
type opKey struct{ op, provider, model, tool string }

// opAttrs are what every span and measurement of one operation on one
// provider and model share, built once (attribute sets sort and hash,
// options allocate): the span's name and start options, and the metrics'
// record options.
type opAttrs struct {
	name   string
	attrs  []attribute.KeyValue // the metrics' attributes (no conversation ID)
	start  []trace.SpanStartOption
	input  []metric.RecordOption // gen_ai.client.token.usage, input tokens
	output []metric.RecordOption // and output tokens
	dur    []metric.RecordOption // gen_ai.client.operation.duration
}

// maxOps bounds how many operations a session keeps the attributes of (a
// session that switches among more models builds the rest each time).
const maxOps = 64

// op returns the attributes of operation op (chat, invoke_agent,
// execute_tool) on provider prov and model, or of tool: built on first
// use and kept, so that a span and its measurements allocate no options.
func (t *telemetry) op(op, prov, model, tool string, kind trace.SpanKind) *opAttrs {
	k := opKey{op, prov, model, tool}
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.ops[k]; a != nil {
		return a
	}
	var attrs []attribute.KeyValue
	name := op
	if tool != "" {
		attrs = []attribute.KeyValue{keyOperation.String(op), keyToolName.String(tool)}
		name += " " + tool
	} else {
		attrs = []attribute.KeyValue{keyOperation.String(op), keyProvider.String(prov), keyModel.String(model)}
		if op == "chat" && model != "" {
			name += " " + model
		}
	}
	a := &opAttrs{name: name, attrs: attrs,
		start: []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(append(attrs[:len(attrs):len(attrs)], t.conv)...)}}
	if t.tokens != nil {
		a.input = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(attrs[:len(attrs):len(attrs)], keyTokenType.String("input"))...))}
		a.output = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(append(attrs[:len(attrs):len(attrs)], keyTokenType.String("output"))...))}
	}
	if t.duration != nil {
		a.dur = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
	}
	if len(t.ops) < maxOps {
		if t.ops == nil {
			t.ops = make(map[opKey]*opAttrs)
		}
		t.ops[k] = a
	}
	return a
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, id string) *telemetry {
	if tp == nil && mp == nil {
		return nil
	}
	t := &telemetry{conv: keyConv.String(id)}
	if tp != nil {
		t.tracer = tp.Tracer(instrumentation)
	}
	if mp != nil {
		m := mp.Meter(instrumentation)
		// Errors only say the instrument is not usable; a nil one records
		// nothing.
		t.tokens, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used"),
			metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
		t.duration, _ = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration"),
			metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	}
	return t
}

// start starts a span named name under ctx; without a tracer it returns
// ctx and the span of ctx (a no-op one), allocating nothing.
func (t *telemetry) start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// startOp starts the span of operation a under ctx (see start).
func (t *telemetry) startOp(ctx context.Context, a *opAttrs) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, a.name, a.start...)
}

// startTurn starts the invoke_agent span of a turn on provider prov and
// model.
func (t *telemetry) startTurn(ctx context.Context, prov, model string) (context.Context, trace.Span) {
	return t.startOp(ctx, t.op("invoke_agent", prov, model, "", trace.SpanKindInternal))
}

// chat is one provider request as telemetry sees it: its span (a child of
// the turn's or the compaction's) and its start, for the metrics.
type chat struct {
	t     *telemetry
	span  trace.Span
	a     *opAttrs
	began time.Time
	usage [5]attribute.KeyValue // the end's span attributes, here to allocate nothing more
}

// startChat starts the span of one provider request for purpose.
func (t *telemetry) startChat(ctx context.Context, info provider.Info, model string) (context.Context, *chat) {
	if t == nil {
		return ctx, nil
	}
	if model == "" {
		model = info.Model
	}
	a := t.op("chat", info.Name, model, "", trace.SpanKindClient)
	ctx, span := t.startOp(ctx, a)
	return ctx, &chat{t: t, span: span, a: a, began: time.Now()}
}

// retried records a retry of the request as an event of its span, as the
// conventions record retries of one operation.
func (c *chat) retried(r provider.Retry) {
	if c == nil || !c.span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int("retry", r.Retry), attribute.Bool("rate_limited", r.RateLimited), attribute.String("wait", r.Wait.String())}
	if r.Err != nil {
		attrs = append(attrs, keyErrorType.String(errorType(r.Err)))
	}
	c.span.AddEvent("gen_ai.client.retry", trace.WithAttributes(attrs...))
}

// end ends the request: the usage it reported (rec, nil when it failed
// without a response) or its error, on the span and in the metrics.
func (c *chat) end(rec *history.UsageRecord, respModel string, err error) {
	if c == nil {
		return
	}
	ctx := context.Background()
	dur := c.a.dur
	if err != nil {
		// Rare: the error's attributes are built for it.
		attrs := append(c.a.attrs[:len(c.a.attrs):len(c.a.attrs)], keyErrorType.String(errorType(err)))
		dur = []metric.RecordOption{metric.WithAttributes(attrs...)}
		if c.span.IsRecording() {
			c.span.RecordError(err)
			c.span.SetStatus(codes.Error, errorType(err))
		}
	}
	if rec != nil {
		if c.span.IsRecording() {
			c.usage = [5]attribute.KeyValue{keyIn.Int(rec.InputTokens), keyOut.Int(rec.OutputTokens),
				keyCacheRead.Int(rec.CacheReadTokens), keyCacheWrite.Int(rec.CacheWriteTokens)}
			n := 4
			if respModel != "" {
				c.usage[4] = keyRespModel.String(respModel)
				n = 5
			}
			c.span.SetAttributes(c.usage[:n]...)
		}
		if c.t.tokens != nil {
			c.t.tokens.Record(ctx, int64(rec.InputTokens), c.a.input...)
			c.t.tokens.Record(ctx, int64(rec.OutputTokens), c.a.output...)
		}
	}
	if c.t.duration != nil {
		c.t.duration.Record(ctx, time.Since(c.began).Seconds(), dur...)
	}
	c.span.End()
}

// errorType is the low-cardinality error.type of err.
func errorType(err error) string {
	switch {
	case err == nil:
		return ""
	case isCancel(err):
		return "cancelled"
	}
	return "error"
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, ErrCancelled) || errors.Is(err, ErrClosed)
}

// startTool starts the execute_tool span of tool call tc; nil without
// a tracer.
func (t *telemetry) startTool(ctx context.Context, tc history.ToolCall) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, nil
	}
	ctx, span := t.startOp(ctx, t.op("execute_tool", "", "", tc.Name, trace.SpanKindInternal))
	span.SetAttributes(keyToolCallID.String(tc.ID))
	return ctx, span
}

// endTool ends the span of a tool call whose result is text (nil span: no
// telemetry); a result that reports an error sets the error status.
func endTool(span trace.Span, text string) {
	if span == nil {
		return
	}
	if history.ToolFailed(text) {
		span.SetAttributes(keyErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
	span.End()
}

// endSpan ends span with err's status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, errorType(err))
	}
	span.End()
}
