package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/session"
)

// Version is the version sessionkit reports as agentInfo.version.
const Version = "0.1.0"

// Extension methods of this project.
const (
	// MethodCompact is the _sessionkit/compact request: params
	// {sessionId, instructions?}; answered with {compactId} as soon as the
	// compaction is queued.
	MethodCompact = "_sessionkit/compact"
	// MethodCompactFinished is the _sessionkit/compact_finished
	// notification: {sessionId, compactId, result}, sent when a compaction
	// requested with MethodCompact has finished.
	MethodCompactFinished = "_sessionkit/compact_finished"
	// MethodUncompact is the _sessionkit/uncompact request: params
	// {sessionId}; answered with {uncompactId} as soon as the undo of the
	// newest compaction is queued (session.Session.Uncompact).
	MethodUncompact = "_sessionkit/uncompact"
	// MethodUncompactFinished is the _sessionkit/uncompact_finished
	// notification: {sessionId, uncompactId, segmentId, restored, error?},
	// sent when an undo requested with MethodUncompact has finished.
	MethodUncompactFinished = "_sessionkit/uncompact_finished"
)

// DefaultMaxSessions is the ServerOptions.MaxSessions of a zero value: the
// most sessions open at once on one connection.
const DefaultMaxSessions = 256

// MetaKey is the key under agentCapabilities._meta where a sessionkit agent
// lists its extension methods.
const MetaKey = "sessionkit"

// DefaultContextWindow is the usage_update size reported when neither
// ServerOptions.ContextWindow nor the session's Config.ContextWindow is set.
const DefaultContextWindow = 128000

// CompactCommand is the slash command that requests a manual compaction.
const CompactCommand = "compact"

// UncompactCommand is the slash command that undoes the newest compaction.
const UncompactCommand = "uncompact"

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
	// AgentInfo is reported in the initialize response; zero means
	// sessionkit and Version.
	AgentInfo Implementation
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
}

// Serve runs an ACP agent over r and w (stdio in practice) until r ends or
// ctx is done. Each ACP session is a session.Session built from
// opts.Session. Serve closes every session it opened before it returns; it
// returns nil when the client closed its end (also when that made a write
// fail), and the read or write error otherwise.
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
	srv := &server{opts: opts, log: opts.Logger, sessions: make(map[string]*agentSession)}
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
		Logger:        srv.log,
	})
	close(ready)
	select {
	case <-ctx.Done():
		_ = srv.conn.Close()
	case <-srv.conn.Done():
	}
	err := srv.conn.Wait()
	srv.closeSessions()
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

	mu          sync.Mutex
	initialized bool
	version     ProtocolVersion // negotiated by initialize
	compaction  bool            // the client advertised session.compaction (§7.2)
	clientCaps  ClientCapabilities
	sessions    map[string]*agentSession
	opening     int // sessions being opened: slots taken, not yet in sessions
}

// surface returns the connection's surface, set by initialize.
func (s *server) surface() surface {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == ProtocolVersion2 {
		return v2Surface{srv: s}
	}
	return v1Surface{s}
}

// v2 reports whether the connection speaks ACP v2.
func (s *server) v2() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version == ProtocolVersion2
}

func (s *server) capable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compaction
}

func (s *server) closeSessions() {
	s.mu.Lock()
	all := slices.Collect(maps.Values(s.sessions))
	s.sessions = map[string]*agentSession{}
	s.mu.Unlock()
	for _, a := range all {
		_ = a.sess.Close()
		<-a.done
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

// unknownSession is the ResourceNotFound error for a session ID, with
// data {sessionId} as the official SDK sends it.
func unknownSession(id, hint string) error {
	e := jsonrpc.NewError(jsonrpc.ResourceNotFound, "unknown session %q: %s", id, hint)
	e.Data, _ = json.Marshal(map[string]string{"sessionId": id})
	return e
}

// servedElsewhere is the error for a session that another agent process
// serves from the shared store: an internal error (ACP has no code for it)
// whose data names the session, the holder and when its lease expires
// unless renewed.
func servedElsewhere(le *history.LeaseError) error {
	e := jsonrpc.NewError(jsonrpc.InternalError, "session %q is served by another agent process (%s); try again when it closes the session, or after its lease expires", le.Session, le.Holder)
	e.Data, _ = json.Marshal(map[string]any{
		"sessionId": le.Session,
		MetaKey:     map[string]any{"leasedBy": le.Holder, "leaseExpires": le.Expires.UTC().Format(time.RFC3339Nano)},
	})
	return e
}

// TooManySessions is the ErrorCode of the error that refuses a session/new,
// session/load or session/resume when the connection has
// ServerOptions.MaxSessions sessions open: an internal error (ACP has no
// code for it, and reserves the server-error range for its own) whose
// message says so and whose data is {"sessionkit": {"maxSessions": N}} (and
// the sessionId asked for, if any). Closing a session with session/close
// frees its slot.
const TooManySessions = jsonrpc.InternalError

// tooManySessions is the error of a session id ("" = new) that would be
// one past the limit of max.
func tooManySessions(id string, max int) error {
	e := jsonrpc.NewError(TooManySessions, "too many sessions on this connection: this agent serves at most %d at once on one connection; close one with session/close first", max)
	data := map[string]any{MetaKey: map[string]any{"maxSessions": max}}
	if id != "" {
		data["sessionId"] = id
	}
	e.Data, _ = json.Marshal(data)
	return e
}

// reserve takes a slot for a session to be opened (id; "" for a new one),
// or refuses it when the connection is full. The slot is the session's once
// open registers it; release gives back one that was not.
func (s *server) reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions)+s.opening >= s.opts.MaxSessions {
		return tooManySessions(id, s.opts.MaxSessions)
	}
	s.opening++
	return nil
}

// release gives back a slot reserve took for a session that did not open.
func (s *server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opening--
}

func invalidParams(format string, args ...any) error {
	return jsonrpc.NewError(jsonrpc.InvalidParams, "invalid params: "+format, args...)
}

// handle dispatches one request or notification.
func (s *server) handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == MethodInitialize {
		return s.initialize(req)
	}
	s.mu.Lock()
	ready := s.initialized
	s.mu.Unlock()
	if !ready {
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "%s before initialize: send initialize first", req.Method)
	}
	if s.v2() {
		return s.handleV2(ctx, req)
	}
	switch req.Method {
	case MethodAuthenticate:
		var p AuthenticateRequest
		if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
			return nil, err
		}
		return AuthenticateResponse{}, nil
	case MethodSessionNew:
		return s.newSession(ctx, req)
	case MethodSessionLoad:
		return s.loadSession(ctx, req)
	case MethodSessionResume:
		return s.resumeSession(ctx, req)
	case MethodSessionPrompt:
		return s.prompt(ctx, req)
	case MethodSessionCancel:
		return nil, s.cancel(req, func(a *agentSession) { a.sess.Interrupt() })
	}
	return s.handleShared(ctx, req)
}

// handleShared dispatches the methods whose handling is the same in v1 and
// v2.
func (s *server) handleShared(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case MethodSessionClose:
		return s.closeSession(ctx, req)
	case MethodSessionList:
		return s.listSessions(ctx, req)
	case MethodCompact:
		return s.compact(ctx, req)
	case MethodUncompact:
		return s.uncompact(ctx, req)
	}
	return nil, jsonrpc.MethodNotFoundError(req.Method)
}

// requestedVersion is the protocolVersion member of an initialize request.
type requestedVersion struct {
	ProtocolVersion ProtocolVersion `json:"protocolVersion" acp:"required"`
}

// UnmarshalJSON decodes v; errors wrap [ErrMalformed].
func (v *requestedVersion) UnmarshalJSON(data []byte) error { return decodeObject(data, v) }

// initialize negotiates the connection's version (see
// ServerOptions.V1Only) and answers with that version's surface.
func (s *server) initialize(req *jsonrpc.Request) (any, error) {
	if s.opts.V1Only {
		return s.initializeV1(req)
	}
	s.mu.Lock()
	was := s.version
	s.mu.Unlock()
	if was == ProtocolVersion1 {
		// Initialized with v1 already: a repeated initialize keeps the
		// v1 rule, and the connection's version.
		return s.initializeV1(req)
	}
	var rv requestedVersion
	if err := jsonrpc.UnmarshalParams(req.Params, &rv); err != nil {
		return nil, err
	}
	selected := ProtocolVersion1
	switch {
	case was == ProtocolVersion2 && rv.ProtocolVersion < ProtocolVersion2:
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "initialize: this connection speaks protocol version 2 already")
	case rv.ProtocolVersion < ProtocolVersion1:
		e := jsonrpc.NewError(UnsupportedProtocolVersion, "unsupported protocol version %d: this agent supports 1 and 2", rv.ProtocolVersion)
		e.Data, _ = json.Marshal(UnsupportedProtocolVersionData{Requested: rv.ProtocolVersion, Supported: []ProtocolVersion{ProtocolVersion1, ProtocolVersion2}})
		return nil, e
	case rv.ProtocolVersion >= ProtocolVersion2:
		selected = ProtocolVersion2
	}
	if selected == ProtocolVersion1 {
		return s.initializeV1(req)
	}
	return s.initializeV2(req, rv.ProtocolVersion)
}

// info is the agent's Implementation.
func (s *server) info() Implementation {
	info := s.opts.AgentInfo
	if info.Name == "" {
		info = Implementation{Name: "sessionkit", Title: "sessionkit", Version: Version}
	}
	return info
}

// initializeV2 answers a request for version 2 or later with v2. A request
// for exactly 2 must parse (info is required); for a later version, params
// that do not parse are dropped, as the official SDK's router does. v2
// request IDs must not be null.
func (s *server) initializeV2(req *jsonrpc.Request, requested ProtocolVersion) (any, error) {
	if string(req.ID) == "null" {
		return nil, jsonrpc.NewError(jsonrpc.InvalidRequest, "ACP v2 request IDs must be strings or integers")
	}
	var p InitializeRequestV2
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil && requested == ProtocolVersion2 {
		return nil, err
	}
	s.mu.Lock()
	s.initialized = true
	s.version = ProtocolVersion2
	s.mu.Unlock()
	info := s.info()
	return InitializeResponseV2{
		ProtocolVersion: ProtocolVersion2,
		Info:            info,
		Capabilities: AgentCapabilitiesV2{
			Session: &SessionCapabilitiesV2{Prompt: &PromptCapabilitiesV2{EmbeddedContext: &Capability{}}},
			Meta:    extensionMeta(),
		},
	}, nil
}

// extensionMeta is the capabilities' _meta on both versions: the extension
// methods this agent answers (acp.Dial looks here).
func extensionMeta() map[string]any {
	return map[string]any{MetaKey: map[string]any{"compact": MethodCompact, "uncompact": MethodUncompact}}
}

// initializeV1 answers initialize with v1.
func (s *server) initializeV1(req *jsonrpc.Request) (any, error) {
	var p InitializeRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.initialized = true
	s.version = ProtocolVersion1
	s.compaction = p.ClientCapabilities.SupportsCompaction()
	s.clientCaps = p.ClientCapabilities
	s.mu.Unlock()
	info := s.info()
	return InitializeResponse{
		ProtocolVersion: 1,
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{EmbeddedContext: true},
			SessionCapabilities: s.sessionCapabilities(),
			Meta:                extensionMeta(),
		},
		AgentInfo: &info,
	}, nil
}

// cancel handles a session/cancel: it runs cancel on the session it names.
func (s *server) cancel(req *jsonrpc.Request, cancel func(a *agentSession)) error {
	var p CancelNotification
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return err
	}
	cancel(a)
	return nil
}

// session returns the open session with the given ID.
func (s *server) session(id string) (*agentSession, error) {
	if id == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.sessions[id]
	if !ok {
		return nil, unknownSession(id, "create it with session/new or load it with session/load")
	}
	return a, nil
}

// sessionCapabilities are the v1 session methods this agent answers:
// session/list only when its store can list sessions; additionalDirectories
// when sessions have tools of their own (ServerOptions.SessionTools), which
// are given those directories.
func (s *server) sessionCapabilities() SessionCapabilities {
	caps := SessionCapabilities{Resume: &Capability{}, Close: &Capability{}}
	if _, ok := s.store.(history.Lister); ok {
		caps.List = &Capability{}
	}
	if s.opts.SessionTools != nil {
		caps.AdditionalDirectories = &Capability{}
	}
	return caps
}

// listSessions handles session/list: one page of the store's listing,
// newest first, optionally of one cwd.
func (s *server) listSessions(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p ListSessionsRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	lister, ok := s.store.(history.Lister)
	if !ok {
		return nil, jsonrpc.MethodNotFoundError(req.Method)
	}
	page, err := lister.ListSessions(ctx, history.ListOptions{Cwd: p.Cwd, Cursor: p.Cursor})
	if errors.Is(err, history.ErrInvalid) {
		return nil, invalidParams("%v", err)
	}
	if err != nil {
		return nil, err
	}
	resp := ListSessionsResponse{Sessions: make([]SessionInfo, 0, len(page.Sessions)), NextCursor: page.Next}
	for _, si := range page.Sessions {
		info := SessionInfo{SessionID: si.ID, Cwd: si.Cwd, Title: si.Title}
		if !si.UpdatedAt.IsZero() {
			info.UpdatedAt = si.UpdatedAt.UTC().Format(time.RFC3339Nano)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	return resp, nil
}

// place is where the client opens a session: its directories, and how
// many MCP servers it asked for.
type place struct {
	cwd        string
	dirs       []string
	mcpServers int
}

// mcpCount is how many MCP servers a v2 request's raw mcpServers lists.
func mcpCount(raw json.RawMessage) int {
	var list []json.RawMessage
	_ = json.Unmarshal(raw, &list)
	return len(list)
}

// open starts a session.Session for id ("" = new) and registers its ACP
// session; start starts the ACP session (replaying the timeline first when
// replay is set) and queues first before anything else.
func (s *server) open(ctx context.Context, id string, at place, replay bool, first func(a *agentSession)) error {
	if err := s.reserve(id); err != nil {
		return err
	}
	registered := false
	defer func() {
		if !registered {
			s.release()
		}
	}()
	cwd := at.cwd
	cfg := s.opts.Session
	cfg.ID = id
	cfg.Store = s.store
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if at.mcpServers > 0 {
		// Never silently: the client asked for servers this agent does not
		// connect to.
		s.log.Warn("mcpServers are not supported by this agent: the session runs without them", zap.Int("mcpServers", at.mcpServers), zap.String("cwd", cwd))
	}
	s.mu.Lock()
	client := &ToolClient{srv: s, caps: s.clientCaps, v2: s.version == ProtocolVersion2}
	s.mu.Unlock()
	var describe func(history.ToolCall, *history.Message) ToolCallDisplay
	if s.opts.SessionTools != nil {
		set, err := s.opts.SessionTools(ToolSession{Cwd: cwd, AdditionalDirectories: slices.Clone(at.dirs), Client: client})
		if err != nil {
			return invalidParams(`field "cwd": %v`, err)
		}
		cfg.Tools = append(slices.Clip(cfg.Tools), set.Tools...)
		describe = set.Describe
	}
	var (
		sess *session.Session
		err  error
	)
	if id == "" {
		cfg.Cwd = cwd
		sess, err = session.New(ctx, cfg)
	} else {
		sess, err = session.Open(ctx, cfg) // an existing session only
	}
	var leased *history.LeaseError
	switch {
	case errors.As(err, &leased):
		return servedElsewhere(leased)
	case errors.Is(err, history.ErrNotFound):
		return unknownSession(id, "no such session is stored")
	case err != nil:
		return fmt.Errorf("open session: %w", err)
	}
	a := newAgentSession(s, sess)
	a.describe = describe
	a.cwd = cwd
	if v, ok := a.surf.(v2Surface); ok {
		v.cwd = cwd
		a.surf = v
	}
	client.a.Store(a)
	if err := a.start(replay, func() { first(a); a.sendEarlyNotices(client) }); err != nil {
		_ = sess.Close()
		return fmt.Errorf("open session: %w", err)
	}
	s.mu.Lock()
	s.sessions[sess.ID()] = a
	s.opening--
	registered = true
	s.mu.Unlock()
	return nil
}

// forget unregisters a, unless another session took its place.
func (s *server) forget(a *agentSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[a.id] == a {
		delete(s.sessions, a.id)
	}
}

// opened is what an ACP session queues first once it is open: the response
// that opened it, then the commands it offers.
func opened(resp *jsonrpc.Responder, result any) func(a *agentSession) {
	return func(a *agentSession) {
		a.respond(resp, result, nil)
		a.advertise()
	}
}

// replayed is opened after a v2 replay: the session's current state goes
// before the response.
func replayed(resp *jsonrpc.Responder, result any) func(a *agentSession) {
	return func(a *agentSession) {
		a.currentState()
		opened(resp, result)(a)
	}
}

func (s *server) newSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p NewSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.create(ctx, place{p.Cwd, p.AdditionalDirectories, len(p.McpServers)}, func(id string) any { return NewSessionResponse{SessionID: id} })
}

// create opens a new session at at; its response is result(its ID).
func (s *server) create(ctx context.Context, at place, result func(id string) any) (any, error) {
	if at.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	resp := jsonrpc.Defer(ctx)
	err := s.open(ctx, "", at, false, func(a *agentSession) { opened(resp, result(a.id))(a) })
	if err != nil {
		return nil, resp.Respond(nil, err)
	}
	return nil, nil
}

// attach handles session/load (replay) and session/resume (no replay): a
// session open on this connection is attached on its owner goroutine, one
// that is not is opened from the store.
func (s *server) attach(ctx context.Context, id string, at place, replay bool, result any) (any, error) {
	first := opened
	if replay && s.v2() {
		first = replayed
	}
	if id == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	if at.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	s.mu.Lock()
	a, open := s.sessions[id]
	s.mu.Unlock()
	if !open {
		resp := jsonrpc.Defer(ctx)
		if err := s.open(ctx, id, at, replay, first(resp, result)); err != nil {
			return nil, resp.Respond(nil, err)
		}
		return nil, nil
	}
	// Open here, maybe busy: the owner replays the timeline as the session
	// stands at the cut, and the live updates continue exactly after it.
	resp := jsonrpc.Defer(ctx)
	return a.admit(ctx, resp, func() {
		if replay {
			if err := a.resubscribe(0, true); err != nil {
				a.respond(resp, nil, err)
				return
			}
		}
		first(resp, result)(a)
	})
}

func (s *server) loadSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p LoadSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, len(p.McpServers)}, true, LoadSessionResponse{})
}

func (s *server) resumeSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p ResumeSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, len(p.McpServers)}, false, ResumeSessionResponse{})
}

// closeSession handles session/close: the session is forgotten at once (a
// later request for it gets the unknown-session error), then closed as
// session/cancel and Session.Close do it; the response follows every update
// of what the close finished.
func (s *server) closeSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p CloseSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	s.forget(a)
	resp := jsonrpc.Defer(ctx)
	if !a.do(ctx, func() {
		a.closing = resp
		a.sess.Interrupt()
		_ = a.sess.Close() // the loop never waits for this goroutine
	}) {
		<-a.done // closed already, or closing: it was closed when this returns
		return nil, resp.Respond(CloseSessionResponse{}, nil)
	}
	return nil, nil
}

// promptText joins the prompt's content into the text of a user message.
func promptText(blocks []ContentBlock) (string, error) {
	var parts []string
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, fmt.Sprintf("[%s](%s)", b.ResourceLink.Name, b.ResourceLink.URI))
		case b.Resource != nil && b.Resource.Resource.Text != nil:
			r := b.Resource.Resource
			parts = append(parts, fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", r.URI, *r.Text))
		default:
			return "", invalidParams("field \"prompt\": item %d: content of type %q is not supported by this agent", i, b.Type())
		}
	}
	text := strings.Join(parts, "\n")
	if strings.TrimSpace(text) == "" {
		return "", invalidParams(`field "prompt": the prompt has no text`)
	}
	return text, nil
}

// slashCommand recognizes "/name [input]".
func slashCommand(text, name string) (input string, ok bool) {
	t := strings.TrimSpace(text)
	rest, found := strings.CutPrefix(t, "/"+name)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t') {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// prompt handles session/prompt. The command is admitted on the session's
// owner goroutine, which answers the request once the command has finished
// and every update it caused is queued before the response (§7.3); a
// $/cancel_request cancels that command only and is answered
// RequestCancelled after its updates.
func (s *server) prompt(ctx context.Context, req *jsonrpc.Request) (any, error) {
	return s.admitPrompt(ctx, req, func(a *agentSession, resp *jsonrpc.Responder, text string) {
		w := &waitingPrompt{resp: resp}
		var id string
		if cid, _, cancelled, ok := slashPrompt(ctx, a, resp, text, w); ok {
			if cid == "" {
				return // refused; the error response is queued
			}
			id = cid
			w.answer = func(ev session.Payload) (any, error) {
				if cancelled(ev) {
					return PromptResponse{StopReason: StopCancelled}, nil
				}
				return PromptResponse{StopReason: StopEndTurn}, nil
			}
		} else {
			h, err := a.sess.Prompt(ctx, session.PromptRequest{Text: text})
			if err != nil {
				a.respond(resp, nil, sessionError(err))
				return
			}
			id, w.cancel = h.ID(), h.Cancel
			w.answer = func(ev session.Payload) (any, error) {
				return turnResponse(turnResult(h, ev))
			}
		}
		a.prompts[id] = w
		w.stop = context.AfterFunc(ctx, func() {
			a.post(func() {
				if w := a.prompts[id]; w != nil {
					w.cancelled = true
					w.cancel() // this prompt's command only: removed if queued, stopped if running
				}
			})
		})
	})
}

// slashPrompt admits a /compact or /uncompact prompt, of either version, on
// a's session. ok is false when text is no such command. Otherwise id is the
// command's ID ("" when the session refused it: the error response is then
// queued), name the command's, w's kind and cancel are set, and cancelled
// tells from the event that ends the command whether it ended cancelled.
func slashPrompt(ctx context.Context, a *agentSession, resp *jsonrpc.Responder, text string, w *waitingPrompt) (id, name string, cancelled func(session.Payload) bool, ok bool) {
	if _, ok := slashCommand(text, UncompactCommand); ok {
		h, err := a.sess.Uncompact(ctx, session.UncompactRequest{})
		if err != nil {
			a.respond(resp, nil, sessionError(err))
			return "", UncompactCommand, nil, true
		}
		w.uncompact, w.cancel = true, h.Cancel
		return h.ID(), UncompactCommand, func(session.Payload) bool { return false }, true
	}
	instr, ok := slashCommand(text, CompactCommand)
	if !ok {
		return "", "", nil, false
	}
	h, err := a.sess.Compact(ctx, session.CompactRequest{Instructions: instr})
	if err != nil {
		a.respond(resp, nil, sessionError(err))
		return "", CompactCommand, nil, true
	}
	w.compact, w.cancel = true, h.Cancel
	return h.ID(), CompactCommand, func(ev session.Payload) bool {
		res := compactResult(h, ev)
		return res != nil && res.Cancelled
	}, true
}

// admitPrompt decodes and checks a session/prompt (of either version) and
// runs admit on the session's owner goroutine with the request's deferred
// Responder and the prompt's text.
func (s *server) admitPrompt(ctx context.Context, req *jsonrpc.Request, admit func(a *agentSession, resp *jsonrpc.Responder, text string)) (any, error) {
	var p PromptRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	text, err := promptText(p.Prompt)
	if err != nil {
		return nil, err
	}
	resp := jsonrpc.Defer(ctx)
	return a.admit(ctx, resp, func() { admit(a, resp, text) })
}

// compactResult is the result of a compaction command: the one the event
// that ended it carries (ev), or else the Handle's.
func compactResult(h *session.Handle[session.CompactResult], ev session.Payload) *session.CompactResult {
	if e, ok := ev.(*session.CompactionEvent); ok {
		return e.Result
	}
	return h.Result()
}

// turnResult is compactResult for a prompt.
func turnResult(h *session.Handle[session.TurnResult], ev session.Payload) *session.TurnResult {
	if e, ok := ev.(*session.TurnEvent); ok {
		return e.Result
	}
	return h.Result()
}

// turnResponse is the session/prompt response of a finished turn.
func turnResponse(res *session.TurnResult) (any, error) {
	switch {
	case res == nil:
		return nil, jsonrpc.NewError(jsonrpc.InternalError, "the turn has no result")
	case res.Err == nil:
		return PromptResponse{StopReason: StopEndTurn}, nil
	case errors.Is(res.Err, session.ErrCancelled), errors.Is(res.Err, session.ErrClosed):
		return PromptResponse{StopReason: StopCancelled}, nil
	case errors.Is(res.Err, session.ErrTooManySteps):
		return PromptResponse{StopReason: StopMaxTurnRequests}, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.InternalError, "the turn failed: %v", res.Err)
}

// sessionError maps an admission error of a session to a JSON-RPC error.
func sessionError(err error) error {
	switch {
	case errors.Is(err, session.ErrInvalid):
		return invalidParams("%v", err)
	case errors.Is(err, session.ErrQueueFull):
		return jsonrpc.NewError(jsonrpc.InternalError, "%v", err)
	}
	return err
}

// CompactParams are the params of the _sessionkit/compact request.
type CompactParams struct {
	SessionID    string `json:"sessionId"`
	Instructions string `json:"instructions,omitzero"`
	// Through, when set, is the ID of the Active message the compaction
	// archives up to and including (session.CompactRequest.Through); an ID
	// not in Active is refused with invalid params.
	Through string `json:"through,omitzero"`
}

// UncompactParams are the params of the _sessionkit/uncompact request.
type UncompactParams struct {
	SessionID string `json:"sessionId"`
}

// UncompactAccepted is the result of _sessionkit/uncompact: the undo is
// queued.
type UncompactAccepted struct {
	UncompactID string `json:"uncompactId"`
}

// UncompactFinishedParams are the params of the
// _sessionkit/uncompact_finished notification.
type UncompactFinishedParams struct {
	SessionID   string `json:"sessionId"`
	UncompactID string `json:"uncompactId"`
	SegmentID   string `json:"segmentId,omitzero"`
	Restored    int    `json:"restored"`
	Error       string `json:"error,omitzero"` // why nothing was undone
}

// CompactAccepted is the result of _sessionkit/compact: the compaction is
// queued.
type CompactAccepted struct {
	CompactID string `json:"compactId"`
}

// CompactFinishedParams are the params of the _sessionkit/compact_finished
// notification.
type CompactFinishedParams struct {
	SessionID string     `json:"sessionId"`
	CompactID string     `json:"compactId"`
	Result    WireResult `json:"result"`
}

// WireResult is a session.CompactResult on the wire.
type WireResult struct {
	CompactID    string       `json:"compactId"`
	Success      bool         `json:"success"`
	Compacted    bool         `json:"compacted"`
	Reason       string       `json:"reason"`
	Error        string       `json:"error,omitzero"`
	Trigger      string       `json:"trigger"`
	Cancelled    bool         `json:"cancelled,omitzero"`
	Segment      *WireSegment `json:"segment,omitzero"`
	InputTokens  int          `json:"inputTokens,omitzero"` // usage of the summary call
	OutputTokens int          `json:"outputTokens,omitzero"`
	// ContextGrew and Note are CompactResult's: a committed compaction that
	// did not make the context smaller, in words.
	ContextGrew bool   `json:"contextGrew,omitzero"`
	Note        string `json:"note,omitzero"`
}

// WireSegment is a history.Segment on the wire.
type WireSegment struct {
	ID           string        `json:"id"`
	CompactID    string        `json:"compactId"`
	Trigger      string        `json:"trigger"`
	Summary      string        `json:"summary"`
	Instructions string        `json:"instructions,omitzero"`
	Messages     []WireMessage `json:"messages"`
	CreatedAt    time.Time     `json:"createdAt"`
	StartedAt    time.Time     `json:"startedAt,omitzero"`
	InputTokens  int           `json:"inputTokens,omitzero"`
	OutputTokens int           `json:"outputTokens,omitzero"`
	Position     int64         `json:"position"`
}

// WireMessage is a history.Message on the wire.
type WireMessage struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Text       string         `json:"text"`
	ToolCalls  []WireToolCall `json:"toolCalls,omitzero"`
	ToolCallID string         `json:"toolCallId,omitzero"`
	Steer      bool           `json:"steer,omitzero"`
	CreatedAt  time.Time      `json:"createdAt"`
}

// WireToolCall is a history.ToolCall on the wire.
type WireToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitzero"`
}

func wireResult(r *session.CompactResult) WireResult {
	w := WireResult{
		CompactID: r.CompactID, Success: r.Success, Compacted: r.Compacted, Reason: string(r.Reason),
		Error: r.Error, Trigger: string(r.Trigger), Cancelled: r.Cancelled,
		InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
		ContextGrew: r.ContextGrew, Note: r.Note,
	}
	if g := r.Segment; g != nil {
		w.Segment = &WireSegment{
			ID: g.ID, CompactID: g.CompactID, Trigger: string(g.Trigger), Summary: g.Summary, Instructions: g.Instructions,
			CreatedAt: g.CreatedAt, StartedAt: g.StartedAt, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens,
			Position: g.Position, Messages: convertAll(g.Messages, wireMessage),
		}
	}
	return w
}

// wireMessage and WireMessage.message convert a message to and from the
// wire (WireToolCall has history.ToolCall's fields, so it converts as is).
func wireMessage(m history.Message) WireMessage {
	return WireMessage{
		ID: m.ID, Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt,
		ToolCalls: nilIfEmpty(convertAll(m.ToolCalls, func(c history.ToolCall) WireToolCall { return WireToolCall(c) })),
	}
}

func (m WireMessage) message() history.Message {
	return history.Message{
		ID: m.ID, Role: history.Role(m.Role), Text: m.Text, ToolCallID: m.ToolCallID, Steer: m.Steer, CreatedAt: m.CreatedAt,
		ToolCalls: nilIfEmpty(convertAll(m.ToolCalls, func(c WireToolCall) history.ToolCall { return history.ToolCall(c) })),
	}
}

// convertAll returns conv of each of in (never nil).
func convertAll[F, T any](in []F, conv func(F) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// Result converts w back to a session.CompactResult.
func (w *WireResult) Result() session.CompactResult {
	r := session.CompactResult{
		CompactID: w.CompactID, Success: w.Success, Compacted: w.Compacted, Reason: session.CompactReason(w.Reason),
		Error: w.Error, Trigger: history.Trigger(w.Trigger), Cancelled: w.Cancelled,
		Usage:       provider.Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens},
		ContextGrew: w.ContextGrew, Note: w.Note,
	}
	if g := w.Segment; g != nil {
		r.Segment = &history.Segment{
			ID: g.ID, CompactID: g.CompactID, Trigger: history.Trigger(g.Trigger), Summary: g.Summary, Instructions: g.Instructions,
			CreatedAt: g.CreatedAt, StartedAt: g.StartedAt, InputTokens: g.InputTokens, OutputTokens: g.OutputTokens,
			Position: g.Position, Messages: convertAll(g.Messages, WireMessage.message),
		}
	}
	return r
}

func (s *server) compact(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p CompactParams
	return s.startCommand(ctx, req, &p, &p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Compact(context.Background(), session.CompactRequest{Instructions: p.Instructions, Through: p.Through}))
	}, func(id string) any { return CompactAccepted{CompactID: id} })
}

func (s *server) uncompact(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p UncompactParams
	return s.startCommand(ctx, req, &p, &p.SessionID, func(sess *session.Session) (string, error) {
		return handleID(sess.Uncompact(context.Background(), session.UncompactRequest{}))
	}, func(id string) any { return UncompactAccepted{UncompactID: id} })
}

// startCommand handles an extension command of a session
// (_sessionkit/compact, _sessionkit/uncompact): it decodes req's params into
// params, whose session ID is then *sessionID, and starts the command on the
// session's owner, so that the answer, accepted(the command's ID), precedes
// every update of the command and the owner knows its result is to be
// reported.
func (s *server) startCommand(ctx context.Context, req *jsonrpc.Request, params any, sessionID *string, start func(*session.Session) (string, error), accepted func(id string) any) (any, error) {
	if err := jsonrpc.UnmarshalParams(req.Params, params); err != nil {
		return nil, err
	}
	a, err := s.session(*sessionID)
	if err != nil {
		return nil, err
	}
	resp := jsonrpc.Defer(ctx)
	return a.admit(ctx, resp, func() {
		id, err := start(a.sess)
		if err != nil {
			a.respond(resp, nil, sessionError(err))
			return
		}
		a.extension[id] = true
		a.respond(resp, accepted(id), nil)
	})
}

// handleID is the ID of the command h a session call started, or its error.
func handleID[T any](h *session.Handle[T], err error) (string, error) {
	if err != nil {
		return "", err
	}
	return h.ID(), nil
}
