package main

// OpenTelemetry export: the agent sends its sessions' traces and metrics
// (session.Config.TracerProvider and MeterProvider) over OTLP/HTTP when
// the standard OTEL_EXPORTER_OTLP_* variables ask for it, and never to
// stdout, which is the ACP channel.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// otelFlushBound is how long the agent waits, when it stops, for the
// spans and metrics it still holds to be sent.
const otelFlushBound = 2 * time.Second

// telemetry is what the agent exports: the providers its sessions use
// (nil for a signal that is not exported) and shutdown, which flushes and
// stops both.
type telemetry struct {
	tracer   trace.TracerProvider
	meter    metric.MeterProvider
	shutdown func(context.Context) error
	where    []string // what is exported where, for the startup log
}

// otlpSignal is the part of the OTLP variables that one signal (traces,
// metrics) reads: its own OTEL_EXPORTER_OTLP_{SIGNAL}_X before the shared
// OTEL_EXPORTER_OTLP_X.
type otlpSignal struct {
	name     string // "traces" or "metrics"
	exporter string // OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER
	prefix   string // OTEL_EXPORTER_OTLP_TRACES_ or _METRICS_
	path     string // the path of the shared endpoint: /v1/traces
}

var (
	tracesSignal  = otlpSignal{"traces", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_", "/v1/traces"}
	metricsSignal = otlpSignal{"metrics", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_", "/v1/metrics"}
)

// lookup returns the value of the signal's own variable for key, else of
// the shared one, and the name of the variable it came from ("" when
// neither is set).
func (s otlpSignal) lookup(getenv func(string) string, key string) (value, name string) {
	if v := getenv(s.prefix + key); v != "" {
		return v, s.prefix + key
	}
	if v := getenv("OTEL_EXPORTER_OTLP_" + key); v != "" {
		return v, "OTEL_EXPORTER_OTLP_" + key
	}
	return "", ""
}

// enabled reports whether the signal is exported: an endpoint variable of
// it is set, or its OTEL_*_EXPORTER is otlp; never when that is none or
// OTEL_SDK_DISABLED is true. A value the agent cannot honour is an error
// that names the variable (console: stdout is the ACP channel).
func (s otlpSignal) enabled(getenv func(string) string) (bool, error) {
	switch v := strings.TrimSpace(getenv(s.exporter)); v {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		endpoint, _ := s.lookup(getenv, "ENDPOINT")
		return endpoint != "", nil
	case "console":
		return false, fmt.Errorf("%s=console: the agent's stdout is the ACP channel; use otlp (with OTEL_EXPORTER_OTLP_ENDPOINT) or none", s.exporter)
	default:
		return false, fmt.Errorf("%s=%q: acp-agent exports otlp or none", s.exporter, v)
	}
}

// check checks the signal's OTLP variables: each that is set must be one
// the exporter honours, or the agent would start without exporting, or
// export where nobody looks. Errors name the variable; a header's value
// and an endpoint's password (credentials, often) are never shown.
func (s otlpSignal) check(getenv func(string) string) error {
	if v, name := s.lookup(getenv, "ENDPOINT"); name != "" {
		u, err := url.Parse(v)
		switch {
		case err != nil:
			return fmt.Errorf("%s: not a URL (%v)", name, redactedParseError(err))
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("%s=%q: not an http:// or https:// URL (OTLP/HTTP, port 4318 by default)", name, u.Redacted())
		case u.Host == "":
			return fmt.Errorf("%s=%q: names no host", name, u.Redacted())
		}
	}
	if v, name := s.lookup(getenv, "PROTOCOL"); name != "" && v != "http/protobuf" {
		return fmt.Errorf("%s=%q: acp-agent sends http/protobuf only (an OTLP collector receives it on port 4318)", name, v)
	}
	if v, name := s.lookup(getenv, "TIMEOUT"); name != "" {
		if ms, err := strconv.Atoi(v); err != nil || ms < 0 {
			return fmt.Errorf("%s=%q: not a number of milliseconds", name, v)
		}
	}
	if v, name := s.lookup(getenv, "COMPRESSION"); name != "" && v != "gzip" && v != "none" {
		return fmt.Errorf("%s=%q: gzip or none", name, v)
	}
	if v, name := s.lookup(getenv, "INSECURE"); name != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%s=%q: not true or false", name, v)
		}
	}
	if v, name := s.lookup(getenv, "HEADERS"); name != "" {
		for i, h := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(h, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return fmt.Errorf("%s: entry %d is not key=value", name, i+1)
			}
			if _, err := url.PathUnescape(val); err != nil {
				return fmt.Errorf("%s: the value of %q is not URL-encoded", name, strings.TrimSpace(k))
			}
		}
	}
	for _, key := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		if v, name := s.lookup(getenv, key); name != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
		}
	}
	return nil
}

// checkOTelEnv checks the variables the SDK itself reads (a bad value
// there would be ignored with a line on stderr).
func checkOTelEnv(getenv func(string) string) error {
	if v := getenv("OTEL_METRIC_EXPORT_INTERVAL"); v != "" {
		if ms, err := strconv.Atoi(v); err != nil || ms <= 0 {
			return fmt.Errorf("OTEL_METRIC_EXPORT_INTERVAL=%q: not a positive number of milliseconds", v)
		}
	}
	return nil
}

// otelDisabled reports OTEL_SDK_DISABLED.
func otelDisabled(getenv func(string) string) (bool, error) {
	v := getenv("OTEL_SDK_DISABLED")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("OTEL_SDK_DISABLED=%q: not true or false", v)
	}
	return b, nil
}

// exportWhere is where a signal's exporter sends (for the startup log):
// its own endpoint as it is, the shared one with the signal's path, or
// the OTLP default.
func (s otlpSignal) where(getenv func(string) string) string {
	if v := getenv(s.prefix + "ENDPOINT"); v != "" {
		return v
	}
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		return strings.TrimRight(v, "/") + s.path
	}
	return "https://localhost:4318" + s.path
}

// otelFromEnv sets up OTLP export from the standard variables (getenv is
// os.Getenv but in tests): traces when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (or OTEL_TRACES_EXPORTER=otlp),
// metrics likewise; nothing at all otherwise, and then the sessions have
// no telemetry and pay nothing for it. A value the agent cannot use is a
// *usageError naming the variable. Export errors are logged to log
// (stderr), never written to stdout.
func otelFromEnv(ctx context.Context, getenv func(string) string, log *zap.Logger) (*telemetry, error) {
	t := &telemetry{shutdown: func(context.Context) error { return nil }}
	if off, err := otelDisabled(getenv); err != nil || off {
		return t, usageErr(err)
	}
	traces, err := tracesSignal.enabled(getenv)
	if err != nil {
		return nil, usagef("%v", err)
	}
	metrics, err := metricsSignal.enabled(getenv)
	if err != nil {
		return nil, usagef("%v", err)
	}
	if !traces && !metrics {
		return t, nil
	}
	for _, s := range []otlpSignal{tracesSignal, metricsSignal} {
		if err := s.check(getenv); err != nil {
			return nil, usagef("%v", err)
		}
	}
	if err := checkOTelEnv(getenv); err != nil {
		return nil, usagef("%v", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "acp-agent"), attribute.String("service.version", version())),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	if err != nil {
		return nil, usagef("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("OpenTelemetry export failed", zap.Error(err))
	}))
	var stops []func(context.Context) error
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.tracer = tp
		stops = append(stops, tp.Shutdown)
		t.where = append(t.where, "traces to "+tracesSignal.where(getenv))
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		t.meter = mp
		stops = append(stops, mp.Shutdown)
		t.where = append(t.where, "metrics to "+metricsSignal.where(getenv))
	}
	t.shutdown = func(ctx context.Context) error {
		var errs []error
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
	return t, nil
}

// usageErr is err as a *usageError (nil for nil).
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return usagef("%v", err)
}

// flush sends what the exporters still hold and stops them, within
// otelFlushBound; a failure is logged.
func (t *telemetry) flush(log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), otelFlushBound)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		log.Warn("OpenTelemetry: not everything was sent", zap.Error(err))
	}
}
