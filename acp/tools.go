package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// ToolSession is one ACP session as the tools of a coding agent see it: the
// directories the client named when it opened the session and the
// [ToolClient] that reaches the client on the session's connection.
// [ServerOptions.SessionTools] is given one for every session it opens.
type ToolSession struct {
	// Cwd is the working directory the client named (an absolute path in
	// ACP).
	Cwd string
	// AdditionalDirectories are the other directories the client named
	// (additionalDirectories), which the tools may also use.
	AdditionalDirectories []string
	// McpServers are the MCP servers the client named, for the session's
	// tools: stdio servers (Type ""), and http servers where the agent
	// advertises them (ServerOptions.McpHTTP). Starting them is the
	// agent's (examples/acp-agent uses tools/mcp); one that fails should
	// not fail the session, but be told to the user (ToolClient.Notice,
	// which holds what it is given while the session opens until the
	// response that opens it has been sent).
	McpServers []schema.McpServer
	// Client makes the requests of the session's tools to the client.
	Client *ToolClient
}

// Toolset is what [ServerOptions.SessionTools] gives a session: its tools,
// and how the client is shown their calls.
type Toolset struct {
	// Tools are the session's tools, next to Session.Tools.
	Tools []session.Tool
	// Describe, when set, says how a tool call is shown: with result nil
	// when the call is made (the tool_call update), and with its result
	// message when it has finished (the final tool_call_update, whose
	// content is the display's content followed by the result's text). It
	// is given durable history only (the call's name and arguments, the
	// result's text), so a session/load in a fresh process shows every call
	// as it was shown live. It must be quick and must not fail; a zero
	// ToolCallDisplay keeps the defaults. A call of the session's built-in
	// recall tool (session.Config.Recall) that it leaves without a title
	// and kind is shown as a search titled Recall "<query>", or a read of
	// the message it names.
	Describe func(call history.ToolCall, result *history.Message) ToolCallDisplay
	// Close, when set, ends what the tools hold (MCP servers, say): it is
	// called once when the session ends (session/close, the connection's
	// end, the agent's exit), or at once when the session does not open.
	Close func()
	// ReadFile, when set, names the tool of Tools that reads a file of
	// the session's directories by its path ({"path": ...}): a prompt's
	// resource_link to a file:// URI inside them tells the model to read
	// it with this tool (history.Attachment.Note).
	ReadFile string
}

// ToolCallDisplay is how a tool call is shown (see [Toolset.Describe]). A
// zero field keeps the default: the tool's name as the title, kind
// "other", no locations, no content besides the result's text, and status
// failed for a result that reports a failure (history.ToolFailed),
// completed otherwise. A result that begins with
// session.ToolCallCancelledText (the call was cancelled, v2
// tool_call/cancel) is cancelled whatever Status says (v1, which has no
// such status: failed).
type ToolCallDisplay struct {
	Title     string
	Kind      schema.ToolKind
	Locations []schema.ToolCallLocation
	// Content goes before the result's text, e.g. the diff of an edit.
	Content []schema.ToolCallContent
	// Status, for a finished call, overrides the default (a call the user
	// declined, say, is failed although its result is not an error).
	Status schema.ToolCallStatus
}

// ErrNoClient is returned by the [ToolClient] methods when the request
// cannot be sent: the ACP session is closed (or the client did not
// advertise the capability the method needs).
var ErrNoClient = errors.New("acp: no client to ask")

// ToolClient makes requests to the ACP client of one session, for its
// tools: files through the editor (fs/*), commands in the editor's
// terminals (terminal/*) and the user's permission
// (session/request_permission). Each method takes ctx and blocks until the
// client answers or ctx ends; a request is written after every update the
// session queued before it, in particular after the tool_call update of
// the call running (the client sees the call before any request about
// it). Methods are safe for concurrent use; they must not be called from a
// goroutine the connection waits for (a handler of this package).
//
// The capabilities are those the client advertised in initialize (ACP v1).
// An ACP v2 client has no fs or terminal methods: there only
// RequestPermission and UpdateToolCall reach it.
type ToolClient struct {
	caps schema.ClientCapabilities
	surf surface                      // the session's copy of the connection's version
	a    atomic.Pointer[agentSession] // set when the session is open
	// early holds the notices given before the session was open (Notice).
	early earlyNotices
}

// CanReadFiles reports whether the client offers fs/read_text_file.
func (c *ToolClient) CanReadFiles() bool { return c.surf.clientTools() && c.caps.FS.ReadTextFile }

// CanWriteFiles reports whether the client offers fs/write_text_file.
func (c *ToolClient) CanWriteFiles() bool { return c.surf.clientTools() && c.caps.FS.WriteTextFile }

// CanRunTerminals reports whether the client offers the terminal/* methods.
func (c *ToolClient) CanRunTerminals() bool { return c.surf.clientTools() && c.caps.Terminal }

// ReadTextFile reads a text file through the client (fs/read_text_file),
// which sees the editor's unsaved changes: all of it, or limit lines (0:
// to the end) from line (1-based; 0: the first).
func (c *ToolClient) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if !c.CanReadFiles() {
		return "", fmt.Errorf("%w: the client does not read files", ErrNoClient)
	}
	var r schema.ReadTextFileResponse
	err := c.call(ctx, false, schema.MethodReadTextFile, schema.ReadTextFileRequest{SessionID: c.sessionID(), Path: path, Line: line, Limit: limit}, &r)
	return r.Content, err
}

// WriteTextFile writes content to a text file through the client
// (fs/write_text_file), which creates it when it does not exist.
func (c *ToolClient) WriteTextFile(ctx context.Context, path, content string) error {
	if !c.CanWriteFiles() {
		return fmt.Errorf("%w: the client does not write files", ErrNoClient)
	}
	return c.call(ctx, false, schema.MethodWriteTextFile, schema.WriteTextFileRequest{SessionID: c.sessionID(), Path: path, Content: content}, &schema.EmptyResult{})
}

// CreateTerminal starts a command in a terminal of the client
// (terminal/create; req.SessionID is filled in) and returns its terminal
// ID. The caller must release it ([ToolClient.ReleaseTerminal]).
func (c *ToolClient) CreateTerminal(ctx context.Context, req schema.CreateTerminalRequest) (string, error) {
	if !c.CanRunTerminals() {
		return "", fmt.Errorf("%w: the client has no terminals", ErrNoClient)
	}
	req.SessionID = c.sessionID()
	var r schema.CreateTerminalResponse
	if err := c.call(ctx, false, schema.MethodTerminalCreate, req, &r); err != nil {
		return "", err
	}
	return r.TerminalID, nil
}

// TerminalOutput returns a terminal's output so far (terminal/output).
func (c *ToolClient) TerminalOutput(ctx context.Context, terminalID string) (*schema.TerminalOutputResponse, error) {
	var r schema.TerminalOutputResponse
	if err := c.call(ctx, false, schema.MethodTerminalOutput, c.terminal(terminalID), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// WaitForTerminalExit waits for a terminal's command to end
// (terminal/wait_for_exit). When ctx ends first (a timeout, a cancelled
// turn) it returns ctx's error; the command goes on until killed.
func (c *ToolClient) WaitForTerminalExit(ctx context.Context, terminalID string) (*schema.TerminalExitStatus, error) {
	var r schema.TerminalExitStatus
	if err := c.call(ctx, false, schema.MethodTerminalWaitForExit, c.terminal(terminalID), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// KillTerminal kills a terminal's command (terminal/kill); the terminal
// stays until released. Like ReleaseTerminal it is sent even when ctx has
// ended already, since it is how a tool cleans up after a timeout or a
// cancelled turn; it waits for the answer only while ctx lasts.
func (c *ToolClient) KillTerminal(ctx context.Context, terminalID string) error {
	return c.call(ctx, true, schema.MethodTerminalKill, c.terminal(terminalID), &schema.EmptyResult{})
}

// ReleaseTerminal kills a terminal's command if it still runs and frees
// the terminal (terminal/release). It is sent even when ctx has ended
// already (see KillTerminal). A tool call that embeds the terminal goes on
// showing its output.
func (c *ToolClient) ReleaseTerminal(ctx context.Context, terminalID string) error {
	return c.call(ctx, true, schema.MethodTerminalRelease, c.terminal(terminalID), &schema.EmptyResult{})
}

// RequestPermission asks the user to allow a tool call
// (session/request_permission) and returns the outcome: the option chosen,
// or "cancelled" when the client cancelled the request because the prompt
// turn was cancelled. toolCall is the call it is about, with what the user
// should see (title, kind, locations, the diff of an edit); an empty
// ToolCallID is [session.ToolCallID] of ctx. When ctx ends first (the turn
// was cancelled) it returns ctx's error and the client's late answer is
// dropped. On ACP v2 the request has the call's title and the call as its
// subject.
func (c *ToolClient) RequestPermission(ctx context.Context, toolCall schema.ToolCallUpdate, options []schema.PermissionOption) (schema.PermissionOutcome, error) {
	if toolCall.ToolCallID == "" {
		toolCall.ToolCallID = session.ToolCallID(ctx)
	}
	if toolCall.ToolCallID == "" {
		return schema.PermissionOutcome{}, errors.New("acp: a permission request needs the tool call's ID")
	}
	if len(options) == 0 {
		return schema.PermissionOutcome{}, errors.New("acp: a permission request needs at least one option")
	}
	params := c.surf.permission(c.sessionID(), toolCall, options)
	var r schema.RequestPermissionResponse
	if err := c.call(ctx, false, schema.MethodRequestPermission, params, &r); err != nil {
		return schema.PermissionOutcome{}, err
	}
	return r.Outcome, nil
}

// UpdateToolCall sends a tool_call_update about a call (an empty
// ToolCallID is [session.ToolCallID] of ctx), e.g. the terminal a command
// runs in as its content, after every update the session queued before it.
// It returns once the update is queued.
func (c *ToolClient) UpdateToolCall(ctx context.Context, u schema.ToolCallUpdate) error {
	if u.ToolCallID == "" {
		u.ToolCallID = session.ToolCallID(ctx)
	}
	a := c.a.Load()
	if a == nil {
		return ErrNoClient
	}
	if !a.updateToolCall(ctx, &u) {
		return closedErr(ctx)
	}
	return nil
}

func (c *ToolClient) sessionID() string {
	if a := c.a.Load(); a != nil {
		return a.id
	}
	return ""
}

func (c *ToolClient) terminal(id string) schema.TerminalRequest {
	return schema.TerminalRequest{SessionID: c.sessionID(), TerminalID: id}
}

// closedErr is why a request could not be queued: ctx ended, or the
// session is closed.
func closedErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: the session is closed", ErrNoClient)
}

// answer is the client's answer to a request, handed from the connection's
// dispatcher to the waiting call.
type answer struct {
	raw json.RawMessage
	err error
}

// call sends a request through the session's owner and writer, so that it
// stands after every update queued before it, and waits for the answer
// (until ctx ends) and decodes it into result. always queues the request
// even when ctx has ended (cleanup requests).
func (c *ToolClient) call(ctx context.Context, always bool, method string, params, result any) error {
	a := c.a.Load()
	if a == nil {
		return ErrNoClient
	}
	got := make(chan answer, 1) // the dispatcher never waits for the call
	admitCtx := ctx
	if always {
		admitCtx = context.WithoutCancel(ctx)
	}
	abandon, ok := a.requestCancellable(admitCtx, method, params, func(raw json.RawMessage, err error) { got <- answer{raw, err} })
	if !ok {
		return closedErr(ctx)
	}
	select {
	case r := <-got:
		if r.err != nil {
			return fmt.Errorf("acp: %s: %w", method, r.err)
		}
		if err := json.Unmarshal(r.raw, result); err != nil {
			return fmt.Errorf("acp: %s: the client's answer: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		if c.surf.abandonsRequests() && !always {
			abandon()
		}
		return ctx.Err()
	}
}
