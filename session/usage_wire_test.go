package session_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/provider"
	at "github.com/sessionkit/sessionkit/provider/anthropic/anthropictest"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// wireUsage is the usage a server reports for one response, in the terms
// of both wires: in is all the input (OpenAI's prompt_tokens; Anthropic's
// input_tokens is what is left after the cache figures), read the
// tokens read from the cache, write those written to it (Chat Completions
// reports none).
type wireUsage struct{ in, out, read, write int }

// usageReply is a streamed answer of text on w that reports u, and the
// provider.Usage it means (the provider's documented mapping).
func usageReply(w *faultWire, text string, u wireUsage) (http.HandlerFunc, provider.Usage) {
	if w.name == "openai" {
		usage := mustWireJSON(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": openaitest.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": u.in, "completion_tokens": u.out, "total_tokens": u.in + u.out,
				"prompt_tokens_details": map[string]any{"cached_tokens": u.read}},
		})
		lines := []string{openaitest.RoleChunk()}
		if text != "" {
			lines = append(lines, openaitest.TextChunk(text))
		}
		return streamLines(append(lines, openaitest.FinishChunk("stop"), usage, openaitest.Done)...),
			provider.Usage{InputTokens: u.in, OutputTokens: u.out, CacheReadTokens: u.read}
	}
	au := at.Usage{Input: u.in - u.read - u.write, CacheRead: u.read, CacheWrite: u.write, Output: u.out}
	return at.Reply(text, au), provider.Usage{InputTokens: u.in, OutputTokens: u.out, CacheReadTokens: u.read, CacheWriteTokens: u.write}
}

// TestUsage_WireEndToEnd: a session above the real OpenAI and Anthropic
// providers, talking to a server on 127.0.0.1 that speaks their wire
// formats and reports usage with cache figures, through turns, a request
// retried after a 500 (the failed attempt reported nothing and counts
// nothing), a manual compaction, a summary call that came back empty
// (compact_failed, billed: counted), one that failed without a response
// (counted nothing), and an automatic compaction: Session.Usage is the sum
// of what the server reported, per purpose and priced, before the session
// closes, in another process that opens the SQLite file, and in a new
// store handle after it.
func TestUsage_WireEndToEnd(t *testing.T) {
	forEachWire(t, func(t *testing.T, w *faultWire) {
		prices := provider.PriceTable{
			openaitest.Model: {Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2},
			at.Model:         {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		}
		model := map[string]string{"openai": openaitest.Model, "anthropic": at.Model}[w.name]
		want := &ledgerWant{prices: prices}
		var script []http.HandlerFunc
		// step adds a scripted answer and what it counts for.
		step := func(p provider.Purpose, text string, u wireUsage) {
			h, pu := usageReply(w, text, u)
			script = append(script, h)
			want.add(p, model, pu)
		}
		script = append(script, w.httpError(http.StatusInternalServerError)) // retried
		step(provider.PurposeTurn, "one", wireUsage{in: 1200, out: 40, read: 1024, write: 100})
		step(provider.PurposeTurn, "two", wireUsage{in: 1500, out: 60, read: 1152})
		step(provider.PurposeTurn, "three", wireUsage{in: 1800, out: 30, read: 1408, write: 64})
		step(provider.PurposeSummary, "Summary one.", wireUsage{in: 900, out: 120, write: 800})
		step(provider.PurposeTurn, "four", wireUsage{in: 700, out: 20, read: 512})
		step(provider.PurposeTurn, "five", wireUsage{in: 900, out: 25, read: 640})
		step(provider.PurposeSummary, "", wireUsage{in: 850, out: 2}) // empty: compact_failed, billed
		script = append(script, w.httpError(http.StatusBadRequest))   // no response: nothing billed
		step(provider.PurposeTurn, "six", wireUsage{in: 60000, out: 50, read: 59000})
		step(provider.PurposeSummary, "Summary two.", wireUsage{in: 30000, out: 200, read: 20000})
		beforeAuto := len(script) - 1

		cs := newChatServer(t, w, script...)
		path := filepath.Join(t.TempDir(), "s.db")
		store, err := sqlite.Open(path)
		require.NoError(t, err)
		s := newSession(t, w.newProvider(t, cs, wireOptions{}.with(t, cs)),
			session.Config{Store: store, Pricing: prices, AutoCompactTokens: 50000})
		rec := record(t, s)

		for _, text := range []string{"p1", "p2", "p3"} {
			require.NoError(t, wait(t, mustPrompt(t, s, text)).Err)
		}
		res := wait(t, mustCompact(t, s, ""))
		require.True(t, res.Compacted, res.Error)
		for _, text := range []string{"p4", "p5"} {
			require.NoError(t, wait(t, mustPrompt(t, s, text)).Err)
		}
		res = wait(t, mustCompact(t, s, ""))
		require.Equal(t, session.ReasonCompactFailed, res.Reason, "the empty summary")
		assert.Equal(t, 850, res.Usage.InputTokens, "the failed compaction carries its billed usage")
		res = wait(t, mustCompact(t, s, ""))
		require.Equal(t, session.ReasonCompactFailed, res.Reason, "the 400")
		assert.Zero(t, res.Usage, "a summary call without a response reports no usage")
		require.NoError(t, wait(t, mustPrompt(t, s, "p6")).Err)
		rec.until(t, func(evs []session.Event) bool {
			for _, ev := range evs {
				if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Trigger == session.TriggerAuto && c.Phase == session.PhaseFinished {
					require.True(t, c.Result.Compacted, c.Result.Error)
					return true
				}
			}
			return false
		})
		require.Len(t, cs.requests(), beforeAuto+1, "every scripted request was made, the retry included")
		purposes := cs.purposes()
		assert.Equal(t, []string{"turn", "turn"}, purposes[:2], "the 500 was retried")
		assert.Equal(t, "summary", purposes[len(purposes)-1], "the automatic compaction's summary call")

		got, err := s.Usage(ctxT(t))
		require.NoError(t, err)
		equalReport(t, want.rep, got)
		assert.Equal(t, 9, got.Total.Requests, "six turns, three summary calls")
		assert.Equal(t, 3, got.ByPurpose[provider.PurposeSummary].Requests)

		id := s.ID()
		require.NoError(t, s.Close())
		require.NoError(t, store.Close())
		equalReport(t, want.rep, usageInChild(t, path, id))

		store2, err := sqlite.Open(path)
		require.NoError(t, err)
		t.Cleanup(func() { _ = store2.Close() })
		s2, err := session.Open(context.Background(), session.Config{ID: id, Provider: providertest.New(), Store: store2, Pricing: prices})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s2.Close() })
		again, err := s2.Usage(ctxT(t))
		require.NoError(t, err)
		equalReport(t, want.rep, again)
	})
}

// childEnv (and childEnv_ID) name the SQLite file and session a child process of
// TestUsage_WireEndToEnd reads the usage of.
const childEnv = "SESSIONKIT_USAGE_CHILD"

// usageInChild runs this test binary again as another process that opens
// the session in the SQLite file at path and prints its Session.Usage.
func usageInChild(t *testing.T, path, id string) session.UsageReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestUsage_ChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+path, childEnv+"_ID="+id)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	_, js, ok := strings.Cut(string(out), "usage: ")
	require.True(t, ok, "%s", out)
	var rep session.UsageReport
	require.NoError(t, json.NewDecoder(strings.NewReader(js)).Decode(&rep))
	return rep
}

// TestUsage_ChildProcess is the other process of usageInChild; it is
// skipped unless SESSIONKIT_USAGE_CHILD is set.
func TestUsage_ChildProcess(t *testing.T) {
	path, id := os.Getenv(childEnv), os.Getenv(childEnv+"_ID")
	if path == "" {
		t.Skip("runs as the child process of TestUsage_WireEndToEnd")
	}
	store, err := sqlite.Open(path)
	require.NoError(t, err)
	defer store.Close()
	s, err := session.Open(context.Background(), session.Config{ID: id, Provider: providertest.New(), Store: store})
	require.NoError(t, err)
	defer s.Close()
	rep, err := s.Usage(ctxT(t))
	require.NoError(t, err)
	js, err := json.Marshal(rep)
	require.NoError(t, err)
	os.Stdout.WriteString("usage: " + string(js) + "\n")
}
