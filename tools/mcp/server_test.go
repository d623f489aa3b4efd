package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serverEnv, when set, makes the test binary an MCP server over stdio
// (TestMain): its value chooses which one.
const serverEnv = "SESSIONKIT_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv); mode != "" {
		os.Exit(serveStdio(mode))
	}
	goleak.VerifyTestMain(m)
}

// serveStdio runs the test server of mode over stdin and stdout.
func serveStdio(mode string) int {
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "starting up")
		fmt.Fprintln(os.Stderr, "fatal: missing API key")
		return 1
	}
	switch mode {
	case "term": // on SIGTERM, says so and exits
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		go func() {
			<-sig
			fmt.Fprintln(os.Stderr, "terminated")
			os.Exit(0)
		}()
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	}
	if err := testServer(mode).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		return 2
	}
	if mode == "term" || mode == "stubborn" {
		select {} // does not exit when its stdin closes
	}
	return 0
}

// hostileText holds what can rewrite a screen or reorder text: ANSI
// escapes, BEL, backspace, CR, NUL, a C1 control, bidi overrides and
// isolates, and a CRLF line end.
const hostileText = "red\x1b[31m bell\a back\b cr\r nul\x00 csi\u009b rlo\u202etxt.exe\u2066iso\u2069 zw\u200b ok\r\nnext"

// hostileShown is hostileText as the model and the editor are shown it.
const hostileShown = `red\x1b[31m bell\a back\b cr\r nul\x00 csi\u009b rlo\u202etxt.exe\u2066iso\u2069 zw\u200b ok` + "\n" + "next"

var echoSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to say"}},"required":["text"]}`)

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// testServer is the MCP server the tests talk to, over stdio (a
// subprocess) or HTTP (in this process).
func testServer(mode string) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "test-" + mode, Version: "1"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	add := func(name, desc string, schema json.RawMessage, h sdk.ToolHandler) {
		srv.AddTool(&sdk.Tool{Name: name, Description: desc, InputSchema: schema}, h)
	}
	if mode == "hostile" {
		long := strings.Repeat("x", 100)
		for _, name := range []string{"a.b", "a_b", "bad\x1b[31mname\u202e", long, long + "y", "fine"} {
			add(name, "ok\x1b[2J\u202eevil\x00\r"+strings.Repeat("d", 5000), empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("called " + name), nil
			})
		}
		none := func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text(""), nil }
		add("", "no name", empty, none)
		add("huge", "a huge schema", json.RawMessage(`{"type":"object","description":"`+strings.Repeat("s", 100<<10)+`"}`), none)
		return srv
	}
	if mode == "ansi" {
		add("ansi", "Answer hostile text.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(hostileText), nil
		})
		add("ansi-error", "Report hostile text as the tool's error.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: hostileText}}}, nil
		})
		add("ansi-fail", "Fail with hostile text.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, errors.New(hostileText)
		})
		add("evil\x1b[2J\u202ename", "A hostile name.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("ok"), nil
		})
		return srv
	}
	add("echo", "Say the text back.", echoSchema, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return text(mode + " says " + in.Text), nil
	})
	add("fail", "Fail.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it broke"}}}, nil
	})
	add("media", "Return every kind of content.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		size := int64(99)
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "here:"},
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
			&sdk.ResourceLink{URI: "file:///project/a.go", Name: "a.go", MIMEType: "text/x-go", Size: &size},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///project/b.txt", MIMEType: "text/plain", Text: "b's text"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///project/c.bin", MIMEType: "application/octet-stream", Blob: make([]byte, 7)}},
		}}, nil
	})
	add("structured", "Return structured content only.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]int{"n": 7}}, nil
	})
	add("big", "Return 10000 bytes.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(strings.Repeat("é", 5000)), nil
	})
	add("slow", "Wait until cancelled.", empty, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "slow started")
		<-ctx.Done()
		fmt.Fprintln(os.Stderr, "slow cancelled")
		return nil, ctx.Err()
	})
	add("getenv", "Answer an environment variable.", empty, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Name string }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		v, ok := os.LookupEnv(in.Name)
		return text(fmt.Sprintf("%q %v", v, ok)), nil
	})
	add("die", "Exit at once.", empty, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "dying: out of cheese")
		os.Exit(3)
		return nil, nil
	})
	add("spawn", "Start a child that holds stdout and stderr; answer both pids.", empty, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Setsid bool }
		_ = json.Unmarshal(req.Params.Arguments, &in)
		child := exec.Command("sleep", "300")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: in.Setsid} // Setsid: a child that leaves the group
		if err := child.Start(); err != nil {
			return nil, err
		}
		return text(fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid)), nil
	})
	return srv
}
