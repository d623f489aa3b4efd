package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionkit/sessionkit/internal/textcut"
	"github.com/sessionkit/sessionkit/session"
)

// Server configures one MCP server: either a stdio server (Command) or an
// HTTP server (URL), never both.
type Server struct {
	// Name names the server: in its tools' names (mcp__<Name>__<tool>) and
	// in every error about it. Required, unique within a Connect.
	Name string

	// Command is the program of a stdio server (looked up in PATH), Args
	// its arguments, Env "KEY=value" entries added to the environment it
	// starts with ([Options.Environ]; a later entry wins), Dir its working
	// directory ("" = this program's).
	Command string
	Args    []string
	Env     []string
	Dir     string

	// URL is the endpoint of a server over the streamable HTTP transport
	// (http or https); Headers are sent with every request.
	URL     string
	Headers http.Header

	// Stderr receives what a stdio server writes to its stderr, for the
	// caller's log; nil = kept only in the tail [ServerError] quotes. It
	// is written from one goroutine of the Set; a Writer shared by several
	// servers must be safe for concurrent use.
	Stderr io.Writer
}

// Options bound what the servers may give and how long they may take.
type Options struct {
	// MaxOutput bounds a tool result in bytes; 0 = DefaultMaxOutput.
	// What is read of an HTTP server's answer to a tool call (a response
	// body, or each event of an SSE stream) is bounded too, while it is
	// read, to MaxOutput plus 64 KiB (any other answer to 16 MiB): a
	// larger answer is not read to its end, and the call fails saying so
	// (the server's session goes on).
	MaxOutput int
	// MaxDescription bounds a tool's description in bytes; 0 =
	// DefaultMaxDescription.
	MaxDescription int
	// MaxSchema bounds a tool's input schema in bytes (a tool with a
	// larger one is left out, with a note); 0 = DefaultMaxSchema.
	MaxSchema int
	// MaxTools bounds the tools taken from one server (the rest are left
	// out, with a note); 0 = DefaultMaxTools.
	MaxTools int
	// StartTimeout bounds the start of each server: the process or the
	// connection, the handshake and the listing of its tools; 0 =
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is how long Close waits for a stdio server after closing
	// its stdin, and again after SIGTERM, before SIGKILL; 0 =
	// DefaultStopGrace.
	StopGrace time.Duration
	// Environ is the environment a stdio server starts with, before its
	// Server.Env; nil = this program's (os.Environ()), credentials
	// included: a program that holds secrets a server should not see
	// passes a filtered copy.
	Environ []string
	// HTTPClient makes the requests to HTTP servers; nil = a client of
	// http.DefaultTransport. Its Transport is wrapped (in a copy of the
	// client) to send Server.Headers and to bound what is read.
	HTTPClient *http.Client
	// OnExit, when set, is called once for each server that ends after it
	// started and before Close (a stdio server that exited, an
	// HTTP session that broke), from a goroutine of the Set. It must not
	// call Close.
	OnExit func(*ServerError)
}

// Defaults of Options.
const (
	DefaultMaxOutput      = 64 << 10
	DefaultMaxDescription = 2 << 10
	DefaultMaxSchema      = 64 << 10
	DefaultMaxTools       = 128
	DefaultStartTimeout   = 30 * time.Second
	DefaultStopGrace      = 2 * time.Second
)

func (o Options) withDefaults() Options {
	o.MaxOutput = cmp.Or(max(o.MaxOutput, 0), DefaultMaxOutput)
	o.MaxDescription = cmp.Or(max(o.MaxDescription, 0), DefaultMaxDescription)
	o.MaxSchema = cmp.Or(max(o.MaxSchema, 0), DefaultMaxSchema)
	o.MaxTools = cmp.Or(max(o.MaxTools, 0), DefaultMaxTools)
	o.StartTimeout = cmp.Or(max(o.StartTimeout, 0), DefaultStartTimeout)
	o.StopGrace = cmp.Or(max(o.StopGrace, 0), DefaultStopGrace)
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return o
}

// Errors of the package; match them with errors.Is.
var (
	// ErrConfig: the list of servers given to Connect is malformed
	// (nothing was started).
	ErrConfig = errors.New("mcp: invalid server configuration")
	// ErrEnded: a server ended (exited, or its connection broke) while
	// the Set was open.
	ErrEnded = errors.New("the server has ended")
	// ErrClosed: the Set was closed.
	ErrClosed = errors.New("the MCP servers were closed")
)

// ServerError says which server failed and why: it failed to start, or
// it ended while the Set was open (Err wraps ErrEnded), or the Set was
// closed (Err is ErrClosed).
type ServerError struct {
	Server string // the Name of the server
	Err    error
	// Stderr is the end of what a stdio server wrote to its stderr
	// (at most 1 KiB, its lines joined by " | ", control characters
	// removed); "" when it wrote nothing or is an HTTP server.
	Stderr string
}

// Error says which server and why in one line a user may be shown:
// what came from the server is cleaned of control characters, and the
// whole is at most 4 KiB.
func (e *ServerError) Error() string {
	msg := fmt.Sprintf("mcp server %q: %v", e.Server, e.Err)
	if e.Stderr != "" {
		msg += "; its stderr ends: " + e.Stderr
	}
	return strings.ReplaceAll(clean(msg, maxErrorLen), "\n", " ")
}

// maxErrorLen bounds ServerError.Error.
const maxErrorLen = 4 << 10

// Unwrap returns Err.
func (e *ServerError) Unwrap() error { return e.Err }

// Status is the state of one server of a Set.
type Status struct {
	Name  string
	Tools []string // the names its tools were given, in the server's order
	// Notes say what was left out of the server's list of tools and why
	// (a tool without a name, a repeated name, a schema too large or not
	// an object, tools beyond MaxTools).
	Notes []string
	Err   *ServerError // nil = running
}

// Set is the servers of one Connect and their tools. Its methods are safe
// for concurrent use.
type Set struct {
	servers []*server
	tools   []session.Tool
	origin  map[string]Origin // by tool name
	close   sync.Once
}

// Origin is where a tool of a Set comes from: its server's Name and the
// tool's own name on that server.
type Origin struct {
	Server string
	Tool   string
}

// Origin returns where the tool named name comes from; ok is false when
// no tool of the Set has that name.
func (s *Set) Origin(name string) (o Origin, ok bool) {
	o, ok = s.origin[name]
	return o, ok
}

// Connect is Options{}.Connect.
func Connect(ctx context.Context, servers []Server) (*Set, error) {
	return Options{}.Connect(ctx, servers)
}

// Connect starts the servers, all at once, and lists their tools. A
// malformed list (a server without a name, two with one name, a server
// with both a command and a URL or neither, a URL that is not http or
// https, an Env entry without '=') is an error wrapping ErrConfig that
// names each bad entry, and nothing is started. A server that fails to
// start does not fail Connect: the Set says so ([Set.Failed]) and has the
// tools of the others. When ctx ends before every server has started,
// Connect ends those that did and returns ctx's error.
func (o Options) Connect(ctx context.Context, servers []Server) (*Set, error) {
	if err := check(servers); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	set := &Set{}
	var wg sync.WaitGroup
	for _, cfg := range servers {
		s := &server{cfg: cfg, o: o, ended: make(chan struct{}), closing: make(chan struct{}), watched: make(chan struct{})}
		s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
		set.servers = append(set.servers, s)
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		set.Close()
		return nil, context.Cause(ctx)
	}
	var listed []listedTool
	for i, s := range set.servers {
		for _, t := range s.listed {
			listed = append(listed, listedTool{server: i, serverName: s.cfg.Name, tool: t})
		}
	}
	names := toolNames(listed)
	set.origin = make(map[string]Origin, len(listed))
	for i, lt := range listed {
		s := set.servers[lt.server]
		set.origin[names[i]] = Origin{Server: s.cfg.Name, Tool: clean(lt.tool.Name, s.o.MaxDescription)}
		s.names = append(s.names, names[i])
		set.tools = append(set.tools, s.tool(names[i], lt.tool))
	}
	for _, s := range set.servers {
		s.listed = nil
	}
	return set, nil
}

// check validates the configuration of every server.
func check(servers []Server) error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range servers {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("server %d (%q): %s", i+1, s.Name, fmt.Sprintf(format, args...)))
		}
		switch {
		case strings.TrimSpace(s.Name) == "":
			bad("no name")
		case seen[s.Name]:
			bad("a second server of this name")
		}
		seen[s.Name] = true
		switch {
		case s.Command != "" && s.URL != "":
			bad("both a command and a URL; a server has one of them")
		case s.Command == "" && s.URL == "":
			bad("neither a command nor a URL")
		case s.URL != "":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("URL %q is not an http or https URL", s.URL)
			}
		}
		for _, e := range s.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				bad("Env entry %q is not KEY=value", e)
			}
		}
		if s.Command == "" && (len(s.Args) > 0 || len(s.Env) > 0 || s.Dir != "") {
			bad("Args, Env and Dir are for a command")
		}
		if s.URL == "" && len(s.Headers) > 0 {
			bad("Headers are for a URL")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// Tools returns the tools of the servers that started, in the order of
// the servers given to Connect and, within one, in the server's order.
func (s *Set) Tools() []session.Tool { return slices.Clone(s.tools) }

// Servers returns the state of every server, in the order given to
// Connect.
func (s *Set) Servers() []Status {
	out := make([]Status, len(s.servers))
	for i, sv := range s.servers {
		out[i] = Status{Name: sv.cfg.Name, Tools: slices.Clone(sv.names), Notes: slices.Clone(sv.notes), Err: sv.endedErr()}
	}
	return out
}

// Failed returns the errors of the servers that failed to start, in the
// order given to Connect; nil when every one started.
func (s *Set) Failed() []*ServerError {
	var out []*ServerError
	for _, sv := range s.servers {
		if sv.cs == nil {
			out = append(out, sv.err)
		}
	}
	return out
}

// Close ends every server and waits for them (a stdio server's process
// and what is left of its process group included); calls still running
// return ErrClosed. Close is idempotent and returns nil: a server that
// does not end when asked is killed.
func (s *Set) Close() error {
	s.close.Do(func() {
		var wg sync.WaitGroup
		for _, sv := range s.servers {
			wg.Go(sv.stop)
		}
		wg.Wait()
	})
	return nil
}

// server is one server of a Set. Its fields are written by start (before
// Connect returns) and then only by watch, which writes err before it
// closes ended.
type server struct {
	cfg     Server
	o       Options
	cs      *sdk.ClientSession // nil: it did not start
	proc    *process           // a stdio server's process
	ctx     context.Context    // ended by Close: the calls in flight end with it
	cancel  context.CancelFunc
	listed  []*sdk.Tool // until Connect has named them
	names   []string
	notes   []string
	closing chan struct{} // closed by stop
	ended   chan struct{} // closed once err is set
	watched chan struct{} // closed when watch has returned (OnExit included)
	err     *ServerError
}

// endedErr returns the server's error once it has ended; nil while it runs.
func (s *server) endedErr() *ServerError {
	select {
	case <-s.ended:
		return s.err
	default:
		return nil
	}
}

// start starts the server and lists its tools; on failure it records why
// and ends whatever it started.
func (s *server) start(ctx context.Context) {
	ctx, cancel := context.WithTimeoutCause(ctx, s.o.StartTimeout, fmt.Errorf("did not start within %v", s.o.StartTimeout))
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "sessionkit", Version: "0.1.0"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	var transport sdk.Transport
	if s.cfg.Command != "" {
		p, err := startProcess(s.cfg, s.o.Environ)
		if err != nil {
			s.fail(fmt.Errorf("cannot start %s: %w", s.cfg.Command, err))
			return
		}
		s.proc = p
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: p.stdin}
	} else {
		transport = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: httpClient(s.o.HTTPClient, s.cfg.Headers, s.o.MaxOutput+responseMargin)}
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err == nil {
		err = s.list(ctx, cs)
		if err != nil {
			_ = cs.Close()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		if s.proc != nil {
			s.proc.stop(s.o.StopGrace)
			if s.proc.waitErr != nil {
				err = fmt.Errorf("%w (it exited: %v)", err, s.proc.waitErr)
			}
		}
		s.fail(err)
		return
	}
	s.cs = cs
	go s.watch()
}

func (s *server) fail(err error) {
	s.err = &ServerError{Server: s.cfg.Name, Err: err, Stderr: s.stderrTail()}
	close(s.ended)
}

func (s *server) stderrTail() string {
	if s.proc == nil {
		return ""
	}
	return s.proc.tail.String()
}

// list takes the server's tools, leaving out (with a note) what cannot be
// offered to a model.
func (s *server) list(ctx context.Context, cs *sdk.ClientSession) error {
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if t.Name == "" {
			s.note("a tool without a name was left out")
			continue
		}
		if seen[t.Name] {
			s.note(fmt.Sprintf("a second tool named %q was left out", clean(t.Name, 128)))
			continue
		}
		seen[t.Name] = true
		if len(s.listed) == s.o.MaxTools {
			s.note(fmt.Sprintf("tools beyond the first %d were left out", s.o.MaxTools))
			break
		}
		if why := checkSchema(t, s.o.MaxSchema); why != "" {
			s.note(fmt.Sprintf("tool %q was left out: %s", clean(t.Name, 128), why))
			continue
		}
		s.listed = append(s.listed, t)
	}
	return nil
}

func (s *server) note(n string) { s.notes = append(s.notes, n) }

// watch waits for the server's connection to end and records why.
func (s *server) watch() {
	defer close(s.watched)
	werr := s.cs.Wait()
	var cause error
	select {
	case <-s.closing:
		cause = ErrClosed
	default:
		switch {
		case s.proc != nil:
			<-s.proc.exited
			if s.proc.waitErr != nil {
				cause = fmt.Errorf("%w: it exited: %v", ErrEnded, s.proc.waitErr)
			} else {
				cause = fmt.Errorf("%w: it exited", ErrEnded)
			}
		case werr != nil:
			cause = fmt.Errorf("%w: %v", ErrEnded, werr)
		default:
			cause = fmt.Errorf("%w: the connection was closed", ErrEnded)
		}
	}
	if s.proc != nil {
		<-s.proc.drained
	}
	s.err = &ServerError{Server: s.cfg.Name, Err: cause, Stderr: s.stderrTail()}
	close(s.ended)
	if cause != ErrClosed && s.o.OnExit != nil {
		s.o.OnExit(s.err)
	}
}

// stop ends the server and waits for it.
func (s *server) stop() {
	s.cancel()
	if s.cs == nil {
		return // it never started; start ended what it had begun
	}
	close(s.closing)
	// Closing a stdio server's session closes its stdin, the way the
	// stdio transport ends a server; then stop waits for the process.
	_ = s.cs.Close()
	if s.proc != nil {
		s.proc.stop(s.o.StopGrace)
	}
	<-s.watched
}

// tool makes the session tool of one of the server's tools.
func (s *server) tool(name string, t *sdk.Tool) session.Tool {
	schema, _ := json.Marshal(t.InputSchema)
	schema = objectSchema(schema)
	return session.Tool{
		Name:        name,
		Description: clean(t.Description, s.o.MaxDescription),
		Parameters:  schema,
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			return s.call(ctx, t.Name, args)
		},
	}
}

// call calls the server's tool named name.
func (s *server) call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	if err := s.endedErr(); err != nil {
		return "", err
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(ErrClosed) })
	defer stop()
	res, err := s.cs.CallTool(callCtx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return "", fmt.Errorf("mcp server %q: %s: %w", s.cfg.Name, name, context.Cause(ctx))
		case s.ctx.Err() != nil:
			return "", &ServerError{Server: s.cfg.Name, Err: ErrClosed}
		}
		var answered *jsonrpc.Error
		if s.proc != nil && !errors.As(err, &answered) {
			// Not the server's answer but a broken connection: say why
			// the server ended, once watch knows (a stdio server's exit
			// status and stderr).
			t := time.NewTimer(s.o.StopGrace)
			defer t.Stop()
			select {
			case <-s.ended:
				return "", s.err
			case <-t.C:
			}
		}
		return "", &ServerError{Server: s.cfg.Name, Err: fmt.Errorf("%s: %w", name, err)}
	}
	// What the server said reaches the model and, in the call's
	// content, the editor: nothing in it may rewrite a screen.
	text := textcut.Escape(render(res, s.o.MaxDescription))
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", errors.New(textcut.Bound(text, s.o.MaxOutput))
	}
	return textcut.Bound(text, s.o.MaxOutput), nil
}

// httpClient returns c with every response bounded (a body, or each
// event of a stream: boundTransport; the answer to a tool call to max
// bytes) and h sent with every request.
func httpClient(c *http.Client, h http.Header, max int) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if len(h) > 0 {
		base = headerTransport{base: base, h: h.Clone()}
	}
	cc := *c
	cc.Transport = boundTransport{base: base, call: max}
	return &cc
}

type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		r.Header[http.CanonicalHeaderKey(k)] = slices.Clone(vs)
	}
	return t.base.RoundTrip(r)
}
