package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/postgres"
)

// A process serves a session under its lease: it takes the lease, reads or
// creates the session, writes through the lease's fenced store, and
// releases the lease when done. (This example needs a server: it is
// compiled, not run.)
func Example() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = store.Close() }()

	lease, err := store.Acquire(ctx, "s1")
	var busy *history.LeaseError
	if errors.As(err, &busy) {
		log.Fatalf("session s1 is served by %s", busy.Holder)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()

	s := lease.Store()
	snap, err := s.Load(ctx, "s1")
	if errors.Is(err, history.ErrNotFound) {
		snap, err = s.Create(ctx, history.NewSession{ID: "s1"})
	}
	if err != nil {
		log.Fatal(err)
	}
	v, err := s.Append(ctx, "s1", snap.Version, []history.Message{
		{ID: "m1", Role: history.RoleUser, Text: "What is in main.go?"},
	})
	switch {
	case errors.Is(err, history.ErrFenced):
		log.Fatal("another process took the session over")
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println("session s1 at version", v)

	select {
	case <-lease.Lost():
		log.Print("lease lost: stop serving s1")
	default:
	}
}
