package session

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

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

// TestSegFiles_IncrementalSameAsWhole: adding each new Segment's files to
// the standing Segments' ledger (addSegFiles, at a compaction) gives the
// ledger, its evictions and the note that setSegFiles of all the
// Segments gives, for Segments that share paths and together pass the
// ledger's bound.
func TestSegFiles_IncrementalSameAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var segs [][]history.FileState
	for s := range 12 {
		var seg []history.FileState // newest first
		for i := range 1 + rng.IntN(400) {
			op := history.FileRead
			if rng.IntN(3) == 0 {
				op = history.FileChanged
			}
			st := history.FileState{FileAccess: history.FileAccess{Path: fmt.Sprintf("p%d", rng.IntN(1500)), Op: op, At: at.Add(time.Duration(s*1000+i) * time.Second)}}
			st.Read, st.Changed = op == history.FileRead, op == history.FileChanged
			seg = append([]history.FileState{st}, seg...)
		}
		segs = append(segs, seg)
	}
	active := []history.Message{{ID: "t", Role: history.RoleTool, ToolCallID: "c", Files: []history.FileAccess{{Path: "p1", Op: history.FileChanged, At: at.Add(time.Hour * 10)}}}}
	whole := &loop{active: active}
	whole.setSegFiles(segs)
	inc := &loop{active: active}
	inc.setSegFiles(nil)
	for _, seg := range segs {
		inc.addSegFiles(seg)
		inc.filesStale = true
	}
	inc.addSegFiles(nil)
	if whole.files.Evicted() == 0 {
		t.Fatal("the Segments stay within the bound: no eviction tested")
	}
	if !reflect.DeepEqual(whole.files.Newest(0), inc.files.Newest(0)) || whole.files.Evicted() != inc.files.Evicted() {
		t.Fatalf("the ledgers differ: %d paths, %d evicted against %d, %d", whole.files.Len(), whole.files.Evicted(), inc.files.Len(), inc.files.Evicted())
	}
	if !reflect.DeepEqual(whole.segLedger.Newest(0), inc.segLedger.Newest(0)) || whole.filesNote != inc.filesNote || inc.filesStale {
		t.Fatal("the standing Segments' ledger or note differ")
	}
}
