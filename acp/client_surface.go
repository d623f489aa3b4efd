package acp

import (
	"encoding/json"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
)

// clientSurface is what the client side does differently per protocol
// version: the requests a [Client] and its [RemoteSession]s send and how
// they read what the agent sends. A Client has one, chosen once when the
// agent answers initialize; the rest of the client side calls it and never
// tests the version itself (the agent side's counterpart is surface).
type clientSurface interface {
	// version is the protocol version the connection speaks.
	version() schema.ProtocolVersion
	// agentInfo is what the agent said about itself in initialize, in v1's
	// shape.
	agentInfo() schema.InitializeResponse
	// agentInfoV2 is the v2 answer to initialize (ok false on v1).
	agentInfoV2() (resp schema.InitializeResponseV2, ok bool)
	// agentMeta is the _meta of the agent's capabilities, where a
	// sessionkit agent lists its extension methods.
	agentMeta() map[string]any
	// newSession is the params of session/new.
	newSession(cwd string) any
	// load is the request that attaches to a stored session and replays
	// it to the client.
	load(id, cwd string) (method string, params any)
	// resume is the request that attaches to a session without a replay.
	resume(id, cwd string) (method string, params any)
	// notification decodes the params of a session/update.
	notification(params json.RawMessage) (schema.SessionNotification, error)
	// promptAnswer reads the response to a session/prompt: inserted (v2)
	// when it is the prompt's receipt, the turn ending later with the idle
	// state_update; otherwise (v1) the turn has ended with stop.
	promptAnswer(raw json.RawMessage) (inserted bool, stop schema.StopReason, err error)
	// updateCreatesToolCall reports whether the first tool_call_update of a
	// tool call ID creates the call (v2, which has no tool_call update).
	updateCreatesToolCall() bool
}

// v1Client is ACP v1 on the client side.
type v1Client struct{ init schema.InitializeResponse }

func (v1Client) version() schema.ProtocolVersion { return schema.ProtocolVersion1 }

func (v v1Client) agentInfo() schema.InitializeResponse { return v.init }

func (v1Client) agentInfoV2() (schema.InitializeResponseV2, bool) {
	return schema.InitializeResponseV2{}, false
}

func (v v1Client) agentMeta() map[string]any { return v.init.AgentCapabilities.Meta }

func (v1Client) newSession(cwd string) any { return schema.NewSessionRequest{Cwd: cwd} }

func (v1Client) load(id, cwd string) (string, any) {
	return schema.MethodSessionLoad, schema.LoadSessionRequest{SessionID: id, Cwd: cwd}
}

func (v1Client) resume(id, cwd string) (string, any) {
	return schema.MethodSessionResume, schema.ResumeSessionRequest{SessionID: id, Cwd: cwd}
}

func (v1Client) notification(params json.RawMessage) (schema.SessionNotification, error) {
	var n schema.SessionNotification
	err := jsonrpc.UnmarshalParams(params, &n)
	return n, err
}

func (v1Client) promptAnswer(raw json.RawMessage) (bool, schema.StopReason, error) {
	var resp schema.PromptResponse
	err := json.Unmarshal(raw, &resp)
	return false, resp.StopReason, err
}

func (v1Client) updateCreatesToolCall() bool { return false }

// v2Client is ACP v2 on the client side: session/resume with a replayFrom
// stands for session/load, a prompt is answered with its receipt, and a
// tool call is created by its first tool_call_update.
type v2Client struct{ init schema.InitializeResponseV2 }

func (v2Client) version() schema.ProtocolVersion { return schema.ProtocolVersion2 }

func (v v2Client) agentInfo() schema.InitializeResponse {
	info := v.init.Info
	return schema.InitializeResponse{ProtocolVersion: v.init.ProtocolVersion, AgentInfo: &info}
}

func (v v2Client) agentInfoV2() (schema.InitializeResponseV2, bool) { return v.init, true }

func (v v2Client) agentMeta() map[string]any { return v.init.Capabilities.Meta }

func (v2Client) newSession(cwd string) any { return schema.NewSessionRequestV2{Cwd: cwd} }

func (v2Client) load(id, cwd string) (string, any) {
	return schema.MethodSessionResume, schema.ResumeSessionRequestV2{SessionID: id, Cwd: cwd,
		ReplayFrom: &schema.ReplayFrom{Type: schema.ReplayFromStart}}
}

func (v2Client) resume(id, cwd string) (string, any) {
	return schema.MethodSessionResume, schema.ResumeSessionRequestV2{SessionID: id, Cwd: cwd}
}

func (v2Client) notification(params json.RawMessage) (schema.SessionNotification, error) {
	var n schema.SessionNotificationV2
	err := jsonrpc.UnmarshalParams(params, &n)
	return schema.SessionNotification(n), err
}

func (v2Client) promptAnswer(raw json.RawMessage) (bool, schema.StopReason, error) {
	var receipt schema.PromptResponseV2
	if err := json.Unmarshal(raw, &receipt); err != nil {
		return false, "", err
	}
	return true, "", nil
}

func (v2Client) updateCreatesToolCall() bool { return true }
