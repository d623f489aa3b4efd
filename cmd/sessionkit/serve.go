package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/sessionkit/sessionkit/history/postgres"
)

// serve: a local web inspector of a store (sessionkit serve). It is as
// read-only as every other command: it reads through openReader, so it
// never writes, migrates or takes a lease. Pages are server-rendered
// html/template, assets are embedded (web.go); a page of a session
// follows the session's event log through server-sent events (live.go).

// defaultServeAddr is where serve listens unless --addr says otherwise.
const defaultServeAddr = "127.0.0.1:7777"

// tokenCookie is the cookie that carries the token after a first request
// with ?token=.
const tokenCookie = "sessionkit_token"

// serveConfig is what serve was started with.
type serveConfig struct {
	addr  string
	token string // "" = no token checked (loopback only)
	// loopback reports whether addr is a loopback address; then requests
	// must name a loopback host too (no DNS rebinding).
	loopback bool
}

// runServe is `sessionkit serve`: its flags, the store, and the server
// until ctx ends.
func runServe(ctx context.Context, args []string, store string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	fs.StringVar(&store, "store", store, "")
	addr := fs.String("addr", defaultServeAddr, "")
	token := fs.String("token", "", "")
	if err := fs.Parse(args); err != nil {
		return flagError(err)
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no argument (unexpected %q)", fs.Arg(0))
	}
	cfg, err := checkServeAddr(*addr, *token)
	if err != nil {
		return err
	}
	if !cfg.loopback && *token == "" {
		cfg.token = randomToken()
		fmt.Fprintf(stderr, "sessionkit: --addr %s is not a loopback address and no --token was given: the token is %s\n", cfg.addr, cfg.token)
	}
	r, err := openReader(ctx, store, stderr)
	if err != nil {
		return err
	}
	defer r.close()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: newServer(r, cfg), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(stdout, "sessionkit serve: reading %s (read only) at %s\n", displayStore(store), serveURL(cfg.addr, ln.Addr(), cfg.token))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut) // live pages end with ctx (BaseContext)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveURL is the URL serve prints for a listener at ln started with
// --addr addr: the host as addr names it (a listener of every interface
// names itself "[::]", even for 0.0.0.0: not what the user typed, nor an
// address to open), "0.0.0.0" for none, the port ln took (for port 0),
// and the token.
func serveURL(addr string, ln net.Addr, token string) string {
	host, _, _ := net.SplitHostPort(addr)
	if host == "" {
		host = "0.0.0.0"
	}
	port := ""
	if _, p, err := net.SplitHostPort(ln.String()); err == nil {
		port = p
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port), Path: "/"}
	if token != "" {
		u.RawQuery = url.Values{"token": {token}}.Encode()
	}
	return u.String()
}

// checkServeAddr validates --addr and --token: an address that is not on
// the loopback interface is served only with a token (given, or made by
// runServe), and a token must be long enough to guess badly.
func checkServeAddr(addr, token string) (serveConfig, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return serveConfig{}, usagef("--addr %q: give HOST:PORT, such as %s", addr, defaultServeAddr)
	}
	if token != "" && len(token) < 16 {
		return serveConfig{}, usagef("--token is %d characters: give at least 16 (or none, and serve prints a random one)", len(token))
	}
	return serveConfig{addr: addr, token: token, loopback: isLoopbackHost(host)}, nil
}

// isLoopbackHost reports whether host names the loopback interface only.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// randomToken is a token of 128 random bits (crypto/rand.Text).
func randomToken() string { return rand.Text() }

// displayStore is how serve names its store: a PostgreSQL URL without its
// password.
func displayStore(store string) string { return postgres.Redact(store) }

// guard checks every request before h sees it: with a token, the request
// carries it (?token= once, which sets the cookie and redirects to the
// same URL without it; then the cookie); without one (loopback only), the
// Host header names the loopback interface, so that a web page of another
// site cannot reach the inspector through a DNS name of its own.
func guard(cfg serveConfig, h http.Handler) http.Handler {
	want := []byte(cfg.token)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if cfg.token == "" {
			host, _, err := net.SplitHostPort(req.Host)
			if err != nil {
				host = req.Host
			}
			if !isLoopbackHost(host) {
				http.Error(w, "sessionkit serve answers requests for the loopback address only (Host "+req.Host+")", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, req)
			return
		}
		if q := req.URL.Query(); q.Has("token") {
			if subtle.ConstantTimeCompare([]byte(q.Get("token")), want) != 1 {
				refuse(w)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: cfg.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *req.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, req, u.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := req.Cookie(tokenCookie)
		if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), want) != 1 {
			refuse(w)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// pagePolicy is the Content-Security-Policy of every response: scripts,
// style sheets and fetches from the inspector itself only (live.js,
// style.css, the live events), images from it or data: URLs (the icon),
// nothing inline, no plugin, frame or base URL, forms to itself, and no
// page of another site may frame it.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// exportPolicy is the Content-Security-Policy of an exported page: one
// self-contained file with its style sheet inline and no script.
const exportPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// secured sets the headers every response of serve carries, refusals
// included: pagePolicy, no framing (X-Frame-Options for browsers that
// predate frame-ancestors), no Referer sent from its pages (the session
// IDs in its URLs stay here), no content sniffing.
func secured(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", pagePolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, req)
	})
}

func refuse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintln(w, "sessionkit serve: this address needs the token serve printed when it started: open the URL it printed (…/?token=…)")
}
