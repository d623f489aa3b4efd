package acp

import (
	"encoding/json"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
)

// initialize negotiates the connection's version (see
// ServerOptions.V1Only) and answers with that version's surface.
//
// The first initialize that succeeds decides the connection's state
// (s.negotiated) for good. A later one is checked as the first was and
// answered as the first was answered, but changes nothing: not the version,
// not the client's capabilities, neither for the sessions open nor for
// those opened later (docs/acp.md, "One initialize per connection"). A v1
// connection answers any later request with v1 (the v1 rule); a v2
// connection refuses a request for v1 with InvalidRequest.
func (s *server) initialize(req *jsonrpc.Request) (any, error) {
	if s.opts.V1Only {
		return s.initializeV1(req)
	}
	was := s.negotiated.version
	if was == schema.ProtocolVersion1 {
		// Initialized with v1 already: a repeated initialize keeps the
		// v1 rule, and the connection's state.
		return s.initializeV1(req)
	}
	var rv schema.RequestedVersion
	if err := jsonrpc.UnmarshalParams(req.Params, &rv); err != nil {
		return nil, err
	}
	selected := schema.ProtocolVersion1
	switch {
	case was == schema.ProtocolVersion2 && rv.ProtocolVersion < schema.ProtocolVersion2:
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "initialize: this connection speaks protocol version 2 already")
	case rv.ProtocolVersion < schema.ProtocolVersion1:
		e := jsonrpc.NewError(schema.UnsupportedProtocolVersion, "unsupported protocol version %d: this agent supports 1 and 2", rv.ProtocolVersion)
		e.Data, _ = json.Marshal(schema.UnsupportedProtocolVersionData{Requested: rv.ProtocolVersion, Supported: []schema.ProtocolVersion{schema.ProtocolVersion1, schema.ProtocolVersion2}})
		return nil, e
	case rv.ProtocolVersion >= schema.ProtocolVersion2:
		selected = schema.ProtocolVersion2
	}
	if selected == schema.ProtocolVersion1 {
		return s.initializeV1(req)
	}
	return s.initializeV2(req, rv.ProtocolVersion)
}

// info is the agent's Implementation.
func (s *server) info() schema.Implementation {
	info := s.opts.AgentInfo
	if info.Name == "" {
		info = schema.Implementation{Name: "sessionkit", Title: "sessionkit", Version: Version}
	}
	return info
}

// initializeV2 answers a request for version 2 or later with v2. A request
// for exactly 2 must parse (info is required); for a later version, params
// that do not parse are dropped, as the official SDK's router does. v2
// request IDs must not be null.
func (s *server) initializeV2(req *jsonrpc.Request, requested schema.ProtocolVersion) (any, error) {
	if string(req.ID) == "null" {
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "ACP v2 request IDs must be strings or integers")
	}
	var p schema.InitializeRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil && requested == schema.ProtocolVersion2 {
		return nil, err
	}
	if s.negotiated.version == 0 { // the first initialize decides (see initialize)
		s.negotiated = negotiated{version: schema.ProtocolVersion2}
	}
	info := s.info()
	return schema.InitializeResponseV2{
		ProtocolVersion: schema.ProtocolVersion2,
		Info:            info,
		Capabilities: schema.AgentCapabilitiesV2{
			Session: &schema.SessionCapabilitiesV2{Prompt: s.promptCapabilitiesV2(), Delete: &schema.Capability{}, Mcp: s.mcpV2(), SystemPrompt: systemPromptCapabilities(), Fork: &schema.Capability{}},
			Meta:    extensionMeta(),
		},
	}, nil
}

// extensionMeta is the capabilities' _meta on both versions: the extension
// methods this agent answers (acp.Dial looks here).
func extensionMeta() map[string]any {
	return map[string]any{schema.MetaKey: map[string]any{"compact": schema.MethodCompact, "uncompact": schema.MethodUncompact}}
}

// initializeV1 answers initialize with v1.
func (s *server) initializeV1(req *jsonrpc.Request) (any, error) {
	var p schema.InitializeRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	if s.negotiated.version == 0 { // the first initialize decides (see initialize)
		s.negotiated = negotiated{version: schema.ProtocolVersion1, compaction: p.ClientCapabilities.SupportsCompaction(), clientCaps: p.ClientCapabilities}
	}
	info := s.info()
	return schema.InitializeResponse{
		ProtocolVersion: 1,
		AgentCapabilities: schema.AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  schema.PromptCapabilities{Image: provider.TakesImages(s.opts.Session.Provider), EmbeddedContext: true},
			McpCapabilities:     schema.McpCapabilities{HTTP: s.opts.McpHTTP},
			SessionCapabilities: s.sessionCapabilities(),
			Meta:                extensionMeta(),
		},
		AgentInfo: &info,
	}, nil
}

// sessionCapabilities are the v1 session methods this agent answers:
// every store lists and deletes sessions; additionalDirectories
// when sessions have tools of their own (ServerOptions.SessionTools), which
// are given those directories.
func (s *server) sessionCapabilities() schema.SessionCapabilities {
	caps := schema.SessionCapabilities{Resume: &schema.Capability{}, Close: &schema.Capability{}, Delete: &schema.Capability{}, List: &schema.Capability{}, Fork: &schema.Capability{}, SystemPrompt: systemPromptCapabilities()}
	if s.opts.SessionTools != nil {
		caps.AdditionalDirectories = &schema.Capability{}
	}
	return caps
}

// promptCapabilitiesV2 are the prompt capabilities of v2: embedded
// context always, images when the provider takes them (as v1's).
func (s *server) promptCapabilitiesV2() *schema.PromptCapabilitiesV2 {
	c := &schema.PromptCapabilitiesV2{EmbeddedContext: &schema.Capability{}}
	if provider.TakesImages(s.opts.Session.Provider) {
		c.Image = &schema.Capability{}
	}
	return c
}
