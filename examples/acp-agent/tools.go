package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zapio"

	"github.com/sessionkit/sessionkit/acp"
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/tools/mcp"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// sessionTools gives each session the workspace tools (read_file,
// write_file, edit_file, list_files, search, run_command) confined to its
// working directory and additional directories, working through the
// editor when it offers files and terminals, with the permission rules of
// the session's mode (workspace.Modes, read at every call); commands run
// in the sandbox o.Sandbox describes. A cwd (or additional directory)
// that cannot be a session's here (not an absolute, existing directory;
// /, the home directory) refuses the session/new, session/load or
// session/resume with -32602 naming it: a session without its tools would
// answer as if it had them.
//
// The MCP servers the editor names are started too (tools/mcp), with the
// environment commands get (the sandbox's allow-list), and their tools
// follow the rules of commands (workspace.Guard); they end with the
// session. A server that fails to start, or dies later, does not fail
// the session: the user is told which one and why, and the log has its
// stderr.
func sessionTools(o workspace.Options, mo mcp.Options, log *zap.Logger) func(acp.ToolSession) (acp.Toolset, error) {
	return func(ts acp.ToolSession) (acp.Toolset, error) {
		ws, err := workspace.New(ts.Cwd, ts.AdditionalDirectories...)
		if err != nil {
			return acp.Toolset{}, err
		}
		o := o
		o.Editor = ts.Client
		o.Mode = ts.Client.Mode
		describe := workspace.Describe(ts.Cwd)
		set := acp.Toolset{Tools: ws.Tools(o), Describe: describe, ReadFile: "read_file", Close: func() { _ = ws.Close() }}
		if len(ts.McpServers) == 0 {
			return set, nil
		}
		ms := startMCP(ts, o, mo, log)
		if ms == nil {
			return set, nil
		}
		for _, t := range ms.Tools() {
			origin, _ := ms.Origin(t.Name)
			set.Tools = append(set.Tools, workspace.Guard(t, o, func(json.RawMessage) string { return mcpTitle(origin) }))
		}
		set.Describe = func(call history.ToolCall, result *history.Message) acp.ToolCallDisplay {
			if origin, ok := ms.Origin(call.Name); ok {
				d := acp.ToolCallDisplay{Title: mcpTitle(origin), Kind: schema.ToolKindOther}
				if result != nil && strings.HasPrefix(result.Text, workspace.Declined) {
					d.Status = schema.ToolCallFailed
				}
				return d
			}
			return describe(call, result)
		}
		set.Close = func() {
			_ = ms.Close()
			_ = ws.Close()
		}
		return set, nil
	}
}

// mcpTitle is how a call of an MCP tool is shown: its server and its own
// name.
func mcpTitle(o mcp.Origin) string { return "MCP " + o.Server + ": " + o.Tool }

// mcpStartTimeout bounds the start of a session's MCP servers.
const mcpStartTimeout = 30 * time.Second

// startMCP starts the MCP servers of a session. It returns the servers
// (nil when none could be given: the list was malformed) and tells the user
// of each server that failed, and why, with a notice (ToolClient.Notice
// holds it until the response that opens the session has been sent).
func startMCP(ts acp.ToolSession, o workspace.Options, mo mcp.Options, log *zap.Logger) *mcp.Set {
	servers := make([]mcp.Server, 0, len(ts.McpServers))
	for _, s := range ts.McpServers {
		m := mcp.Server{Name: s.Name}
		switch s.Type {
		case "http":
			m.URL = s.URL
			m.Headers = http.Header{}
			for _, h := range s.Headers {
				m.Headers.Add(h.Name, h.Value)
			}
		default:
			m.Command, m.Args, m.Dir = s.Command, s.Args, ts.Cwd
			for _, e := range s.Env {
				m.Env = append(m.Env, e.Name+"="+e.Value)
			}
			// Its stderr goes to the log, a line at a time, named.
			m.Stderr = &zapio.Writer{Log: log.With(zap.String("mcp_server", s.Name)), Level: zapcore.InfoLevel}
		}
		servers = append(servers, m)
	}
	mo.Environ = o.Sandbox.Environ(os.Environ()) // what a command sees, no more
	client := ts.Client
	mo.OnExit = func(e *mcp.ServerError) {
		log.Warn("an MCP server ended", zap.Error(e))
		// Not waited for: Notice returns once the owner has queued it, or
		// when the session has closed.
		go tell(client, "An MCP server stopped, and its tools fail from now on", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), mcpStartTimeout)
	defer cancel()
	set, err := mo.Connect(ctx, servers)
	if err != nil {
		log.Warn("MCP servers not started", zap.Error(err))
		tell(client, "The MCP servers were not started", err)
		return nil
	}
	for _, st := range set.Servers() {
		if st.Err != nil {
			log.Warn("an MCP server failed to start", zap.String("mcp_server", st.Name), zap.Error(st.Err))
			tell(client, "An MCP server is not available", st.Err)
			continue
		}
		log.Info("MCP server started", zap.String("mcp_server", st.Name), zap.Strings("tools", st.Tools), zap.Strings("notes", st.Notes))
	}
	return set
}

// tell gives the user a notice of an MCP failure, "title: err" as agent
// text where the client takes no notices. While the session opens it is
// held until the response that opens it has been sent; after the session
// has closed it is dropped.
func tell(c *acp.ToolClient, title string, err error) {
	_ = c.Notice(context.Background(), schema.Notice{Severity: schema.NoticeError, Title: title, Description: err.Error()})
}
