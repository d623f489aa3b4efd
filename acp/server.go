package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

// DefaultMaxSessions is the ServerOptions.MaxSessions of a zero value: the
// most sessions open at once on one connection.
const DefaultMaxSessions = 256

// DefaultDrainTimeout is the ServerOptions.DrainTimeout of a zero value:
// how long the turns still running when the client closed its end may go
// on.
const DefaultDrainTimeout = 30 * time.Second

// DefaultContextWindow is the usage_update size reported when neither
// ServerOptions.ContextWindow nor the session's Config.ContextWindow is set.
const DefaultContextWindow = 128000

// ServerOptions configure [Serve].
type ServerOptions struct {
	// Session is the template of every session the agent opens: Provider is
	// required; ID is ignored (session/new creates one, session/load names
	// one). A nil Store means one in-memory store for this connection.
	Session session.Config
	// SessionTools, when set, gives each session opened here tools of its
	// own, next to Session.Tools, and says how their calls are shown: it is
	// called with the directories the client named in session/new,
	// session/load or session/resume (the tools of a coding agent are
	// confined to them) and the session's [ToolClient], through which the
	// tools read and write files, run commands and ask the user's
	// permission via the client. An error refuses the request with invalid
	// params.
	SessionTools func(s ToolSession) (Toolset, error)
	// Instructions, when set, gives each session opened here (session/new,
	// session/load, session/resume) the instructions of its project, read
	// then: it is called with the directories the client named, and the
	// text it returns becomes the session's session.Config.Instructions,
	// part of its system prompt (after Session.SystemPrompt, before the
	// client's appended systemPrompt), so never summarized. The files it
	// names are logged and listed in the _meta of the response that opens
	// the session, under sessionkit.projectInstructions. Text that is not
	// UTF-8 text (a NUL byte, bytes that are not UTF-8) is left out and
	// logged as a warning. examples/acp-agent reads AGENTS.md files with
	// workspace.ReadInstructions.
	Instructions func(cwd string, dirs []string) Instructions
	// AgentInfo is reported in the initialize response; zero means
	// sessionkit and Version.
	AgentInfo schema.Implementation
	// OmitSummaries keeps summaries off the wire: compaction updates carry
	// no summary and no summary chunks. For deployments where a summary
	// could expose context the user never saw (RFD: "Agents should omit
	// summary when ... exposing it could reveal context that was not
	// otherwise user-visible").
	OmitSummaries bool
	// ContextWindow is the size reported in usage_update; 0 means the
	// session's Config.ContextWindow, or DefaultContextWindow.
	ContextWindow int
	// MaxLineBytes limits one incoming message; 0 means 8 MiB.
	MaxLineBytes int
	// Logger receives diagnostics; nil means none. Serve never writes
	// anything but protocol messages to w.
	Logger *zap.Logger
	// MaxSessions is the most sessions open at once on this connection; 0
	// means DefaultMaxSessions. A session/new, session/load or
	// session/resume that would open one more (v1 and v2) is refused with
	// the error [TooManySessions] describes; attaching to a session open
	// on the connection already takes no slot, and a closed session frees
	// its slot. Negative is an error of Serve.
	MaxSessions int
	// V1Only switches ACP v2 off: every initialize is answered with v1,
	// whatever version it asks for (the v1-only rule). Otherwise initialize
	// chooses the connection's version as the official SDK's protocol
	// router does: 1 for a request for 1, 2 for a request for 2 or more,
	// and the UnsupportedProtocolVersion error below 1.
	V1Only bool
	// Modes, when set, are the session modes the agent offers, the first
	// a new session's: v1's modes (session/set_mode, current_mode_update)
	// and, on both versions, the config option "mode" (category mode).
	// This package gives them no meaning: the agent's tools read the
	// current one (ToolClient.Mode) at every call. They are session
	// settings (session.Config.Mode, changed with session.Configure).
	Modes []schema.SessionMode
	// Models, when set, are the models a session may use, the first a new
	// session's: the config option "model" (category model), the
	// session's session.Config.Model.
	Models []Model
	// McpHTTP advertises HTTP MCP servers (v1 mcpCapabilities.http, v2
	// session.mcp.http): without it, a request naming one is refused with
	// invalid params. Stdio servers are always taken (v1: "All Agents MUST
	// support this transport"), and handed to SessionTools.
	McpHTTP bool
	// DrainTimeout bounds what Serve still does once the client has
	// closed its end (r reached EOF): every request read before the EOF
	// is answered, a prompt when its turn ends, but a turn still running
	// DrainTimeout after the EOF is cancelled (its prompt answered with
	// stopReason cancelled). 0 means DefaultDrainTimeout; negative is an
	// error of Serve.
	DrainTimeout time.Duration
}

// Serve runs an ACP agent over r and w (stdio in practice) until r ends or
// ctx is done. Each ACP session is a session.Session built from
// opts.Session. Serve closes every session it opened before it returns; it
// returns nil when the client closed its end (also when that made a write
// fail), and the read or write error otherwise.
//
// # Ending
//
// When r ends (EOF), nothing more is read, and the requests read before
// are answered (a command fed by a pipe that writes its requests and
// closes at once gets every answer); turns still running are bounded by
// opts.DrainTimeout. Then Serve closes the sessions and returns nil.
//
// When ctx is done, Serve stops at once: it closes the connection (no
// further message is read or written, every request's context is
// cancelled) and closes every session at the same time, all of them
// together: running turns are cancelled, so the contexts of their tool
// calls end (a command a tool runs is stopped), and each session releases
// its lease. It returns once the sessions are closed and the connection's
// goroutines have returned; a Read of r or a Write to w in progress must
// therefore end when the connection closes them (see jsonrpc's Conn: an
// os.File in blocking mode, such as a process's stdin, is not
// interrupted by its Close; give Serve a pipe whose Close is). A session
// that cannot close (its store does not answer) holds Serve up: a caller
// that must end within a bound keeps its own.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts ServerOptions) error {
	if opts.Session.Provider == nil {
		return errors.New("acp: ServerOptions.Session.Provider is required")
	}
	switch {
	case opts.MaxSessions < 0:
		return fmt.Errorf("acp: ServerOptions.MaxSessions is %d: give the most sessions open at once, or 0 for %d", opts.MaxSessions, DefaultMaxSessions)
	case opts.MaxSessions == 0:
		opts.MaxSessions = DefaultMaxSessions
	}
	switch {
	case opts.DrainTimeout < 0:
		return fmt.Errorf("acp: ServerOptions.DrainTimeout is %v: give how long turns may go on after the client closed its end, or 0 for %v", opts.DrainTimeout, DefaultDrainTimeout)
	case opts.DrainTimeout == 0:
		opts.DrainTimeout = DefaultDrainTimeout
	}
	srv := &server{opts: opts, log: opts.Logger, sessions: make(map[string]*agentSession), loading: make(map[string]bool)}
	if srv.log == nil {
		srv.log = zap.NewNop()
	}
	srv.store = opts.Session.Store
	if srv.store == nil {
		srv.store = memstore.New()
	}
	ready := make(chan struct{}) // srv.conn is set
	srv.conn = jsonrpc.NewConn(r, w, jsonrpc.Options{
		Handler: func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			<-ready
			return srv.handle(ctx, req)
		},
		MaxLineBytes:  opts.MaxLineBytes,
		OrderRequests: true,
		FinishOnEOF:   true, // what a client wrote before it closed is answered
		Logger:        srv.log,
	})
	close(ready)
	srv.wait(ctx)
	err := srv.conn.Wait()
	srv.opens.Wait()    // their requests' contexts ended with the connection
	srv.closeSessions() // those opened while the connection ended
	srv.closers.Wait()
	if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		return nil // the client went away while the agent was writing
	}
	return err
}

// server is one ACP connection.
type server struct {
	opts  ServerOptions
	log   *zap.Logger
	store history.Store
	conn  *jsonrpc.Conn

	// negotiated is what the first initialize decided. The handlers own
	// it: the connection runs them one at a time (OrderRequests, and no
	// handler detaches), each after the previous one returned, so no lock
	// guards it. Only initialize writes it, once; each ACP session takes a
	// copy when it opens (its surface and its ToolClient), so nothing an
	// open session sees changes afterwards.
	negotiated negotiated

	// The connection's registry of sessions, which the sessions' owners
	// change too (forget) and Serve closes.
	mu       sync.Mutex
	sessions map[string]*agentSession
	opening  int             // sessions being opened: slots taken, not yet in sessions
	loading  map[string]bool // sessions being opened in the background (session/load, session/resume)
	// opens counts the goroutines that open sessions in the background;
	// Serve waits for them before it closes the sessions.
	opens sync.WaitGroup

	closers sync.WaitGroup // closeSessions's goroutines
}

// negotiated is a connection's state as its initialize decided it.
type negotiated struct {
	version    schema.ProtocolVersion    // 0 until an initialize succeeded
	compaction bool                      // v1: the client advertised session.compaction (§7.2)
	clientCaps schema.ClientCapabilities // v1: what the client advertised
}

// surface is the surface of a session of a connection in state n, whose
// working directory is cwd.
func (n negotiated) surface(cwd string) surface {
	if n.version == schema.ProtocolVersion2 {
		return v2Surface{cwd: cwd}
	}
	return v1Surface{compaction: n.compaction, notices: n.clientCaps.SupportsNotices(), plans: n.clientCaps.SupportsPlans()}
}

// wait returns when the connection has shut down. After the client's EOF
// the connection finishes by itself once the requests read are answered;
// when DrainTimeout has passed since, the sessions are closed, which ends
// their turns and answers their prompts. When ctx is done, the connection
// is closed and every session starts closing at once.
func (s *server) wait(ctx context.Context) {
	finishing := s.conn.Finishing()
	var drained <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			_ = s.conn.Close()
			s.closeSessions()
			return
		case <-s.conn.Done():
			return
		case <-finishing:
			finishing = nil
			t := time.NewTimer(s.opts.DrainTimeout)
			defer t.Stop()
			drained = t.C
		case <-drained:
			drained = nil
			s.log.Info("the client closed its end: cancelling the turns still running", zap.Duration("drain_timeout", s.opts.DrainTimeout))
			s.closeSessions()
		}
	}
}

// closeSessions starts closing every registered session, all at once (a
// session whose store is slow does not hold the others up), and
// unregisters them; s.closers waits for them.
func (s *server) closeSessions() {
	s.mu.Lock()
	all := slices.Collect(maps.Values(s.sessions))
	s.sessions = map[string]*agentSession{}
	s.mu.Unlock()
	for _, a := range all {
		s.closers.Go(func() {
			_ = a.sess.Close()
			<-a.done
		})
	}
}

func (s *server) contextWindow() uint64 {
	switch {
	case s.opts.ContextWindow > 0:
		return uint64(s.opts.ContextWindow)
	case s.opts.Session.ContextWindow > 0:
		return uint64(s.opts.Session.ContextWindow)
	}
	return DefaultContextWindow
}

// handle dispatches one request or notification: initialize, then the
// methods of the negotiated version (v2 has no authenticate and no
// session/load: session/resume with replayFrom replays; its request IDs must
// not be null), then those both versions share.
func (s *server) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == schema.MethodInitialize {
		return s.initialize(req)
	}
	own := methodsV1
	switch s.negotiated.version {
	case 0:
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "%s before initialize: send initialize first", req.Method)
	case schema.ProtocolVersion2:
		if string(req.ID) == "null" {
			return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "ACP v2 request IDs must be strings or integers")
		}
		own = methodsV2
	}
	m, ok := own[req.Method]
	if !ok {
		m, ok = methodsShared[req.Method]
	}
	if !ok {
		return nil, jsonrpc.MethodNotFoundError(req.Method)
	}
	return m(s, ctx, req)
}

// A method handles one request or notification of a connection that
// negotiated its version.
type method func(s *server, ctx context.Context, req *jsonrpc.Request) (any, error)

// typed is the method h of params P: params that do not decode as P are
// answered with the decoding error, and h is not called.
func typed[P any](h func(s *server, ctx context.Context, p P) (any, error)) method {
	return func(s *server, ctx context.Context, req *jsonrpc.Request) (any, error) {
		var p P
		if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
			return nil, err
		}
		return h(s, ctx, p)
	}
}

// The methods of each version, and those whose handling is the same in v1
// and v2 (the owner answers each as its version says).
var (
	methodsV1 = map[string]method{
		schema.MethodAuthenticate:  typed((*server).authenticate),
		schema.MethodSessionNew:    typed((*server).newSession),
		schema.MethodSessionLoad:   typed((*server).loadSession),
		schema.MethodSessionResume: typed((*server).resumeSession),
		schema.MethodSessionFork:   typed((*server).forkSession), // fork.go
		schema.MethodSetMode:       typed((*server).setMode),     // server_modes.go
	}
	methodsV2 = map[string]method{ // server_v2.go
		schema.MethodSessionNew:     typed((*server).newSessionV2),
		schema.MethodSessionResume:  typed((*server).resumeSessionV2),
		schema.MethodToolCallCancel: typed((*server).cancelToolCall), // toolcancel.go
		schema.MethodSessionFork:    typed((*server).forkSessionV2),  // fork.go
	}
	methodsShared = map[string]method{
		schema.MethodSessionPrompt:   typed((*server).prompt), // server_prompt.go
		schema.MethodSessionCancel:   typed((*server).cancel),
		schema.MethodSessionClose:    typed((*server).closeSession), // server_sessions.go
		schema.MethodSessionList:     typed((*server).listSessions),
		schema.MethodSessionDelete:   typed((*server).deleteSession), // delete.go
		schema.MethodCompact:         typed((*server).compact),       // server_extension.go
		schema.MethodUncompact:       typed((*server).uncompact),
		schema.MethodSetConfigOption: typed((*server).setConfigOption),
	}
)

// authenticate answers authenticate (v1): sessionkit asks for none.
func (s *server) authenticate(context.Context, schema.AuthenticateRequest) (any, error) {
	return schema.AuthenticateResponse{}, nil
}

// cancel handles a session/cancel: the session it names is cancelled as its
// version says (agentSession.cancel).
func (s *server) cancel(_ context.Context, p schema.CancelNotification) (any, error) {
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	a.cancel()
	return nil, nil
}

// session returns the open session with the given ID.
func (s *server) session(id string) (*agentSession, error) {
	if id == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.sessions[id]
	switch {
	case !ok && s.loading[id]:
		return nil, loadingSession(id)
	case !ok:
		return nil, unknownSession(id, "create it with session/new or load it with session/load")
	}
	return a, nil
}
