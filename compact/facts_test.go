package compact_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/compact"
	"github.com/sessionkit/sessionkit/history"
)

func user(text string) history.Message { return history.Message{Role: history.RoleUser, Text: text} }

func assistant(text string, calls ...history.ToolCall) history.Message {
	return history.Message{Role: history.RoleAssistant, Text: text, ToolCalls: calls}
}

func toolResult(id, text string) history.Message {
	return history.Message{Role: history.RoleTool, ToolCallID: id, Text: text}
}

func fact(k compact.FactKind, text string) compact.Fact { return compact.Fact{Kind: k, Text: text} }

func TestFacts_Kinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []history.Message
		want []compact.Fact
	}{
		{"a path with a directory and a file name", []history.Message{user("Fix internal/config/load.go and go.mod.")},
			[]compact.Fact{fact(compact.FactPath, "internal/config/load.go"), fact(compact.FactPath, "go.mod")}},
		{"rooted paths", []history.Message{assistant("It lives in /etc/falcon and ./bin/falcon.")},
			[]compact.Fact{fact(compact.FactPath, "/etc/falcon"), fact(compact.FactPath, "./bin/falcon")}},
		{"words joined by a slash are no path", []history.Message{assistant("Use read/write access, and/or TCP/IP; 3/4 done.")}, nil},
		{"identifiers in code spans only", []history.Message{assistant("Renamed `parseConfig` to `config.Load()`; `go test ./...` is no identifier.")},
			[]compact.Fact{fact(compact.FactIdentifier, "parseConfig"), fact(compact.FactIdentifier, "config.Load()")}},
		{"numbers with units", []history.Message{user("Set the timeout to 30s, the cache to 512 MB and retries at 99.9%; go 1.26 has none.")},
			[]compact.Fact{fact(compact.FactQuantity, "30s"), fact(compact.FactQuantity, "512 MB"), fact(compact.FactQuantity, "99.9%")}},
		{"URLs, without trailing punctuation", []history.Message{assistant("See https://example.com/docs/a?b=1, then http://localhost:8080.")},
			[]compact.Fact{fact(compact.FactURL, "https://example.com/docs/a?b=1"), fact(compact.FactURL, "http://localhost:8080")}},
		{"error lines of any message", []history.Message{toolResult("c1", "ok\n./main.go:12:2: undefined: foo\n--- FAIL: TestX (0.00s)\npanic: boom")},
			[]compact.Fact{fact(compact.FactError, "./main.go:12:2: undefined: foo"), fact(compact.FactError, "--- FAIL: TestX (0.00s)"), fact(compact.FactError, "panic: boom")}},
		{"a tool result's paths are not facts", []history.Message{toolResult("c1", "main.go\nNOTES.md\n")}, nil},
		{"commands run: tool call arguments and $ lines", []history.Message{
			assistant("Running it.\n$ make lint", history.ToolCall{ID: "c1", Name: "run_command", Arguments: json.RawMessage(`{"command":"go test ./...","path":"cmd/falcon"}`)}),
		}, []compact.Fact{fact(compact.FactCommand, "make lint"), fact(compact.FactCommand, "go test ./..."), fact(compact.FactPath, "cmd/falcon")}},
		{"the user's explicit instructions", []history.Message{user("Thanks. Always run gofmt! We never use cobra. Don't touch vendor; you must keep tests green. Maybe later.")},
			[]compact.Fact{fact(compact.FactInstruction, "Always run gofmt!"), fact(compact.FactInstruction, "We never use cobra."),
				fact(compact.FactInstruction, "Don't touch vendor;"), fact(compact.FactInstruction, "you must keep tests green.")}},
		{"an assistant's 'must' is no instruction", []history.Message{assistant("I must say, it works.")}, nil},
		{"each fact once, whatever its case", []history.Message{user("Edit main.go."), assistant("Edited MAIN.GO.")},
			[]compact.Fact{fact(compact.FactPath, "main.go")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, compact.Facts(tc.msgs))
		})
	}
}

func TestFacts_InAndFidelity(t *testing.T) {
	prefix := []history.Message{
		user("Never touch go.sum. The timeout is 30s."),
		assistant("I will edit `parseConfig` in internal/config/load.go."),
		toolResult("c1", "error: open internal/config/load.go: permission denied"),
	}
	fid := compact.Fidelity(prefix, "- edit `parseconfig` in internal/config/load.go (the timeout: 30 s)\n- load.go: error on open, permission denied")
	assert.Equal(t, 6, fid.Facts, "go.sum, the instruction, 30s, parseConfig, load.go, the error")
	assert.Equal(t, 4, fid.Kept, "without case, 30s as 30 s, the error line by its words")
	assert.Equal(t, []string{"path: go.sum", "instruction: Never touch go.sum."}, fid.Missing)

	assert.True(t, fact(compact.FactInstruction, "Don't ever commit the vendor directory.").In("rule: never commit vendor directory"))
	assert.False(t, fact(compact.FactInstruction, "Don't ever commit the vendor directory.").In("rule: vendor"))
}

func TestFidelity_MissingBounded(t *testing.T) {
	var msgs []history.Message
	for i := range 50 {
		msgs = append(msgs, user(fmt.Sprintf("Look at pkg%d/file.go.", i)))
	}
	fid := compact.Fidelity(msgs, "nothing")
	assert.Equal(t, 50, fid.Facts)
	assert.Zero(t, fid.Kept)
	assert.Len(t, fid.Missing, history.MaxFidelityMissing)
	assert.Equal(t, "path: pkg0/file.go", fid.Missing[0])
}

// randomConversation builds a conversation of n messages from pieces that
// hold facts and pieces that hold none.
func randomConversation(r *rand.Rand, n int) []history.Message {
	pieces := []string{
		"Fix internal/ledger/round.go.", "Use `RoundHalfEven` there.", "The limit is 250 ms.", "See https://example.com/issue/7.",
		"error: rounding drifted by 0.01", "We never round twice.", "You must keep the API.", "ok", "Thanks, that works.",
		"Looks good to me.", "Let me check.", "$ go test ./ledger", "It is 3 files.", "Done with cmd/ledger/main.go.",
		"Ünïcödé text `naïve` and 5 GB.", "`` empty span", "https://", "a/b c/d/e",
	}
	msgs := make([]history.Message, n)
	for i := range msgs {
		var parts []string
		for range 1 + r.IntN(4) {
			parts = append(parts, pieces[r.IntN(len(pieces))])
		}
		text := strings.Join(parts, " ")
		switch r.IntN(3) {
		case 0:
			msgs[i] = user(text)
		case 1:
			msgs[i] = assistant(text, history.ToolCall{ID: fmt.Sprint("c", i), Name: "run", Arguments: json.RawMessage(`{"command":"go vet ./...","path":"ledger"}`)})
		default:
			msgs[i] = toolResult(fmt.Sprint("c", i), text)
		}
	}
	return msgs
}

// Properties of Facts over random conversations: deterministic; every fact
// is distinct and taken from the messages; a "summary" that is the whole
// conversation keeps every fact, an empty one none; a prefix's facts are
// a prefix of the whole conversation's (first occurrence order).
func TestFacts_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		msgs := randomConversation(r, 1+r.IntN(30))
		facts := compact.Facts(msgs)
		require.Equal(t, facts, compact.Facts(msgs), "deterministic")

		var all strings.Builder
		for _, m := range msgs {
			all.WriteString(m.Text + "\n")
			for _, c := range m.ToolCalls {
				all.WriteString(string(c.Arguments) + "\n")
			}
		}
		seen := map[string]bool{}
		for _, f := range facts {
			key := string(f.Kind) + strings.ToLower(f.Text)
			require.False(t, seen[key], "distinct: %v", f)
			seen[key] = true
			require.NotEmpty(t, strings.TrimSpace(f.Text))
			require.Contains(t, strings.ToLower(all.String()), strings.ToLower(f.Text), "taken from the messages")
		}
		fid := compact.Fidelity(msgs, all.String())
		require.Equal(t, fid.Facts, fid.Kept, "the whole conversation keeps every fact: %v", fid.Missing)
		require.Empty(t, fid.Missing)
		empty := compact.Fidelity(msgs, "")
		require.Zero(t, empty.Kept)
		require.Len(t, empty.Missing, min(len(facts), history.MaxFidelityMissing))

		cut := r.IntN(len(msgs) + 1)
		head := compact.Facts(msgs[:cut])
		require.Equal(t, head, append([]compact.Fact(nil), facts[:len(head)]...), "first occurrence order")
	}
}

// BenchmarkFidelity is the fidelity figure of one compaction's prefix of
// 5,000 messages of ordinary prose with paths, numbers and code spans:
// Facts and Fidelity run in every compaction's commit, so their cost is
// part of the compaction's own (BenchmarkCompactionOverhead in session).
func BenchmarkFidelity(b *testing.B) {
	msgs := make([]history.Message, 5000)
	for i := range msgs {
		msgs[i] = history.Message{ID: fmt.Sprint(i), Role: history.RoleUser,
			Text: fmt.Sprintf("Message %d: read internal/ledger/round%d.go and set `maxConns` to %d connections; the build took %d.5s, see https://example.com/run/%d. Never push to main.", i, i%7, i%50, i%9, i)}
		if i%2 == 1 {
			msgs[i].Role = history.RoleAssistant
		}
	}
	summary := "Kept: internal/ledger/round1.go, maxConns, 25 connections."
	for b.Loop() {
		compact.Fidelity(msgs, summary)
	}
}
