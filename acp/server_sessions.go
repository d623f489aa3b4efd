package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/internal/jsonrpc"
	"github.com/sessionkit/sessionkit/session"
)

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

// listSessions handles session/list: one page of the store's listing,
// newest first, optionally of one cwd.
func (s *server) listSessions(ctx context.Context, p schema.ListSessionsRequest) (any, error) {
	page, err := s.store.ListSessions(ctx, history.ListOptions{Cwd: p.Cwd, Cursor: p.Cursor})
	if errors.Is(err, history.ErrInvalid) {
		return nil, invalidParams("%v", err)
	}
	if err != nil {
		return nil, err
	}
	resp := schema.ListSessionsResponse{Sessions: make([]schema.SessionInfo, 0, len(page.Sessions)), NextCursor: page.Next}
	for _, si := range page.Sessions {
		info := schema.SessionInfo{SessionID: si.ID, Cwd: si.Cwd, Title: si.Title}
		if !si.UpdatedAt.IsZero() {
			info.UpdatedAt = si.UpdatedAt.UTC().Format(time.RFC3339Nano)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	return resp, nil
}

// place is where the client opens a session: its directories, and the
// MCP servers it asked for.
type place struct {
	cwd    string
	dirs   []string
	mcp    []schema.McpServer
	prompt session.ClientPrompt // the client's systemPrompt; zero = none sent
}

// placeOf is the place a request names: its cwd, additional directories,
// MCP servers and system prompt (clientPrompt).
func placeOf(cwd string, dirs []string, mcp []schema.McpServer, prompt *schema.SystemPrompt) (place, error) {
	p, err := clientPrompt(prompt)
	if err != nil {
		return place{}, err
	}
	return place{cwd, dirs, mcp, p}, nil
}

// placeOfV2 is placeOf for a v2 request, whose mcpServers are v2's
// (mcpServersV2, checked first).
func placeOfV2(cwd string, dirs []string, mcp json.RawMessage, prompt *schema.SystemPrompt) (place, error) {
	servers, err := mcpServersV2(mcp)
	if err != nil {
		return place{}, err
	}
	return placeOf(cwd, dirs, servers, prompt)
}

// opener is a session being opened: what open prepared on the handler's
// goroutine for startSession.
type opener struct {
	id     string
	cfg    session.Config
	surf   surface
	client *ToolClient
	set    Toolset
	reader promptReader
	files  []string // the project instruction files read
}

// open starts a session.Session for id ("" = new) and its ACP session,
// whose owner answers o before anything else, and registers it. The
// connection's state is read here, on the handler's goroutine, and so are
// the session's tools made (ServerOptions.SessionTools). With background
// the session is then opened on a goroutine of its own, which answers o
// (an error included), and open returns: a session/load or session/resume
// that waits for the store (a lease to expire, a lock another process
// holds) keeps no other request of the connection waiting. Until it is
// registered, requests naming the session are refused (loadingSession).
func (s *server) open(ctx context.Context, id string, at place, o opening, background bool) error {
	if err := s.reserve(id); err != nil {
		return err
	}
	op, err := s.prepare(id, at)
	if err != nil {
		s.release()
		return err
	}
	if files := op.files; len(files) > 0 {
		result := o.result
		o.result = func(id string) any { return withInstructions(result(id), files) }
	}
	if !background {
		return s.startSession(ctx, op, o)
	}
	s.mu.Lock()
	s.loading[id] = true
	s.mu.Unlock()
	s.opens.Add(1)
	go func() {
		defer s.opens.Done()
		err := s.startSession(ctx, op, o)
		s.mu.Lock()
		delete(s.loading, id)
		s.mu.Unlock()
		if err != nil {
			_ = o.resp.Respond(nil, err)
		}
	}()
	return nil
}

// prepare makes what opening session id at at needs: its configuration,
// its ToolClient and its tools. Its error ends nothing it did not make.
func (s *server) prepare(id string, at place) (*opener, error) {
	cwd := at.cwd
	cfg := s.opts.Session
	cfg.ID = id
	cfg.Store = s.store
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	s.defaultSettings(&cfg)
	if err := s.checkMcp(at.mcp); err != nil {
		return nil, err
	}
	if len(at.mcp) > 0 && s.opts.SessionTools == nil {
		// Never silently: the client asked for servers nothing here starts.
		s.log.Warn(mcpNote(at.mcp), zap.String("cwd", cwd))
	}
	conn := s.negotiated // this session's copy
	op := &opener{id: id, surf: conn.surface(cwd), client: &ToolClient{caps: conn.clientCaps, surf: conn.surface(cwd)},
		reader: promptReader{prov: cfg.Provider, dirs: append([]string{cwd}, at.dirs...)}}
	if s.opts.SessionTools != nil {
		set, err := s.opts.SessionTools(ToolSession{Cwd: cwd, AdditionalDirectories: slices.Clone(at.dirs), McpServers: slices.Clone(at.mcp), Client: op.client})
		if err != nil {
			op.client.dropEarly() // never sent: later notices get ErrNoClient
			return nil, invalidParams(`field "cwd": %v`, err)
		}
		op.set = set
		cfg.Tools = append(slices.Clip(cfg.Tools), set.Tools...)
		op.reader.readTool = set.ReadFile
	}
	if op.id == "" {
		cfg.Cwd = cwd
	}
	cfg.ClientPrompt = at.prompt
	op.files = s.readInstructions(&cfg, id, at)
	op.cfg = cfg
	return op, nil
}

// startSession opens the session op prepared, with the slot open
// reserved, and registers it; its owner answers o. On an error the slot is
// given back and the session's tools end.
func (s *server) startSession(ctx context.Context, op *opener, o opening) error {
	registered, started, owned := false, false, false
	defer func() {
		if !registered {
			s.release()
		}
		if !owned && op.set.Close != nil {
			op.set.Close() // the session did not open: its tools end here
		}
		if !started {
			op.client.dropEarly() // never sent: later notices get ErrNoClient
		}
	}()
	var (
		sess *session.Session
		err  error
	)
	if op.id == "" {
		sess, err = session.New(ctx, op.cfg)
	} else {
		sess, err = session.Open(ctx, op.cfg) // an existing session only
	}
	switch {
	case errors.Is(err, history.ErrLeased) || errors.Is(err, history.ErrBusy):
		return refusedByStore(err)
	case errors.Is(err, history.ErrNotFound):
		return unknownSession(op.id, "no such session is stored")
	case err != nil:
		return fmt.Errorf("open session: %w", err)
	}
	// The plan tool's calls: Config.Plan's, or a stored session's when no
	// tool of the application has the name.
	plans := op.cfg.Plan || !slices.ContainsFunc(op.cfg.Tools, func(t session.Tool) bool { return t.Name == session.PlanTool })
	a := newAgentSession(s, sess, op.surf, op.set, op.reader, plans)
	owned = true
	op.client.a.Store(a)
	o.client = op.client
	// Registered before its owner starts: an owner that ends at once (it
	// lost its lease on a shared store) forgets it as it exits, rather than
	// leave a session that ended registered, holding a slot. No other
	// request reaches it before this one is answered: the connection runs
	// handlers one at a time, and refuses requests for a session being
	// opened in the background (loadingSession).
	s.mu.Lock()
	s.sessions[sess.ID()] = a
	s.opening--
	registered = true
	s.mu.Unlock()
	if err := a.start(o); err != nil {
		_ = sess.Close()
		s.forget(a) // its owner did too, if it ran
		return fmt.Errorf("open session: %w", err)
	}
	started = true
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

func (s *server) newSession(ctx context.Context, p schema.NewSessionRequest) (any, error) {
	at, err := placeOf(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, at, func(id string) any { return schema.NewSessionResponse{SessionID: id} })
}

// create opens a new session at at; its response is result(its ID).
func (s *server) create(ctx context.Context, at place, result func(id string) any) (any, error) {
	if at.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	resp := jsonrpc.Defer(ctx)
	if err := s.open(ctx, "", at, opening{resp: resp, result: result, created: true}, false); err != nil {
		return nil, resp.Respond(nil, err)
	}
	return nil, nil
}

// attach handles session/load (replay) and session/resume (no replay): a
// session open on this connection is attached by its owner, one that is not
// is opened from the store.
func (s *server) attach(ctx context.Context, id string, at place, replay bool, result any) (any, error) {
	if id == "" {
		return nil, invalidParams(`field "sessionId": must not be empty`)
	}
	if at.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	o := opening{resp: jsonrpc.Defer(ctx), result: func(string) any { return result }, replay: replay}
	s.mu.Lock()
	a, open := s.sessions[id]
	loading := s.loading[id]
	s.mu.Unlock()
	switch {
	case loading:
		return nil, o.resp.Respond(nil, loadingSession(id))
	case open && !at.prompt.IsZero() && a.sess.Settings().ClientPrompt != at.prompt:
		return nil, o.resp.Respond(nil, invalidParams(`field "systemPrompt": session %s is open on this connection with another system prompt: close it first`, id))
	case open:
		return a.attach(ctx, o)
	}
	if err := s.open(ctx, id, at, o, true); err != nil {
		return nil, o.resp.Respond(nil, err)
	}
	return nil, nil
}

func (s *server) loadSession(ctx context.Context, p schema.LoadSessionRequest) (any, error) {
	at, err := placeOf(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, at, true, schema.LoadSessionResponse{})
}

func (s *server) resumeSession(ctx context.Context, p schema.ResumeSessionRequest) (any, error) {
	at, err := placeOf(p.Cwd, p.AdditionalDirectories, p.McpServers, p.SystemPrompt)
	if err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, at, false, schema.ResumeSessionResponse{})
}

// closeSession handles session/close: the session is forgotten at once (a
// later request for it gets the unknown-session error), then closed as
// session/cancel and Session.Close do it; the response follows every update
// of what the close finished.
func (s *server) closeSession(ctx context.Context, p schema.CloseSessionRequest) (any, error) {
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	s.forget(a)
	return a.close(ctx, jsonrpc.Defer(ctx))
}
