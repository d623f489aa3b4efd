package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

func attrOf(attrs []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestTelemetry_SpansAndMetrics: a turn is an invoke_agent span, each
// provider request a chat {model} span under it with the GenAI usage
// attributes, each tool call an execute_tool {tool} span; a compaction is
// a compaction span whose summary call is its child chat span; the token
// usage and duration metrics are recorded; no text of the conversation is
// in any attribute.
func TestTelemetry_SpansAndMetrics(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })

	fake := providertest.New()
	fake.SetInfo(provider.Info{Name: "fakeprov", Model: "m-conf"})
	s := newSession(t, fake, session.Config{TracerProvider: tp, MeterProvider: mp, Tools: []session.Tool{echoTool()}})
	fake.QueueTurn(
		providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "echo", `{"text":"secret words"}`)}, Usage: provider.Usage{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 40}, Model: "m-resp"},
		providertest.Reply{Text: "done secret", Usage: provider.Usage{InputTokens: 150, OutputTokens: 20}},
	)
	require.NoError(t, wait(t, mustPrompt(t, s, "secret prompt")).Err)
	converse(t, s, fake, 1)
	fake.QueueSummary(providertest.Reply{Text: "secret summary", Usage: provider.Usage{InputTokens: 300, OutputTokens: 30}})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)

	spans := sr.Ended()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
		for _, a := range sp.Attributes() {
			assert.NotContains(t, a.Value.Emit(), "secret", "span %s attribute %s", sp.Name(), a.Key)
		}
	}
	require.Len(t, byName["invoke_agent"], 2)
	turn := byName["invoke_agent"][0]
	chats := byName["chat m-conf"]
	require.Len(t, chats, 4, "three turn steps and the summary call: %v", byName)
	first := chats[0]
	assert.Equal(t, turn.SpanContext().SpanID(), first.Parent().SpanID(), "a turn's request is the turn's child")
	for key, want := range map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "fakeprov", "gen_ai.request.model": "m-conf",
		"gen_ai.response.model": "m-resp", "gen_ai.conversation.id": s.ID(),
		"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(10),
		"gen_ai.usage.cache_read.input_tokens": int64(40), "gen_ai.usage.cache_write.input_tokens": int64(0),
	} {
		v, ok := attrOf(first.Attributes(), key)
		if assert.True(t, ok, key) {
			assert.Equal(t, want, v.AsInterface(), key)
		}
	}
	tools := byName["execute_tool echo"]
	require.Len(t, tools, 1)
	assert.Equal(t, turn.SpanContext().SpanID(), tools[0].Parent().SpanID())
	comps := byName[session.CompactionSpanName]
	require.Len(t, comps, 1)
	comp := comps[0]
	sum := chats[3]
	assert.Equal(t, comp.SpanContext().SpanID(), sum.Parent().SpanID(), "the summary call is the compaction's child")
	for _, key := range []string{"gen_ai.compaction.trigger", "gen_ai.compaction.messages_archived", "gen_ai.compaction.context_before", "gen_ai.compaction.context_after", "gen_ai.compaction.outcome"} {
		_, ok := attrOf(comp.Attributes(), key)
		assert.True(t, ok, key)
	}
	v, _ := attrOf(sum.Attributes(), "gen_ai.usage.input_tokens")
	assert.Equal(t, int64(300), v.AsInt64())

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	found := map[string]bool{}
	var input int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "gen_ai.client.token.usage" {
				for _, dp := range h.DataPoints {
					if tt, _ := dp.Attributes.Value("gen_ai.token.type"); tt.AsString() == "input" {
						input += dp.Sum
					}
				}
			}
		}
	}
	assert.True(t, found["gen_ai.client.token.usage"])
	assert.True(t, found["gen_ai.client.operation.duration"])
	assert.Equal(t, int64(100+150+10+300), input, "every request's input tokens")
}
