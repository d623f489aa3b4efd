package history

import (
	"fmt"
	"time"
)

// FileOp is what a tool call did to a file: read it, or changed it.
type FileOp string

// The operations of a [FileAccess].
const (
	FileRead    FileOp = "read"
	FileChanged FileOp = "changed" // written or edited (also created)
)

// MaxFiles bounds the files one message records ([Message.Files]) and one
// Segment lists ([Segment.Files]); a session's file ledger keeps at most
// this many paths too (the newest).
const MaxFiles = 1000

// FileAccess is one file a tool call read or changed, as the tool saw it:
// what a session's file ledger is made of (docs/compaction.md, "Files").
// A tool result records its accesses in [Message.Files].
//
// Hash is the fingerprint of the content seen ("xxh64:" and 16 hex
// digits, a change detector, not a cryptographic hash). Line 0 means the
// whole file was seen: Hash is of its Size bytes. A read of a range of
// lines, or one cut at the tools' output bound, saw part of it: Hash is of
// the Length bytes that start at line Line (1-based), and Size is the
// file's size then.
type FileAccess struct {
	// Path is the file's path, slash-separated and cleaned, relative to
	// the session's working directory (absolute for a file of another
	// directory of the session), with links inside the workspace
	// resolved: one file has one Path however the tool was given it.
	Path string
	Op   FileOp
	Hash string
	Size int64
	// Line and Length say which part of the file Hash is of (see above);
	// both 0 for the whole file.
	Line   int
	Length int64
	At     time.Time // when the tool saw it
	// ToolCallID is the call that saw it (the message's ToolCallID).
	ToolCallID string
}

// Whole reports whether a saw the whole file.
func (a *FileAccess) Whole() bool { return a.Line == 0 }

// FileState is what a session knows of one file: its last access, and
// whether any access read it or changed it. [Segment.Files] lists those
// of the messages a Segment archived.
type FileState struct {
	FileAccess    // the last access
	Read, Changed bool
}

// validFiles reports the first malformed access of files.
func validFiles(files []FileAccess) error {
	if len(files) > MaxFiles {
		return fmt.Errorf("%d file accesses, at most %d", len(files), MaxFiles)
	}
	for i := range files {
		if err := files[i].Validate(); err != nil {
			return fmt.Errorf("file %d: %w", i, err)
		}
	}
	return nil
}

// Validate reports the first problem of a: no path, an unknown Op, a
// negative number, or a Length without a Line. The error does not wrap
// ErrInvalid (Message.Validate wraps it).
func (a *FileAccess) Validate() error {
	switch {
	case a.Path == "":
		return fmt.Errorf("no path")
	case a.Op != FileRead && a.Op != FileChanged:
		return fmt.Errorf("%s: unknown op %q", a.Path, a.Op)
	case a.Size < 0 || a.Line < 0 || a.Length < 0:
		return fmt.Errorf("%s: negative size, line or length", a.Path)
	case a.Line == 0 && a.Length != 0:
		return fmt.Errorf("%s: a length without a line", a.Path)
	}
	return nil
}

// ValidFileStates reports the first malformed entry of files, as a
// Segment's Files (see [Commit]): at most [MaxFiles], each path once.
// The error does not wrap ErrInvalid.
func ValidFileStates(files []FileState) error {
	if len(files) > MaxFiles {
		return fmt.Errorf("%d files, at most %d", len(files), MaxFiles)
	}
	seen := make(map[string]bool, len(files))
	for i := range files {
		f := &files[i]
		if err := f.Validate(); err != nil {
			return fmt.Errorf("file %d: %w", i, err)
		}
		if !f.Read && !f.Changed {
			return fmt.Errorf("file %d: %s neither read nor changed", i, f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("file %d: %s listed twice", i, f.Path)
		}
		seen[f.Path] = true
	}
	return nil
}
