// Command mcpserver is the MCP stdio server of the interop tests
// (acp/interop/interop-modes.test.mjs), built with the official Go SDK: its
// tool greet answers "Hello, <name>!", its tool env names the variables
// of its environment, and its tool picture answers a
// text and an image (which the agent names, as it names all content that
// is not text). It says on stderr that it started, which the agent's log
// shows. Its tool quit ends the process, as a server that dies does. With --crash it writes a reason to stderr and exits 1 at once, as
// a server that cannot start does.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--crash" {
		fmt.Fprintln(os.Stderr, "fatal: DEMO_TOKEN is not set")
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "demo MCP server ready")
	s := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets someone by name."}, func(_ context.Context, _ *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "picture", Description: "Draws a picture."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "here it is"},
			&mcp.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Lists the names of the server's environment variables."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		var names []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		sort.Strings(names)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "env: " + strings.Join(names, " ")}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "quit", Description: "Ends the server (to show a server that dies)."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "demo MCP server: quitting on request")
		os.Exit(3)
		return nil, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(2)
	}
}
