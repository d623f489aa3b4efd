package session

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sessionkit/sessionkit/history"
)

// TestFilesNote_Bound: the note lists the newest maxNoteFiles files of
// the standing Segments and counts the rest, whatever the number of
// Segments (each newest first, the oldest Segment first).
func TestFilesNote_Bound(t *testing.T) {
	var segs [][]history.FileState
	n := 0
	for range 3 {
		var seg []history.FileState
		for range 20 {
			n++
			seg = append([]history.FileState{{FileAccess: history.FileAccess{Path: fmt.Sprintf("f%d", n), Op: history.FileRead}, Read: true}}, seg...)
		}
		segs = append(segs, seg)
	}
	note := filesNote(ledgerOf(segs, nil))
	lines := strings.Split(note, "\n")
	if got := len(lines); got != 1+maxNoteFiles+1 {
		t.Fatalf("%d lines, want %d:\n%s", got, maxNoteFiles+2, note)
	}
	if lines[1] != "- f60 (read)" || lines[maxNoteFiles] != "- f21 (read)" {
		t.Fatalf("not the newest first:\n%s", note)
	}
	if want := fmt.Sprintf("- and %d more", n-maxNoteFiles); lines[len(lines)-1] != want {
		t.Fatalf("last line %q, want %q", lines[len(lines)-1], want)
	}
	if filesNote(ledgerOf(nil, nil)) != "" {
		t.Fatal("a note without files")
	}
}
