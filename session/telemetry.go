package session

import (
	"context"
	"errors"
	"strings"
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

// chat is one provider request as telemetry sees it: its span (a child of
// the turn's or the compaction's) and its start, for the metrics.
type chat struct {
	t     *telemetry
	span  trace.Span
	attrs []attribute.KeyValue
	began time.Time
}

// startChat starts the span of one provider request for purpose.
func (t *telemetry) startChat(ctx context.Context, info provider.Info, model string) (context.Context, *chat) {
	if t == nil {
		return ctx, nil
	}
	if model == "" {
		model = info.Model
	}
	attrs := []attribute.KeyValue{keyOperation.String("chat"), keyProvider.String(info.Name), keyModel.String(model)}
	name := "chat"
	if model != "" {
		name += " " + model
	}
	ctx, span := t.start(ctx, name, trace.SpanKindClient, append(attrs, t.conv)...)
	return ctx, &chat{t: t, span: span, attrs: attrs, began: time.Now()}
}

// retried records a retry of the request as an event of its span, as the
// conventions record retries of one operation.
func (c *chat) retried(r provider.Retry) {
	if c == nil {
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
	attrs := c.attrs
	if err != nil {
		attrs = append(attrs[:len(attrs):len(attrs)], keyErrorType.String(errorType(err)))
		c.span.RecordError(err)
		c.span.SetStatus(codes.Error, errorType(err))
	}
	if rec != nil {
		c.span.SetAttributes(keyIn.Int(rec.InputTokens), keyOut.Int(rec.OutputTokens),
			keyCacheRead.Int(rec.CacheReadTokens), keyCacheWrite.Int(rec.CacheWriteTokens))
		if respModel != "" {
			c.span.SetAttributes(keyRespModel.String(respModel))
		}
		if c.t.tokens != nil {
			c.t.tokens.Record(ctx, int64(rec.InputTokens), metric.WithAttributes(append(attrs[:len(attrs):len(attrs)], keyTokenType.String("input"))...))
			c.t.tokens.Record(ctx, int64(rec.OutputTokens), metric.WithAttributes(append(attrs[:len(attrs):len(attrs)], keyTokenType.String("output"))...))
		}
	}
	if c.t.duration != nil {
		c.t.duration.Record(ctx, time.Since(c.began).Seconds(), metric.WithAttributes(attrs...))
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
	return t.start(ctx, "execute_tool "+tc.Name, trace.SpanKindInternal,
		keyOperation.String("execute_tool"), keyToolName.String(tc.Name), keyToolCallID.String(tc.ID), t.conv)
}

// endTool ends the span of a tool call whose result is text (nil span: no
// telemetry); a result that reports an error sets the error status.
func endTool(span trace.Span, text string) {
	if span == nil {
		return
	}
	if strings.HasPrefix(text, "error:") {
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
