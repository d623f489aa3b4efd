package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionkit/sessionkit/tools/mcp"
)

// A Go program that is no ACP agent: it connects to an MCP server over
// HTTP (here one of its own, built with the go-sdk) and to a stdio server
// that cannot start, then calls a tool the way a session would.
func Example() {
	server := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, nil)
	server.AddTool(&sdk.Tool{Name: "forecast", Description: "Tomorrow's weather in a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ City string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + in.City}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	set, err := mcp.Options{HTTPClient: client}.Connect(context.Background(), []mcp.Server{
		{Name: "weather", URL: ts.URL},
		{Name: "notes", Command: "/nonexistent/notes-mcp"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	for _, f := range set.Failed() {
		fmt.Println("not available:", f.Server)
	}
	for _, tool := range set.Tools() {
		out, err := tool.Run(context.Background(), json.RawMessage(`{"city":"Lisbon"}`))
		fmt.Println(tool.Name, "→", out, err)
	}
	// Output:
	// not available: notes
	// mcp__weather__forecast → sunny in Lisbon <nil>
}
