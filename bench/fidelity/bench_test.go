package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/internal/envconfig"
	"github.com/sessionkit/sessionkit/provider/fromenv"
	"github.com/sessionkit/sessionkit/provider/offline"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var shortGen = GenConfig{Seed: 7, Sessions: 2, Messages: 200, FactsPerKind: 2}

// TestShortRun is the benchmark's short mode: two sessions through the
// whole harness on both stores, with the figures of each depth checked
// against each other.
func TestShortRun(t *testing.T) {
	for _, store := range []string{"memstore", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			col, err := Run(context.Background(), Options{Gen: shortGen, Store: store, Dir: t.TempDir()}, fromenv.Offline, offline.New())
			require.NoError(t, err)
			facts := shortGen.Sessions * shortGen.FactsPerKind * len(Kinds)
			for d, s := range col.Depth {
				assert.Equal(t, shortGen.Sessions, s.Sessions, "depth %d", d+1)
				assert.Zero(t, s.Failed, "depth %d", d+1)
				assert.Equal(t, facts, s.Facts, "depth %d", d+1)
				assert.Positive(t, s.FactsArchived, "depth %d", d+1)
				assert.LessOrEqual(t, s.Kept, s.FactsArchived, "depth %d", d+1)
				assert.Positive(t, s.Kept, "depth %d: the offline summary keeps some facts", d+1)
				assert.LessOrEqual(t, s.RecallArchived, s.Recall, "depth %d", d+1)
				assert.LessOrEqual(t, s.Recall, s.Facts, "depth %d", d+1)
				assert.LessOrEqual(t, s.Top, s.Recall, "depth %d", d+1)
				require.True(t, s.Searched, "the store searches")
				assert.GreaterOrEqual(t, float64(s.Recall)/float64(s.Facts), 0.9, "depth %d: recall@5 of all facts", d+1)
				assert.GreaterOrEqual(t, float64(s.RecallArchived)/float64(s.FactsArchived), 0.9, "depth %d: recall@5 of the archived facts", d+1)
				assert.Equal(t, shortGen.Sessions, s.FidelityN, "depth %d: every Segment records its fidelity", d+1)
				if d > 0 {
					prev := col.Depth[d-1]
					assert.Greater(t, s.Archived, prev.Archived, "depth %d archives more", d+1)
					assert.GreaterOrEqual(t, s.FactsArchived, prev.FactsArchived, "depth %d", d+1)
					assert.Less(t, s.ContextAfter, prev.ContextAfter, "depth %d leaves less context", d+1)
				}
			}
			var out bytes.Buffer
			WriteTable(&out, []Column{col})
			for _, r := range rows {
				assert.Equal(t, Depths, strings.Count(out.String(), "| "+r.name+" |"), r.name)
			}
		})
	}
}

// TestRunCommand: the command prints the table; a bad flag is a usage
// error naming it.
func TestRunCommand(t *testing.T) {
	var out, errs bytes.Buffer
	require.NoError(t, run([]string{"-sessions", "1", "-store", "memstore", "-offline", "-q"}, &out, &errs))
	assert.Contains(t, out.String(), "| depth | measure | offline |")
	assert.Contains(t, out.String(), "| 3 | facts kept in the retained summary / facts archived |")
	assert.Empty(t, errs.String())

	err := run([]string{"-store", "postgres"}, &out, &errs)
	var ue *envconfig.UsageError
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.Contains(t, err.Error(), "-store")
}

// TestPlayChecksTheSession: a script whose messages the session does not
// end up holding is an error, not a silent measurement of something else.
func TestPlayChecksTheSession(t *testing.T) {
	ctx := context.Background()
	s := Generate(GenConfig{Seed: 3, Sessions: 1, Messages: 40, FactsPerKind: 1})[0]
	p := newPlayer(&s)
	// The tool results the session records are the player's; change the
	// script's copy of one so that the session differs from it.
	for i := range s.Msgs {
		if s.Msgs[i].CallID != "" {
			s.Msgs[i].Text += " (changed)"
			break
		}
	}
	sess, err := session.New(ctx, session.Config{Provider: p, Store: memstore.New(), Tools: p.tools()})
	require.NoError(t, err)
	defer sess.Close()
	_, err = play(ctx, sess, &s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "differs from the script")
}

// TestModelColumn: when the environment selects a model, the table gets a
// column for it. The model here is an OpenAI-compatible server whose
// "summary" is the whole summary request, so it keeps every archived fact.
func TestModelColumn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var all []string
		for _, m := range body.Messages {
			all = append(all, m.Content)
		}
		text := strings.Join(all, "\n")
		if body.Stream {
			openaitest.WriteSSE(w, openaitest.RoleChunk(), openaitest.TextChunk(text), openaitest.FinishChunk("stop"), openaitest.UsageChunk(len(text)/4, len(text)/4), openaitest.Done)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": openaitest.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": len(text) / 4, "completion_tokens": len(text) / 4, "total_tokens": len(text) / 2},
		})
	}))
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("SESSIONKIT_PROVIDER", "")
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("SESSIONKIT_MODEL", "echo-model")
	var out, errs bytes.Buffer
	require.NoError(t, run([]string{"-sessions", "1", "-store", "memstore", "-q"}, &out, &errs), errs.String())
	table := out.String()
	assert.Contains(t, table, "| depth | measure | offline | openai:echo-model |")
	checked := false
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| 1 | facts kept in the retained summary") {
			cells := strings.Split(line, "|")
			require.Len(t, cells, 6, line)
			assert.Contains(t, cells[4], "(1.000)", "the echoing model keeps every archived fact: %s", line)
			checked = true
		}
	}
	assert.True(t, checked, "the table has the row:\n%s", table)
}
