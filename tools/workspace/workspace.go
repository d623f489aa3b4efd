// Package workspace gives a coding agent built on sessionkit its six tools
// (read_file, write_file, edit_file, list_files, search, run_command),
// confined to the directories of one session: its working directory and
// any additional directories the editor named.
//
//	ws, err := workspace.New("/home/me/project")
//	if err != nil { ... } // errors.Is(err, workspace.ErrBadRoot): refuse the session
//	defer ws.Close()
//	cfg := session.Config{Provider: p, Tools: ws.Tools(workspace.Options{})}
//
// With an [Editor] (an ACP client, such as the session's *acp.ToolClient)
// in [Options], files are read and written through the client when it
// offers fs, commands run in its terminals when it offers them, and every
// change and command asks the user's permission first. [Describe] says how
// the calls are shown to the client, live and on replay.
//
// # Modes
//
// [Options.Mode] reads the session's mode at every call: [ModeAsk] (the
// default) asks before every change, command and call of a tool made with [Guard]
// (an MCP server's); [ModeReadOnly] runs the reading tools only and
// refuses the rest before it reads or asks anything; [ModeAutoEdit] edits
// without asking and asks for commands and guarded tools; [ModeFullAuto]
// asks for nothing, and gives commands the network. [Modes] lists them
// for an ACP agent (acp.ServerOptions.Modes).
//
// # Confinement
//
// New refuses the root of the file system and the user's home directory
// itself, and takes only absolute paths of existing directories; it opens
// each directory as an [os.Root] and holds it for the session. A path a
// tool is given names one of them, by its name alone (relative to the
// working directory, or absolute; ".." is resolved by name first, and
// "..foo" is an ordinary name), and everything else about it is left to
// that Root: it resolves each component through a directory descriptor
// and refuses a symbolic link that leads out of its directory (also a
// dangling one, and an absolute one even when it points inside), so a
// path outside and a link out fail with an error wrapping [ErrOutside],
// and nothing is read or changed.
//
// A file is opened once, by descriptor, and checked on that descriptor
// (fstat): what is not a regular file (a FIFO, a socket, a device) is
// refused with an error naming its kind, and a FIFO's open never waits.
// write_file and edit_file read the file through that descriptor before
// the permission request and write it through the same descriptor after
// it, once the name is seen to lead to the same file still: a name swapped
// while the user looks at the request is refused, never followed. A new
// file is created exclusively (a link put at its name is not followed),
// and parent directories made for a write that then fails are removed.
//
// What os.Root does not cover: a hard link is the same file under another
// name, possibly outside the workspace, so a file with more than one link
// is written only after a permission request that says so (also when the
// tool is allowed always; never with AllowAll or without an editor to
// ask). Bind mounts, and a directory of the session that is itself a
// mount of something else, are inside as far as os.Root knows. Through the
// client's fs the client reads and writes the path itself: the tools check
// it first, but the client's own open is the client's.
//
// A command run with run_command is not reached by this confinement; it
// is confined by the kernel instead, where it can be (package sandbox,
// Options.Sandbox): it may write only in the session's directories, with a
// clean environment.
//
// # The file ledger
//
// Run by a session, the tools keep its file ledger (session.FileLedger,
// docs/compaction.md "Files"): read_file records what it showed of a file
// (the whole file, or the lines it returned, by a hash), write_file and
// edit_file what they wrote, under one path per file (relative to the
// working directory, links inside the workspace resolved). The ledger is
// stored with the session and outlives compactions, reopening and forks.
// The guard uses it: edit_file of a file the session never read is
// refused with ErrNotRead, and write_file or edit_file of a file whose
// content is no longer what the session last saw (changed on the disk, or
// in the editor when the editor serves the files) with
// ErrChangedSinceRead, each with a message that says what happened and
// to read the file again; nothing is changed. It looks again once a
// permission request is answered: a file edited while the request waited
// is refused too. A new file needs no read.
// Options.NoFileGuard switches the guard off. The hash (xxHash64) is of
// the bytes the model saw, never of more: a part read is compared as a
// part, so a read of one line of a large file costs that line.
//
// # Bounds
//
// Every tool's output is bounded (Options.MaxOutput bytes; lists and
// searches also by count), and says when it was cut; and so is what a
// tool holds while it works. read_file streams: it stops at the end of the
// lines asked for or at the bound, so one line of a 300 MB file costs
// the bound, not the file (through the client it asks for those lines
// only). search reads each file through one buffer and keeps at most 512
// bytes of each matching line, around the match: a line of any length is
// searched whole, a binary file (a NUL byte in its first 8 KiB) is skipped
// and the answer says so, as it names the files it could not finish. A
// search stops when it has read Options.SearchBytes across its files
// (512 MiB by default) or run for Options.SearchTime (10 s), and names
// the file it stopped in and the files it did not search.
// list_files keeps the first MaxEntries names of a directory of any size.
// write_file and edit_file hold the file whole, so they refuse one larger
// than Options.MaxFileSize. History keeps a tool result whole; the summary
// input cuts long tool outputs again.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutside is wrapped by the error for a path outside the workspace.
var ErrOutside = errors.New("workspace: path is outside the workspace")

// ErrMoved is wrapped by the error of a tool call refused because a
// directory of the session was moved or replaced since the session
// opened it (its name, or a name below it, now leads elsewhere, as after
// "mv nested nested.old && ln -s $HOME nested"). The error names the
// directory; the tools do not follow it. Nothing was read, written or run.
var ErrMoved = errors.New("workspace: a session directory was moved or replaced")

// ErrBadRoot is wrapped by the error New returns for a directory that
// cannot be a session's: the root of the file system, the user's home
// directory itself, a relative path, or one that is not a directory. The
// error names the directory.
var ErrBadRoot = errors.New("workspace: not a session directory")

// Workspace is the set of directories a session's tools may touch, each
// held open as an [os.Root]. It is safe for concurrent use.
type Workspace struct {
	cwd   string // resolved working directory, the first root
	given string // the working directory as the client named it
	dirs  []*dir // the roots, held open; dirs[0] is the working directory
}

// dir is one directory of a session, held open: every file operation of
// the tools goes through its Root, so no name it resolves leaves it, and
// commands get file, the same directory, as a descriptor (never its name).
type dir struct {
	given string // as the client named it, cleaned
	real  string // symbolic links resolved
	root  *os.Root
	file  *os.File // the directory of root, open (same device and inode)
}

// New returns the workspace of a session working in cwd, with the
// additional directories it may also touch, each opened as an [os.Root].
// Each must be an absolute path to an existing directory other than the
// root of the file system and the user's home directory; otherwise the
// error wraps ErrBadRoot (and fs.ErrNotExist for a missing one) and names
// the directory. Close releases the directories (the garbage collector
// also does).
func New(cwd string, additional ...string) (*Workspace, error) {
	home := ""
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			home = r
		}
	}
	w := &Workspace{}
	for i, d := range append([]string{cwd}, additional...) {
		dd, err := openDir(d, home)
		if err != nil {
			_ = w.Close()
			return nil, err
		}
		if i == 0 {
			w.cwd, w.given = dd.real, dd.given
		}
		w.dirs = append(w.dirs, dd)
	}
	return w, nil
}

// openDir opens the session directory d; home is the user's home
// directory, resolved ("" when unknown).
func openDir(d, home string) (*dir, error) {
	if !filepath.IsAbs(d) {
		return nil, fmt.Errorf("%w: %q is not an absolute path", ErrBadRoot, d)
	}
	given := filepath.Clean(d)
	real, err := filepath.EvalSymlinks(given)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %q does not exist: %w", ErrBadRoot, d, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadRoot, d, err)
	}
	switch {
	case real == string(filepath.Separator):
		return nil, fmt.Errorf("%w: %q is the root of the file system; a session works in a project directory", ErrBadRoot, given)
	case real == home:
		return nil, fmt.Errorf("%w: %q is the home directory; a session works in a project directory below it", ErrBadRoot, given)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a directory (%v)", ErrBadRoot, d, err)
	}
	// The same directory again as a file, for commands: opened by name
	// too, so it is checked to be the Root's (nothing swapped between).
	file, err := os.OpenFile(real, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err == nil {
		var inRoot, held fs.FileInfo
		if inRoot, err = root.Stat("."); err == nil {
			if held, err = file.Stat(); err == nil && !os.SameFile(inRoot, held) {
				err = errors.New("it was replaced while it was being opened")
			}
		}
		if err != nil {
			_ = file.Close()
		}
	}
	if err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("%w: %q: %v", ErrBadRoot, d, err)
	}
	return &dir{given: given, real: real, root: root, file: file}, nil
}

// Close releases the workspace's directories; the tools fail after it.
func (w *Workspace) Close() error {
	var errs []error
	for _, d := range w.dirs {
		errs = append(errs, d.root.Close(), d.file.Close())
	}
	return errors.Join(errs...)
}

// Cwd returns the working directory (symbolic links resolved).
func (w *Workspace) Cwd() string { return w.cwd }

// loc is a name inside one directory of the session.
type loc struct {
	dir   *dir
	name  string // relative to dir, cleaned: "." or names without ".."
	asked string // the path as the tool was given it
}

// within returns p relative to base when p lies inside base (or is it).
// A name that merely begins with ".." (like "..foo") is inside.
func within(base, p string) (string, bool) {
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// locate finds the directory of the session path lies in (relative to the
// working directory unless absolute), by its name only: the directory's
// Root then resolves it, links included, without leaving it. A path that
// names no directory of the session is refused with ErrOutside. Where
// directories nest, the innermost holds the path.
func (w *Workspace) locate(path string) (loc, error) {
	if path == "" {
		return loc{}, errors.New("workspace: empty path")
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.given, p)
	}
	p = filepath.Clean(p)
	best, bestDepth := loc{}, -1
	for _, d := range w.dirs {
		for _, base := range []string{d.given, d.real} {
			if r, ok := within(base, p); ok && len(base) > bestDepth {
				best, bestDepth = loc{dir: d, name: r, asked: path}, len(base)
			}
		}
	}
	if bestDepth < 0 {
		return loc{}, w.outside(path)
	}
	return best, nil
}

func (w *Workspace) outside(path string) error {
	dirs := make([]string, len(w.dirs))
	for i, d := range w.dirs {
		dirs[i] = d.given
	}
	return fmt.Errorf("%w: %s (the session may use %s)", ErrOutside, path, strings.Join(dirs, ", "))
}

// shown is the location as the client knows it: below the directory as
// the client named it.
func (l loc) shown() string { return filepath.Join(l.dir.given, l.name) }

// rel is the location for messages and listings: relative to the working
// directory when it lies in it, otherwise absolute.
func (w *Workspace) rel(l loc) string {
	if l.dir == w.dirs[0] {
		return l.name
	}
	if r, ok := within(w.given, l.shown()); ok {
		return r
	}
	return l.shown()
}

// held checks that the name of l — what the editor is given, and what a
// reader of a message understands — still resolves through l's directory:
// the directory's name (every component from / to it) leads to the
// directory the session holds, and the name of l's parent (the deepest part of
// it that exists) leads to the directory the Root reaches by it, both by
// device and inode. Otherwise the error wraps ErrMoved and says which
// directory of the session was moved or replaced; nothing may be read or
// written by that name then.
func (w *Workspace) held(l loc) error {
	if err := heldDir(l.dir); err != nil {
		return err
	}
	for p := filepath.Dir(l.name); ; p = filepath.Dir(p) {
		inside, err := l.dir.root.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != "." {
			continue // not made yet: its parent decides
		}
		if err != nil {
			return w.rootErr(l, err)
		}
		named, err := os.Stat(filepath.Join(l.dir.given, p))
		if err != nil || !os.SameFile(inside, named) {
			return fmt.Errorf("%w: %s, below the session directory %s, no longer leads to the directory the session reaches by that name (it was moved or replaced, perhaps by a link); the tools will not follow it, and nothing was read or written", ErrMoved, filepath.Join(l.dir.given, p), l.dir.given)
		}
		return nil
	}
}

// heldDir checks that d's name still leads to the directory held.
func heldDir(d *dir) error {
	named, err := os.Stat(d.given)
	if err == nil {
		var held fs.FileInfo
		if held, err = d.file.Stat(); err == nil && !os.SameFile(named, held) {
			err = errors.New("it now leads to another directory")
		}
	}
	if err != nil {
		return fmt.Errorf("%w: the session directory %s was moved or replaced since the session opened it (%v); the tools will not follow it, and nothing was read, written or run. Put it back, or start a new session", ErrMoved, d.given, err)
	}
	return nil
}

// resolve is locate, then held.
func (w *Workspace) resolve(path string) (loc, error) {
	l, err := w.locate(path)
	if err != nil {
		return loc{}, err
	}
	return l, w.held(l)
}
