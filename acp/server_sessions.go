package acp

import (
	"context"
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
func (s *server) listSessions(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.ListSessionsRequest
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
	cwd  string
	dirs []string
	mcp  []schema.McpServer
}

// open starts a session.Session for id ("" = new) and its ACP session,
// whose owner answers o before anything else, and registers it.
func (s *server) open(ctx context.Context, id string, at place, o opening) error {
	if err := s.reserve(id); err != nil {
		return err
	}
	registered, started := false, false
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
	s.defaultSettings(&cfg)
	if err := s.checkMcp(at.mcp); err != nil {
		return err
	}
	if len(at.mcp) > 0 && s.opts.SessionTools == nil {
		// Never silently: the client asked for servers nothing here starts.
		s.log.Warn(mcpNote(at.mcp), zap.String("cwd", cwd))
	}
	conn := s.negotiated // this session's copy
	client := &ToolClient{caps: conn.clientCaps, surf: conn.surface(cwd)}
	var set Toolset
	reader := promptReader{prov: cfg.Provider, dirs: append([]string{cwd}, at.dirs...)}
	if s.opts.SessionTools != nil {
		var err error
		set, err = s.opts.SessionTools(ToolSession{Cwd: cwd, AdditionalDirectories: slices.Clone(at.dirs), McpServers: slices.Clone(at.mcp), Client: client})
		if err != nil {
			return invalidParams(`field "cwd": %v`, err)
		}
		cfg.Tools = append(slices.Clip(cfg.Tools), set.Tools...)
		reader.readTool = set.ReadFile
	}
	owned := false // by the ACP session's owner, which ends the tools with it
	defer func() {
		if !owned && set.Close != nil {
			set.Close() // the session did not open: its tools end here
		}
		if !started {
			client.dropEarly() // never sent: later notices get ErrNoClient
		}
	}()
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
	switch {
	case errors.Is(err, history.ErrLeased) || errors.Is(err, history.ErrBusy):
		return refusedByStore(err)
	case errors.Is(err, history.ErrNotFound):
		return unknownSession(id, "no such session is stored")
	case err != nil:
		return fmt.Errorf("open session: %w", err)
	}
	a := newAgentSession(s, sess, conn.surface(cwd), set, reader)
	owned = true
	client.a.Store(a)
	o.client = client
	// Registered before its owner starts: an owner that ends at once (it
	// lost its lease on a shared store) forgets it as it exits, rather than
	// leave a session that ended registered, holding a slot. No other
	// request reaches it before this one is answered: the connection runs
	// handlers one at a time.
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

func (s *server) newSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.NewSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.create(ctx, place{p.Cwd, p.AdditionalDirectories, p.McpServers}, func(id string) any { return schema.NewSessionResponse{SessionID: id} })
}

// create opens a new session at at; its response is result(its ID).
func (s *server) create(ctx context.Context, at place, result func(id string) any) (any, error) {
	if at.cwd == "" {
		return nil, invalidParams(`field "cwd": must not be empty`)
	}
	resp := jsonrpc.Defer(ctx)
	if err := s.open(ctx, "", at, opening{resp: resp, result: result, created: true}); err != nil {
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
	s.mu.Unlock()
	if open {
		return a.attach(ctx, o)
	}
	if err := s.open(ctx, id, at, o); err != nil {
		return nil, o.resp.Respond(nil, err)
	}
	return nil, nil
}

func (s *server) loadSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.LoadSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, p.McpServers}, true, schema.LoadSessionResponse{})
}

func (s *server) resumeSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.ResumeSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	return s.attach(ctx, p.SessionID, place{p.Cwd, p.AdditionalDirectories, p.McpServers}, false, schema.ResumeSessionResponse{})
}

// closeSession handles session/close: the session is forgotten at once (a
// later request for it gets the unknown-session error), then closed as
// session/cancel and Session.Close do it; the response follows every update
// of what the close finished.
func (s *server) closeSession(ctx context.Context, req *jsonrpc.Request) (any, error) {
	var p schema.CloseSessionRequest
	if err := jsonrpc.UnmarshalParams(req.Params, &p); err != nil {
		return nil, err
	}
	a, err := s.session(p.SessionID)
	if err != nil {
		return nil, err
	}
	s.forget(a)
	return a.close(ctx, jsonrpc.Defer(ctx))
}
