package session_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// Open opens only a session that exists; New creates or resumes. Settings
// reports the effective settings and the title, and the store lists the
// sessions.
func ExampleOpen() {
	ctx := context.Background()
	store := memstore.New()
	cfg := session.Config{ID: "s-42", Provider: offline.New(), Store: store, Cwd: "/src/app"}

	_, err := session.Open(ctx, cfg)
	fmt.Println("open before create:", errors.Is(err, history.ErrNotFound))

	s, err := session.New(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "Rename the package\nand fix the imports"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := h.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	_ = s.Close()

	s, err = session.Open(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println("title:", s.Settings().Title)
	page, err := store.ListSessions(ctx, history.ListOptions{Cwd: "/src/app"})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range page.Sessions {
		fmt.Println(info.ID, info.Title, info.Messages)
	}
	// Output:
	// open before create: true
	// title: Rename the package
	// s-42 Rename the package 2
}
