package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/session"
)

// otlpReceiver is an OTLP/HTTP receiver on 127.0.0.1: it decodes the
// protobuf export requests it is sent and keeps their spans and metric
// names.
type otlpReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []string
	service string // the resource's service.name
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var in coltracepb.ExportTraceServiceRequest
		if !decodeOTLP(w, req, &in) {
			return
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		replyOTLP(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var in colmetricpb.ExportMetricsServiceRequest
		if !decodeOTLP(w, req, &in) {
			return
		}
		r.mu.Lock()
		for _, rm := range in.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					r.metrics = append(r.metrics, m.Name)
				}
			}
		}
		r.mu.Unlock()
		replyOTLP(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	r.srv = httptest.NewUnstartedServer(mux)
	r.srv.Listener = ln
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

func decodeOTLP(w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err == nil && req.Header.Get("Content-Type") != "application/x-protobuf" {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = proto.Unmarshal(data, m)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func replyOTLP(w http.ResponseWriter, m proto.Message) {
	data, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(data)
}

// spanNames returns the names of the spans received, and the spans by
// name.
func (r *otlpReceiver) received() (names []string, byName map[string][]*tracepb.Span, metrics []string, service string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	byName = map[string][]*tracepb.Span{}
	for _, s := range r.spans {
		names = append(names, s.Name)
		byName[s.Name] = append(byName[s.Name], s)
	}
	return names, byName, slices.Clone(r.metrics), r.service
}

// TestOTLPExport: with OTEL_EXPORTER_OTLP_ENDPOINT set, the agent sends
// its sessions' spans and metrics over OTLP/HTTP to it (a receiver on
// 127.0.0.1 that decodes the protobuf requests): a turn's invoke_agent,
// its chat and execute_tool spans as its children, a compaction's span
// with its summary call's chat span as child, and the GenAI metrics; all
// of them sent by the flush of its stop (the batch would wait seconds
// more), and nothing but ACP on stdout.
func TestOTLPExport(t *testing.T) {
	clearProviderEnv(t)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")      // only the stop's flush sends spans
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000") // and metrics
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("the release is in March\n"), 0o644))

	ctx := context.Background()
	var stderr syncBuffer
	c, err := acp.Start(ctx, agentBinary(t), []string{"--store", filepath.Join(t.TempDir(), "s.db")}, acp.ClientOptions{Stderr: &stderr})
	require.NoError(t, err)
	rs, err := c.NewSession(ctx, project)
	require.NoError(t, err)
	for _, text := range []string{"Read file notes.txt", "What is in notes.txt?", "And when is the release?"} {
		h, err := rs.Prompt(ctx, session.PromptRequest{Text: text})
		require.NoError(t, err)
		res, err := h.Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, res.Err)
	}
	ch, err := rs.Compact(ctx, session.CompactRequest{})
	require.NoError(t, err)
	cres, err := ch.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompacted, cres.Reason, "the compaction completed")
	names, _, _, _ := recv.received()
	assert.Empty(t, names, "nothing sent before the stop (the batch waits a minute)")

	require.NoError(t, c.Close()) // SIGTERM: the stop flushes
	names, byName, metrics, service := recv.received()
	t.Logf("spans: %v", names)
	assert.Equal(t, "acp-agent", service)
	require.Len(t, byName["invoke_agent"], 3, "one invoke_agent span per turn")
	require.Len(t, byName["compaction"], 1)
	tools := byName["execute_tool read_file"]
	require.NotEmpty(t, tools, "the read_file call's execute_tool span")
	var chats []*tracepb.Span
	for n, s := range byName {
		if strings.HasPrefix(n, "chat") {
			chats = append(chats, s...)
		}
	}
	require.GreaterOrEqual(t, len(chats), 4, "a chat span per step and the summary call")
	turns := map[string]bool{}
	for _, s := range byName["invoke_agent"] {
		turns[string(s.SpanId)] = true
	}
	assert.True(t, turns[string(tools[0].ParentSpanId)], "execute_tool is a child of its turn")
	comp := byName["compaction"][0]
	var summary bool
	for _, s := range chats {
		summary = summary || bytes.Equal(s.ParentSpanId, comp.SpanId)
		if !bytes.Equal(s.ParentSpanId, comp.SpanId) {
			assert.True(t, turns[string(s.ParentSpanId)], "a turn's chat span is a child of its turn")
		}
	}
	assert.True(t, summary, "the summary call's chat span is a child of the compaction's")
	attrs := map[string]bool{}
	for _, a := range comp.Attributes {
		attrs[a.Key] = true
	}
	assert.True(t, attrs["gen_ai.compaction.messages_archived"] && attrs["gen_ai.conversation.id"], "compaction attributes: %v", comp.Attributes)
	assert.Contains(t, metrics, "gen_ai.client.token.usage")
	assert.Contains(t, metrics, "gen_ai.client.operation.duration")
	assert.Contains(t, stderr.String(), "exporting OpenTelemetry")
}

// TestOTLPBadEnv: a value of the OpenTelemetry variables the agent cannot
// honour is a startup error (status 2) naming the variable; console export
// is refused (stdout is the ACP channel); a header's value is never shown.
func TestOTLPBadEnv(t *testing.T) {
	bin := agentBinary(t)
	for name, tc := range map[string]struct {
		env  []string
		want string
	}{
		"endpoint scheme":   {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318": not an http:// or https:// URL`},
		"endpoint password": {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=ftp://user:secret@collector:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT="ftp://user:xxxxx@collector:4318": not an http:// or https:// URL`},
		"endpoint URL":      {[]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://[::1"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: not a URL"},
		"no host":           {[]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http:///v1/metrics"}, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
		"grpc":              {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc": acp-agent sends http/protobuf only`},
		"signal protocol":   {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json"}, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"},
		"timeout":           {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT=10s"}, `OTEL_EXPORTER_OTLP_TIMEOUT="10s": not a number of milliseconds`},
		"compression":       {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION=zstd"}, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"},
		"headers":           {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%zzsecret"}, `OTEL_EXPORTER_OTLP_HEADERS: the value of "authorization" is not URL-encoded`},
		"console":           {[]string{"OTEL_TRACES_EXPORTER=console"}, "OTEL_TRACES_EXPORTER=console: the agent's stdout is the ACP channel"},
		"exporter":          {[]string{"OTEL_METRICS_EXPORTER=prometheus"}, "OTEL_METRICS_EXPORTER"},
		"disabled":          {[]string{"OTEL_SDK_DISABLED=yes please"}, "OTEL_SDK_DISABLED"},
		"interval":          {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_METRIC_EXPORT_INTERVAL=-5"}, "OTEL_METRIC_EXPORT_INTERVAL"},
		"resource":          {[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_RESOURCE_ATTRIBUTES=novalue"}, "OTEL_RESOURCE_ATTRIBUTES"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "--store", filepath.Join(t.TempDir(), "s.db"))
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_BASE_URL=", "SESSIONKIT_PROVIDER=offline")
			cmd.Env = append(cmd.Env, tc.env...)
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.WaitDelay = 10 * time.Second
			err := cmd.Run()
			require.Error(t, err)
			assert.Equal(t, exitUsage, cmd.ProcessState.ExitCode(), stderr.String())
			assert.Empty(t, stdout.String(), "nothing served")
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "secret")
		})
	}
}

// TestOTLPOff: without the variables (or with OTEL_SDK_DISABLED, or
// OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER none) the sessions get
// no providers at all.
func TestOTLPOff(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
	} {
		tel, err := otelFromEnv(context.Background(), func(k string) string { return env[k] }, nil)
		require.NoError(t, err)
		assert.Nil(t, tel.tracer, "%v", env)
		assert.Nil(t, tel.meter, "%v", env)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}
	tel, err := otelFromEnv(context.Background(), func(k string) string { return env[k] }, nil)
	require.NoError(t, err)
	assert.NotNil(t, tel.tracer)
	assert.Nil(t, tel.meter, "only the traces endpoint is set")
	assert.Equal(t, []string{"traces to http://127.0.0.1:1/v1/traces"}, tel.where)
	require.NoError(t, tel.shutdown(context.Background()))
}
