package session_test

import (
	"context"
	"fmt"
	"log"

	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// A session on the embedded defaults: the offline provider and, with no
// Store, an in-memory store.
func ExampleNew() {
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: offline.New(), SystemPrompt: "Be brief."})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	active, err := s.Active(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(active), "messages")
	// Output: 0 messages
}

// Prompt returns a Handle as soon as the prompt is queued; Wait returns the
// turn's result.
func ExampleSession_Prompt() {
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: offline.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "We ship on Friday."})
	if err != nil {
		log.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text)
	}
	// Output:
	// user: We ship on Friday.
	// assistant: Noted: We ship on Friday.
	// (1 message in context; no summary of earlier conversation)
}

// Compact returns its Handle once the command is queued; Finished closes
// when the summary call and the canonical commit are done.
func ExampleSession_Compact() {
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: offline.New()})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, text := range []string{"Build a CLI called falcon.", "Use the flag package."} {
		h, err := s.Prompt(ctx, session.PromptRequest{Text: text})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := h.Wait(ctx); err != nil {
			log.Fatal(err)
		}
	}
	h, err := s.Compact(ctx, session.CompactRequest{})
	if err != nil {
		log.Fatal(err)
	}
	<-h.Finished()
	res := h.Result()
	fmt.Println(res.Reason, res.Success, len(res.Segment.Messages), "messages archived")
	active, _ := s.Active(ctx)
	fmt.Println(len(active), "messages active")
	// Output:
	// compacted true 2 messages archived
	// 2 messages active
}

// Subscribe delivers the timeline; events are for presentation, the Handle
// is for application logic.
func ExampleSession_Subscribe() {
	ctx := context.Background()
	s, err := session.New(ctx, session.Config{Provider: offline.New(offline.WithDeltaSize(100))})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := s.Subscribe(ctx, session.SubscribeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	h, err := s.Prompt(ctx, session.PromptRequest{Text: "Hello."})
	if err != nil {
		log.Fatal(err)
	}
	<-h.Finished()
	s.Close() // ends the subscription after the events so far
	for ev := range sub.Events() {
		switch p := ev.Payload.(type) {
		case *session.TurnEvent:
			fmt.Println(ev.Seq, "turn", p.Phase)
		case *session.MessageEvent:
			fmt.Println(ev.Seq, "message", p.Message.Role)
		case *session.DeltaEvent:
			fmt.Println(ev.Seq, "delta")
		case *session.UsageEvent:
			fmt.Println(ev.Seq, "usage", p.ContextTokens)
		case *session.SettingsEvent:
			fmt.Println(ev.Seq, "settings", p.Changed, p.Settings.Title)
		}
	}
	fmt.Println(sub.Err())
	// Output:
	// 1 turn started
	// 2 message user
	// 3 settings [Title] Hello.
	// 4 delta
	// 5 message assistant
	// 6 usage 20
	// 7 turn finished
	// session: closed
}
