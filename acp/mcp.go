package acp

import (
	"encoding/json"
	"fmt"
	"github.com/sessionkit/sessionkit/acp/schema"
)

// MCP servers a client names when it opens a session (session/new,
// session/load, session/resume) reach the session's tools through
// ToolSession.McpServers: stdio servers always, HTTP servers when the agent
// advertises them (ServerOptions.McpHTTP). This package starts none
// itself; the agent's SessionTools does (examples/acp-agent with
// tools/mcp), and Toolset.Close ends them with the session.

// mcpServersV2 decodes the mcpServers of a v2 request: each is
// {"type":"stdio", name, command, args?, env?} or {"type":"http", name,
// url, headers?}; another type is refused (the v2 schema: "Agents MUST
// reject a request with a transport they do not support with -32602").
func mcpServersV2(raw json.RawMessage) ([]schema.McpServer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalidParams(`field "mcpServers": must be an array`)
	}
	out := make([]schema.McpServer, 0, len(items))
	for i, item := range items {
		typ, err := schema.Discriminator(item, "type", "McpServer")
		if err != nil {
			return nil, invalidParams(`field "mcpServers": item %d: %s`, i, schema.DescribeError(err))
		}
		switch typ {
		case "stdio":
			var s mcpServerStdioV2
			if err := schema.DecodeObject(item, &s); err != nil {
				return nil, invalidParams(`field "mcpServers": item %d (stdio): %s`, i, schema.DescribeError(err))
			}
			out = append(out, schema.McpServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Meta: s.Meta})
		case "http":
			var s mcpServerHTTPV2
			if err := schema.DecodeObject(item, &s); err != nil {
				return nil, invalidParams(`field "mcpServers": item %d (http): %s`, i, schema.DescribeError(err))
			}
			out = append(out, schema.McpServer{Type: "http", Name: s.Name, URL: s.URL, Headers: s.Headers, Meta: s.Meta})
		default:
			return nil, invalidParams(`field "mcpServers": item %d: MCP transport %q is not supported by this agent (stdio and http are)`, i, typ)
		}
	}
	return out, nil
}

type mcpServerStdioV2 struct {
	Name    string               `json:"name" acp:"required"`
	Command string               `json:"command" acp:"required"`
	Args    []string             `json:"args,omitzero" acp:"nulldefault"`
	Env     []schema.EnvVariable `json:"env,omitzero" acp:"nulldefault"`
	Meta    map[string]any       `json:"_meta,omitzero" acp:"lenient"`
}

type mcpServerHTTPV2 struct {
	Name    string              `json:"name" acp:"required"`
	URL     string              `json:"url" acp:"required"`
	Headers []schema.HTTPHeader `json:"headers,omitzero" acp:"nulldefault"`
	Meta    map[string]any      `json:"_meta,omitzero" acp:"lenient"`
}

// checkMcp refuses the servers of a request this agent does not take: an
// sse server (never advertised), an http one unless ServerOptions.McpHTTP.
func (s *server) checkMcp(servers []schema.McpServer) error {
	for i, m := range servers {
		switch {
		case m.Type == "sse":
			return invalidParams(`field "mcpServers": item %d (%q): the sse transport is not supported by this agent (stdio and http are)`, i, m.Name)
		case m.Type == "http" && !s.opts.McpHTTP:
			return invalidParams(`field "mcpServers": item %d (%q): http MCP servers are not supported by this agent (it does not advertise them)`, i, m.Name)
		}
	}
	return nil
}

// Mode returns the session's current mode (an ID of ServerOptions.Modes;
// "" without modes, or before the session is open). The session's tools
// read it at every call: the agent gives the modes their meaning.
func (c *ToolClient) Mode() string {
	a := c.a.Load()
	if a == nil {
		return ""
	}
	return a.mode()
}

// mcpNote is the log's word for MCP servers a session was given without
// SessionTools to start them.
func mcpNote(servers []schema.McpServer) string {
	return fmt.Sprintf("%d MCP server(s) named, but this agent has no SessionTools to start them: the session runs without them", len(servers))
}

// mcpV2 is the v2 session.mcp capability: stdio where sessions have tools
// of their own to start servers with, http also with McpHTTP.
func (s *server) mcpV2() *schema.McpCapabilitiesV2 {
	if s.opts.SessionTools == nil {
		return nil
	}
	c := &schema.McpCapabilitiesV2{Stdio: &schema.Capability{}}
	if s.opts.McpHTTP {
		c.HTTP = &schema.Capability{}
	}
	return c
}
