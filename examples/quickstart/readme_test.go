package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/anthropic"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/session"
)

// readmeQuickStart is the code of the README's Quick start, between the
// markers; TestReadme checks that the README shows this very code.
func readmeQuickStart() {
	// README begin
	ctx := context.Background()

	store, err := sqlite.Open("sessions.db") // the embedded default store
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// The offline provider is deterministic and needs no network. With a key,
	// use a real model: anthropic.FromEnv() (or openai.FromEnv() with
	// OPENAI_API_KEY or OPENAI_BASE_URL); both fail at once on a bad setting.
	var p provider.Provider = offline.New()
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		if p, err = anthropic.FromEnv(); err != nil {
			log.Fatal(err)
		}
	}

	s, err := session.New(ctx, session.Config{
		Provider:          p,
		Store:             store,
		SystemPrompt:      "You are a careful coding agent.",
		AutoCompactTokens: 100_000, // compact when usage reaches it
	})
	if err != nil {
		log.Fatal(err)
	} // e.g. a negative AutoCompactTokens
	defer s.Close()

	turn, err := s.Prompt(ctx, session.PromptRequest{Text: "Read main.go"})
	if err != nil {
		log.Fatal(err)
	} // invalid input: nothing queued
	res, err := turn.Wait(ctx) // the turn has ended
	if err != nil {
		log.Fatal(err)
	}
	if res.Err != nil {
		log.Println("turn failed:", res.Err)
	}
	for _, m := range res.Messages { // what the turn appended
		fmt.Println(m.Role, m.Text)
	}

	compact, err := s.Compact(ctx, session.CompactRequest{Instructions: "keep file names"})
	if err != nil {
		log.Fatal(err)
	} // returned as soon as it is queued
	<-compact.Finished() // summary call and commit are done
	if r := compact.Result(); !r.Success {
		log.Println(r.Error) // compact_failed: history unchanged
	}
	// README end
}

// TestReadme: the README's Quick start is the code of readmeQuickStart
// (compared token by token: the README may lay it out more tightly), and
// that code runs on the offline provider.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)## Quick start\n\n```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, block, "the README has a Quick start Go block")
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	code := regexp.MustCompile(`(?s)// README begin\n(.*?)// README end`).FindSubmatch(src)
	require.NotNil(t, code)
	assert.Equal(t, tokens(string(code[1])), tokens(string(block[1])), "README.md's Quick start and readmeQuickStart differ")

	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Chdir(t.TempDir())
	readmeQuickStart()
	st, err := sqlite.Open(filepath.Join(".", "sessions.db"))
	require.NoError(t, err)
	defer st.Close()
	page, err := st.ListSessions(t.Context(), history.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 1, "the snippet wrote its session")
	segs, err := st.Segments(t.Context(), page.Sessions[0].ID)
	require.NoError(t, err)
	assert.Len(t, segs, 1, "and compacted it")
}

// tokens splits Go code into its tokens, comments included, so that
// layout (line breaks, indentation, alignment) does not count. Braces
// that gofmt puts on their own lines compare equal to a one-line form.
func tokens(code string) []string {
	var out []string
	for line := range strings.Lines(code) {
		code, comment, _ := strings.Cut(line, "//")
		out = append(out, strings.Fields(code)...)
		if comment = strings.TrimSpace(comment); comment != "" {
			out = append(out, "//"+strings.Join(strings.Fields(comment), " "))
		}
	}
	// gofmt moves a trailing comment after a closing brace: compare the
	// comments as a set of their own, in order, and the code apart.
	var codeToks, comments []string
	for _, tok := range out {
		if strings.HasPrefix(tok, "//") {
			comments = append(comments, tok)
		} else {
			codeToks = append(codeToks, tok)
		}
	}
	return append(codeToks, comments...)
}

// TestGettingStarted: the program of docs/getting-started.md builds and
// passes go vet (it needs a model to run, so it is not run).
func TestGettingStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	doc, err := os.ReadFile("../../docs/getting-started.md")
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindSubmatch(doc)
	require.NotNil(t, block, "the page has a Go program")
	// Inside the module, so that its imports resolve to this tree.
	dir, err := os.MkdirTemp(".", "getting-started-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), block[1], 0o600))
	for _, args := range [][]string{{"vet", "./" + dir}, {"build", "-o", os.DevNull, "./" + dir}} {
		out, err := exec.Command("go", args...).CombinedOutput()
		require.NoError(t, err, "go %v: %s", args, out)
	}
}
