package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/sessionkit/sessionkit/tools/mcp"
)

// One echo call through a Set: the round trip to a stdio subprocess and to
// an HTTP server in this process.
func BenchmarkCall(b *testing.B) {
	for _, tc := range []struct {
		name   string
		server func(b *testing.B) mcp.Server
	}{
		{"stdio", func(b *testing.B) mcp.Server { return stdio(b, "local", "local") }},
		{"http", func(b *testing.B) mcp.Server {
			return mcp.Server{Name: "local", URL: httpServer(b, "local"), Headers: http.Header{"X-Token": {"secret"}}}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			set, err := mcp.Options{HTTPClient: &http.Client{Transport: tr}}.Connect(context.Background(), []mcp.Server{tc.server(b)})
			if err != nil || len(set.Failed()) > 0 {
				b.Fatal(err, set.Failed())
			}
			defer set.Close()
			var echo func(context.Context, json.RawMessage) (string, error)
			for _, tl := range set.Tools() {
				if tl.Name == "mcp__local__echo" {
					echo = tl.Run
				}
			}
			args := json.RawMessage(`{"text":"hi"}`)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := echo(context.Background(), args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
