package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
)

// A session's life in the store: create, append, compact, reopen.
func Example() {
	dir, err := os.MkdirTemp("", "sessionkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "sessions.db")
	ctx := context.Background()

	store, err := sqlite.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	snap, err := store.Create(ctx, history.NewSession{ID: "s1"})
	if err != nil {
		log.Fatal(err)
	}
	v, err := store.Append(ctx, "s1", snap.Version, []history.Message{
		{ID: "m1", Role: history.RoleUser, Text: "What is in main.go?"},
		{ID: "m2", Role: history.RoleAssistant, Text: "A small HTTP server."},
		{ID: "m3", Role: history.RoleUser, Text: "Add a health check."},
	})
	if err != nil {
		log.Fatal(err)
	}
	v, err = store.BeginCompaction(ctx, "s1", v, history.CompactionRecord{CompactID: "c1", Trigger: "manual", Status: history.StatusInProgress})
	if err != nil {
		log.Fatal(err)
	}
	_, seg, err := store.CommitCompaction(ctx, "s1", v, history.Commit{
		CompactID: "c1", SegmentID: "seg1", Archive: 2, Summary: "The user asked about main.go, an HTTP server.",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("segment:", seg.ID)
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}

	// Reopening reads the summary and the Active messages only.
	store, err = sqlite.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	snap, err = store.Load(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("summary:", snap.Summary)
	for _, m := range snap.Active {
		fmt.Println(m.Role+":", m.Text)
	}
	segs, err := store.Segments(ctx, "s1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("archived:", len(segs[0].Messages))
	// Output:
	// segment: seg1
	// summary: The user asked about main.go, an HTTP server.
	// user: Add a health check.
	// archived: 2
}
