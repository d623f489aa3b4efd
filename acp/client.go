package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/internal/jsonrpc"
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
	ClientInfo Implementation
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
	// RequestTimeout, when positive, bounds how long a remote Handle waits
	// for the agent's answer (the prompt response, the compaction result);
	// then it finishes with an error wrapping context.DeadlineExceeded. Zero
	// means no limit: a turn may take as long as the model needs.
	RequestTimeout time.Duration
}

// Client is a connection to an ACP agent. It is safe for concurrent use.
type Client struct {
	conn *jsonrpc.Conn
	log  *zap.Logger
	opts ClientOptions
	init InitializeResponse
	stop func() error // ends the agent process (Start only)

	mu       sync.Mutex
	sessions map[string]*RemoteSession
	early    map[string][]SessionUpdate // updates for sessions not registered yet
	cause    error                      // why the connection ended
}

// Bounds of the updates kept for sessions not registered yet: an agent
// sends available_commands_update right after the session/new response,
// which the client may dispatch before NewSession has registered the ID.
const (
	earlySessions = 16
	earlyUpdates  = 256
)

// Dial speaks ACP as a client over r and w: it sends initialize (with the
// session.compaction capability unless opts.NoCompaction) and returns once
// the agent has answered. It starts no process; see [Start]. ctx governs the
// handshake only.
func Dial(ctx context.Context, r io.Reader, w io.Writer, opts ClientOptions) (*Client, error) {
	c := &Client{log: opts.Logger, opts: opts, sessions: map[string]*RemoteSession{}, early: map[string][]SessionUpdate{}}
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
		info = Implementation{Name: "sessionkit", Version: Version}
	}
	req := InitializeRequest{ProtocolVersion: 1, ClientInfo: &info}
	if !opts.NoCompaction {
		if err := req.ClientCapabilities.SetSession(ClientSessionCapabilities{Compaction: &CompactionCapabilities{}}); err != nil {
			_ = c.conn.Close()
			return nil, err
		}
	}
	if err := c.conn.Call(ctx, MethodInitialize, req, &c.init); err != nil {
		_ = c.conn.Close()
		_ = c.conn.Wait()
		return nil, fmt.Errorf("acp: initialize: %w", err)
	}
	go c.watch()
	return c, nil
}

// Start starts the agent command and dials it over its stdin and stdout.
// Close ends the connection and the process.
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
		_ = stdin.Close() // the agent sees EOF and ends
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

// waitPrompt waits for a session/prompt response, at most
// ClientOptions.RequestTimeout when that is set.
func (c *Client) waitPrompt(p *jsonrpc.Pending) (PromptResponse, error) {
	ctx, cancel := context.WithCancel(context.Background())
	if c.opts.RequestTimeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	}
	defer cancel()
	var resp PromptResponse
	err := p.Wait(ctx, &resp)
	return resp, err
}

// AgentInfo returns what the agent said about itself in initialize.
func (c *Client) AgentInfo() InitializeResponse { return c.init }

// extension reports whether the agent answers the _sessionkit/compact method.
func (c *Client) extension() bool {
	m, ok := c.init.AgentCapabilities.Meta[MetaKey].(map[string]any)
	return ok && m["compact"] == MethodCompact
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
	all := make([]*RemoteSession, 0, len(c.sessions))
	for _, s := range c.sessions {
		all = append(all, s)
	}
	c.mu.Unlock()
	for _, s := range all {
		s.fail(cause)
	}
}

// NewSession creates a session on the agent.
func (c *Client) NewSession(ctx context.Context, cwd string) (*RemoteSession, error) {
	var resp NewSessionResponse
	if err := c.conn.Call(ctx, MethodSessionNew, NewSessionRequest{Cwd: cwd}, &resp); err != nil {
		return nil, fmt.Errorf("acp: session/new: %w", err)
	}
	return c.register(resp.SessionID)
}

// LoadSession loads a stored session: the agent replays its timeline, which
// the returned session's Timeline holds once LoadSession returns.
func (c *Client) LoadSession(ctx context.Context, id, cwd string) (*RemoteSession, error) {
	rs, err := c.register(id)
	if err != nil {
		return nil, err
	}
	if err := c.conn.Call(ctx, MethodSessionLoad, LoadSessionRequest{SessionID: id, Cwd: cwd}, nil); err != nil {
		c.mu.Lock()
		delete(c.sessions, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("acp: session/load: %w", err)
	}
	return rs, nil
}

// register makes the session known to the dispatcher and applies, in
// order, the updates that arrived for it before.
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
	for _, u := range c.early[id] {
		rs.update(u) // under c.mu, so no later update overtakes these
	}
	delete(c.early, id)
	return rs, nil
}

// route applies an update to its session, or keeps it (bounded) until the
// session is registered.
func (c *Client) route(id string, u SessionUpdate) {
	c.mu.Lock()
	rs := c.sessions[id]
	if rs == nil {
		if _, ok := c.early[id]; ok || len(c.early) < earlySessions {
			if len(c.early[id]) < earlyUpdates {
				c.early[id] = append(c.early[id], u)
			}
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	rs.update(u)
}

func (c *Client) session(id string) *RemoteSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// handle receives the agent's notifications and requests.
func (c *Client) handle(_ context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case MethodSessionUpdate:
		var n SessionNotification
		if err := jsonrpc.UnmarshalParams(req.Params, &n); err != nil {
			c.log.Warn("malformed session/update", zap.Error(err))
			return nil, err
		}
		c.route(n.SessionID, n.Update)
		return nil, nil
	case MethodCompactFinished:
		var p CompactFinishedParams
		if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
			c.log.Warn("malformed compact_finished", zap.Error(err))
			return nil, err
		}
		if rs := c.session(p.SessionID); rs != nil {
			rs.compactFinished(p.CompactID, p.Result.Result())
		}
		return nil, nil
	case "session/request_permission":
		// This client grants nothing on its own: the turn's tool call is
		// told the request was cancelled.
		return json.RawMessage(`{"outcome":{"outcome":"cancelled"}}`), nil
	}
	return nil, jsonrpc.MethodNotFoundError(req.Method)
}
