package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// ErrUnsupported is returned by RemoteSession.Compact when the agent offers
// neither the _sessionkit/compact extension nor a /compact command.
var ErrUnsupported = errors.New("acp: the agent does not support this")

// ErrConnection wraps the reason a remote session's connection ended; every
// pending Handle finishes with an error wrapping it.
var ErrConnection = errors.New("acp: connection to the agent lost")

// ClientOptions configure [Dial] and [Start].
type ClientOptions struct {
	// ClientInfo is sent in initialize; zero means sessionkit and Version.
	ClientInfo schema.Implementation
	// NoCompaction leaves session.compaction out of the client
	// capabilities, as an older client would; the agent then reports
	// compactions as text and a remote Compact cannot follow them.
	NoCompaction bool
	// MaxLineBytes limits one incoming message; 0 means 8 MiB.
	MaxLineBytes int
	// Logger receives diagnostics; nil means none.
	Logger *zap.Logger
	// Stderr receives the agent process's standard error ([Start] only);
	// nil means this process's standard error.
	Stderr io.Writer
	// V1Only makes Dial ask for ACP v1 only. Otherwise it asks for v2 and
	// speaks whichever version the agent answers with.
	V1Only bool
	// RequestTimeout, when positive, bounds how long a remote Handle waits
	// for the agent's answer (the prompt response, the compaction result);
	// then it finishes with an error wrapping context.DeadlineExceeded. Zero
	// means no limit: a turn may take as long as the model needs.
	RequestTimeout time.Duration
}

// RPCError is an error the agent answered a request with. Test for it with
// errors.As; Code is the JSON-RPC error code (see the ACP schema's
// ErrorCode: -32002 for an unknown session, -32800 for a cancelled request,
// ...), Data the error's data, verbatim.
type RPCError struct {
	Code    int
	Message string
	Data    json.RawMessage
}

// Error returns the message and the code.
func (e *RPCError) Error() string {
	return fmt.Sprintf("%s (error %d)", e.Message, e.Code)
}

// asRPCError turns the connection's error type into *RPCError.
func asRPCError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &RPCError{Code: je.Code, Message: je.Message, Data: je.Data}
	}
	return err
}

// Client is a connection to an ACP agent. It is safe for concurrent use.
//
// The connection's dispatcher hands every update for a session to that
// session's RemoteSession, in receive order; a session is registered (by
// NewSession, LoadSession, ResumeSession) before any update the agent sends
// for it after the response that names it can be dispatched, and the
// updates a new session received before that response are applied first.
type Client struct {
	conn *jsonrpc.Conn
	log  *zap.Logger
	opts ClientOptions
	surf clientSurface // the version the agent answered initialize with
	stop func() error  // ends the agent process (Start only)

	mu       sync.Mutex // guards the registry, cause and the early updates (creating, early, earlyN)
	sessions map[string]*RemoteSession
	cause    error // why the connection ended
	// While a session/new waits for its response, updates for a session
	// not registered yet are kept here in receive order (at most
	// maxEarlyUpdates): an agent may write one (available_commands_update,
	// say) before the response that names the session. The session that
	// response registers applies them before anything later; the rest are
	// dropped when no session/new waits any more.
	creating int
	early    map[string][]schema.SessionUpdate
	earlyN   int
}

// maxEarlyUpdates bounds the updates kept for sessions not registered yet
// (Client.early); past it they are dropped, with a warning in the log.
const maxEarlyUpdates = 256

// Dial speaks ACP as a client over r and w: it sends initialize (with the
// session.compaction capability unless opts.NoCompaction) and returns once
// the agent has answered. Unless opts.V1Only, the initialize asks for v2
// and carries the v1 fields as well, so that an agent that answers with v1
// (a v1-only agent answers every request with 1) still reads the client's
// v1 capabilities; the connection then speaks the version of the answer
// (see [Client.Protocol]). It starts no process; see [Start]. ctx governs
// the handshake only.
func Dial(ctx context.Context, r io.Reader, w io.Writer, opts ClientOptions) (*Client, error) {
	c := &Client{log: opts.Logger, opts: opts, sessions: map[string]*RemoteSession{}}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	ready := make(chan struct{})
	c.conn = jsonrpc.NewConn(r, w, jsonrpc.Options{
		Handler: func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			<-ready
			return c.handle(ctx, req)
		},
		MaxLineBytes: opts.MaxLineBytes,
		Logger:       c.log,
		OnMalformed: func(err error) {
			<-ready
			// The stream from the agent cannot be trusted any more.
			c.conn.CloseWithError(fmt.Errorf("malformed message from the agent: %w", err))
		},
	})
	close(ready)
	info := opts.ClientInfo
	if info.Name == "" {
		info = schema.Implementation{Name: "sessionkit", Version: Version}
	}
	req := schema.InitializeRequest{ProtocolVersion: 1, ClientInfo: &info}
	if !opts.NoCompaction {
		if err := req.ClientCapabilities.SetSession(schema.ClientSessionCapabilities{Compaction: &schema.CompactionCapabilities{}}); err != nil {
			_ = c.conn.Close()
			return nil, err
		}
	}
	var params any = req
	if !opts.V1Only {
		params = schema.DualInitializeRequest{ProtocolVersion: schema.ProtocolVersion2, Info: info, ClientCapabilities: req.ClientCapabilities, ClientInfo: &info}
	}
	var raw json.RawMessage
	err := c.conn.Call(ctx, schema.MethodInitialize, params, &raw)
	if err == nil {
		err = c.initialized(raw)
	}
	if err != nil {
		_ = c.conn.Close()
		_ = c.conn.Wait()
		return nil, fmt.Errorf("acp: initialize: %w", err)
	}
	go c.watch()
	return c, nil
}

// initialized decodes the initialize result in the version it names.
func (c *Client) initialized(raw json.RawMessage) error {
	var rv schema.RequestedVersion
	if err := json.Unmarshal(raw, &rv); err != nil {
		return err
	}
	if rv.ProtocolVersion == schema.ProtocolVersion2 && !c.opts.V1Only {
		var v v2Client
		if err := json.Unmarshal(raw, &v.init); err != nil {
			return err
		}
		c.surf = v
		return nil
	}
	var v v1Client
	if err := json.Unmarshal(raw, &v.init); err != nil {
		return err
	}
	c.surf = v
	return nil
}

// Protocol returns the version the connection speaks: ProtocolVersion1 or
// ProtocolVersion2.
func (c *Client) Protocol() schema.ProtocolVersion { return c.surf.version() }

// AgentInfoV2 returns what a v2 agent said about itself in initialize; ok
// is false on a v1 connection (see [Client.AgentInfo]).
func (c *Client) AgentInfoV2() (resp schema.InitializeResponseV2, ok bool) {
	return c.surf.agentInfoV2()
}

// Start starts the agent command and dials it over its stdin and stdout.
// Close ends the connection and the process: it closes the agent's stdin,
// sends it SIGTERM, and kills it if it is still running 5 s later.
func Start(ctx context.Context, name string, args []string, opts ClientOptions) (*Client, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = opts.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("acp: start agent: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = stdin.Close() // the agent sees EOF
		// and stops now: nothing it would still answer can be read (an
		// agent that lets the requests it read finish at EOF would run its
		// turns on, commands included).
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return exitErr(err)
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			return exitErr(<-exited)
		}
	}
	c, err := Dial(ctx, stdout, stdin, opts)
	if err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return nil, err
	}
	c.stop = stop
	return c, nil
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // killed by us
	}
	return err
}

// AgentInfo returns what the agent said about itself in initialize. On a
// v2 connection it holds the protocol version and the agent's info (name,
// version); the v2 capabilities are in [Client.AgentInfoV2].
func (c *Client) AgentInfo() schema.InitializeResponse { return c.surf.agentInfo() }

// extension reports whether the agent answers the _sessionkit/compact method.
func (c *Client) extension() bool {
	m, ok := c.surf.agentMeta()[schema.MetaKey].(map[string]any)
	return ok && m["compact"] == schema.MethodCompact
}

// Close ends the connection (and the agent process, for [Start]); every
// pending Handle of its sessions finishes with an error. It waits for the
// connection's goroutines and returns the agent's exit error, if any.
func (c *Client) Close() error {
	_ = c.conn.Close()
	_ = c.conn.Wait()
	if c.stop != nil {
		return c.stop()
	}
	return nil
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// watch fails every remote session when the connection ends.
func (c *Client) watch() {
	<-c.conn.Done()
	err := c.conn.Wait()
	if err == nil {
		err = io.EOF
	}
	cause := fmt.Errorf("%w: %w", ErrConnection, err)
	c.mu.Lock()
	c.cause = cause
	all := slices.Collect(maps.Values(c.sessions))
	c.sessions = map[string]*RemoteSession{}
	c.mu.Unlock()
	for _, s := range all {
		s.stop(cause)
	}
}

// call makes a request and waits for its response; an error of the agent
// comes back as *RPCError.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	if err := c.conn.Call(ctx, method, params, result); err != nil {
		return fmt.Errorf("acp: %s: %w", method, asRPCError(err))
	}
	return nil
}

// NewSession creates a session on the agent.
func (c *Client) NewSession(ctx context.Context, cwd string) (*RemoteSession, error) {
	type answer struct {
		rs  *RemoteSession
		err error
	}
	got := make(chan answer, 1)
	// The session is registered by the dispatcher, before it dispatches the
	// updates the agent sends right after its response; the updates it sent
	// before the response are applied first.
	c.creatingSession(1)
	id, err := c.conn.SendID(ctx, schema.MethodSessionNew, c.surf.newSession(cwd), func(raw json.RawMessage, err error) {
		var resp schema.NewSessionResponse
		if err == nil {
			err = json.Unmarshal(raw, &resp)
		}
		if err != nil {
			c.creatingSession(-1)
			got <- answer{err: fmt.Errorf("acp: session/new: %w", asRPCError(err))}
			return
		}
		rs, err := c.registerNew(resp.SessionID)
		got <- answer{rs, err}
	})
	if err != nil {
		c.creatingSession(-1)
		return nil, fmt.Errorf("acp: session/new: %w", err)
	}
	select {
	case a := <-got:
		return a.rs, a.err
	case <-ctx.Done():
		// Given up: a late response is ignored, and updates for sessions
		// not yet known are no longer kept for this one.
		if c.conn.Abandon(id) {
			c.creatingSession(-1)
		}
		return nil, ctx.Err()
	}
}

// LoadSession loads a stored session: the agent replays its timeline, which
// the returned session's Timeline holds once LoadSession returns (v1:
// session/load; v2: session/resume with replayFrom {"type":"start"}).
func (c *Client) LoadSession(ctx context.Context, id, cwd string) (*RemoteSession, error) {
	method, params := c.surf.load(id, cwd)
	return c.attach(ctx, method, id, params)
}

// ResumeSession re-attaches to a session without a replay (session/resume;
// a v1 agent advertises it under sessionCapabilities.resume): updates from
// now on reach the returned session.
func (c *Client) ResumeSession(ctx context.Context, id, cwd string) (*RemoteSession, error) {
	method, params := c.surf.resume(id, cwd)
	return c.attach(ctx, method, id, params)
}

// attach registers session id, so that the updates of a replay find it,
// and sends the request that attaches it.
func (c *Client) attach(ctx context.Context, method, id string, params any) (*RemoteSession, error) {
	rs, err := c.register(id)
	if err != nil {
		return nil, err
	}
	if err := c.call(ctx, method, params, nil); err != nil {
		c.forget(rs)
		rs.stop(session.ErrClosed)
		return nil, err
	}
	return rs, nil
}

// CloseSession closes a session on the agent (session/close; advertised
// under sessionCapabilities.close): the agent cancels its work, finishes
// every command and releases it. A RemoteSession for it on this Client
// is closed too, its Handles finishing with session.ErrClosed.
func (c *Client) CloseSession(ctx context.Context, id string) error {
	err := c.call(ctx, schema.MethodSessionClose, schema.CloseSessionRequest{SessionID: id}, nil)
	c.closeRemote(id)
	return err
}

// closeRemote closes the RemoteSession for id on this Client, if any.
func (c *Client) closeRemote(id string) {
	c.mu.Lock()
	rs := c.sessions[id]
	c.mu.Unlock()
	if rs != nil {
		rs.Close()
	}
}

// ListSessions lists the agent's sessions (session/list; advertised under
// sessionCapabilities.list), with cwd "" for all of them, following
// nextCursor to the last page. UpdatedAt is zero when the agent does not
// say.
func (c *Client) ListSessions(ctx context.Context, cwd string) ([]history.SessionInfo, error) {
	var out []history.SessionInfo
	req := schema.ListSessionsRequest{Cwd: cwd}
	for {
		var resp schema.ListSessionsResponse
		if err := c.call(ctx, schema.MethodSessionList, req, &resp); err != nil {
			return nil, err
		}
		for _, s := range resp.Sessions {
			info := history.SessionInfo{ID: s.SessionID, Cwd: s.Cwd, Title: s.Title}
			if t, err := time.Parse(time.RFC3339Nano, s.UpdatedAt); err == nil {
				info.UpdatedAt = t
			}
			out = append(out, info)
		}
		if resp.NextCursor == "" || resp.NextCursor == req.Cursor {
			return out, nil
		}
		req.Cursor = resp.NextCursor
	}
}

// register makes the session known to the dispatcher.
func (c *Client) register(id string) (*RemoteSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause != nil {
		return nil, c.cause
	}
	if rs, ok := c.sessions[id]; ok {
		return rs, nil
	}
	rs := newRemoteSession(c, id)
	c.sessions[id] = rs
	return rs, nil
}

// creatingSession counts the session/new requests waiting for their
// response (by delta); when none waits, the updates kept for sessions not
// registered are dropped.
func (c *Client) creatingSession(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creating += delta
	if c.creating == 0 && c.earlyN > 0 {
		c.log.Warn("updates for sessions no session/new named were dropped", zap.Int("updates", c.earlyN))
		c.early, c.earlyN = nil, 0
	}
}

// registerNew registers the session a session/new response names, on the
// dispatcher, and hands its owner the updates received for it before the
// response, in receive order: they are applied before the response is
// delivered and before any update received after it.
func (c *Client) registerNew(id string) (*RemoteSession, error) {
	rs, err := c.register(id)
	c.mu.Lock()
	kept := c.early[id]
	delete(c.early, id)
	c.earlyN -= len(kept)
	c.mu.Unlock()
	c.creatingSession(-1)
	if rs != nil {
		for _, u := range kept {
			rs.post(func() { rs.update(u) })
		}
	}
	return rs, err
}

// route returns the registered session id, or keeps u for it while a
// session/new waits for its response (the agent may have written u before
// that response); nil when there is no session to hand u to now.
func (c *Client) route(id string, u schema.SessionUpdate) *RemoteSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rs := c.sessions[id]; rs != nil {
		return rs
	}
	switch {
	case c.creating == 0:
		c.log.Debug("update for a session this client does not hold", zap.String("session", id))
	case c.earlyN >= maxEarlyUpdates:
		c.log.Warn("update for a session not created yet dropped: too many kept", zap.String("session", id), zap.Int("kept", c.earlyN))
	default:
		if c.early == nil {
			c.early = map[string][]schema.SessionUpdate{}
		}
		c.early[id] = append(c.early[id], u)
		c.earlyN++
	}
	return nil
}

// forget unregisters rs, unless another took its place.
func (c *Client) forget(rs *RemoteSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[rs.id] == rs {
		delete(c.sessions, rs.id)
	}
}

func (c *Client) session(id string) *RemoteSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// handle receives the agent's notifications and requests. An update is
// handed to its session's owner before the next message is dispatched.
func (c *Client) handle(_ context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case schema.MethodSessionUpdate:
		n, err := c.surf.notification(req.Params)
		if err != nil {
			c.log.Warn("malformed session/update", zap.Error(err))
			return nil, err
		}
		if rs := c.route(n.SessionID, n.Update); rs != nil {
			rs.post(func() { rs.update(n.Update) })
		}
		return nil, nil
	case schema.MethodCompactFinished:
		var p schema.CompactFinishedParams
		if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
			c.log.Warn("malformed compact_finished", zap.Error(err))
			return nil, err
		}
		if rs := c.session(p.SessionID); rs != nil {
			res := compactResultOf(&p.Result)
			rs.post(func() { rs.compactFinished(p.CompactID, res) })
		}
		return nil, nil
	case "session/request_permission":
		// This client grants nothing on its own: the turn's tool call is
		// told the request was cancelled.
		return json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`), nil
	}
	return nil, jsonrpc.MethodNotFoundError(req.Method)
}
