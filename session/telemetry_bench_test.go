package session_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/session"
)

// BenchmarkTurnTelemetry is BenchmarkTurn with telemetry on: every span
// kept by an in-memory recorder, the metrics by a manual reader (compare
// with BenchmarkTurn, telemetry off).
func BenchmarkTurnTelemetry(b *testing.B) {
	ctx := context.Background()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	s, err := session.New(ctx, session.Config{Provider: instant{}, Store: memstore.New(), MaxQueue: 1 << 30, TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for b.Loop() {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		<-h.Finished()
	}
}
