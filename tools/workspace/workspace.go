// Package workspace gives a coding agent its file and command tools,
// confined to the directories of one session: its working directory and any
// additional directories the editor named.
//
//	ws, err := workspace.New("/home/me/project")
//	if err != nil { ... }
//	cfg := session.Config{Provider: p, Tools: ws.Tools(workspace.Options{})}
//
// # Confinement
//
// Every path a tool takes is resolved against the working directory (a
// relative path) or taken as it is (an absolute one), cleaned, and its
// symbolic links resolved as far as the path exists; the result must lie
// inside one of the roots, themselves resolved the same way. Anything else
// ("..", an absolute path elsewhere, a link that points out) is refused
// with an error the model can read, and nothing is read or changed.
// A command run with run_command is confined by the kernel instead, where
// it can be (package sandbox, Options.Sandbox): it may write only in the
// session's directories, with a clean environment.
//
// # Bounds
//
// Every tool's output is bounded (Options.MaxOutput bytes; lists and
// searches also by count), and says when it was cut. History keeps a tool
// result whole; the summary input cuts long tool outputs again.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is wrapped by the error for a path outside the workspace.
var ErrOutside = errors.New("workspace: path is outside the workspace")

// Workspace is the set of directories a session's tools may touch. It is
// safe for concurrent use.
type Workspace struct {
	cwd   string   // resolved working directory, the first root
	given string   // the working directory as the client named it
	roots []string // resolved roots
}

// New returns the workspace of a session working in cwd, with the
// additional directories it may also touch. Each must be an absolute path
// to an existing directory.
func New(cwd string, additional ...string) (*Workspace, error) {
	w := &Workspace{}
	for i, d := range append([]string{cwd}, additional...) {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("workspace: %q is not an absolute path", d)
		}
		r, err := filepath.EvalSymlinks(filepath.Clean(d))
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("workspace: %q is not a directory", d)
		}
		if i == 0 {
			w.cwd, w.given = r, filepath.Clean(d)
		}
		w.roots = append(w.roots, r)
	}
	return w, nil
}

// Cwd returns the working directory (symbolic links resolved).
func (w *Workspace) Cwd() string { return w.cwd }

// Resolve returns the absolute, link-free form of path (relative to the
// working directory unless absolute), or an error wrapping ErrOutside when
// it lies outside every root. The path need not exist; its existing part is
// resolved, and the rest may not contain "..".
func (w *Workspace) Resolve(path string) (string, error) {
	if path == "" {
		return "", errors.New("workspace: empty path")
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.cwd, p)
	}
	p = filepath.Clean(p)
	// Resolve the longest prefix that exists; the rest is plain names
	// (Clean removed every "..").
	existing, rest := p, ""
	for {
		r, err := filepath.EvalSymlinks(existing)
		if err == nil {
			p = filepath.Join(r, rest)
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("workspace: %s: %w", path, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	for _, root := range w.roots {
		if p == root || strings.HasPrefix(p, root+string(filepath.Separator)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s (the session may use %s)", ErrOutside, path, strings.Join(w.roots, ", "))
}

// shown is the resolved path p as the client knows it: below the working
// directory as the client named it (which may differ from its resolved
// form through a link), otherwise p.
func (w *Workspace) shown(p string) string {
	if r, err := filepath.Rel(w.cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.Join(w.given, r)
	}
	return p
}

// rel returns p relative to the working directory when it lies below it,
// for messages and listings.
func (w *Workspace) rel(p string) string {
	if r, err := filepath.Rel(w.cwd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
