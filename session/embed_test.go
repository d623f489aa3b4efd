package session_test

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/history/sqlite"
	"github.com/sessionkit/sessionkit/internal/poll"
	"github.com/sessionkit/sessionkit/provider/openai"
	"github.com/sessionkit/sessionkit/provider/openai/openaitest"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// The paraphrase case: the answer shares no word with the question, so
// words alone never find it; the fake embedder's Same makes the
// question's words point where the answer's do, as a real embedding model
// puts a paraphrase near its text.
const (
	paraphraseAnswer   = "I ran into this amazing woman at the climbing gym last spring"
	paraphraseQuestion = "Where did Evan encounter his future spouse?"
)

// paraphraseEmbedder is the fake embedder of the paraphrase case.
func paraphraseEmbedder() *providertest.Embedder {
	e := providertest.NewEmbedder(64)
	e.Same = map[string]string{"encounter": "ran", "spouse": "woman", "future": "amazing"}
	return e
}

// paraphraseTurns are the conversation: filler, the answer (a user
// message, answered), more filler.
var paraphraseTurns = []string{
	"the build failed on the linker step again",
	"please rename the config loader to settings",
	paraphraseAnswer,
	"what does the flaky test in the queue package do",
	"bump the timeout of the integration suite",
}

// converseTexts runs one turn a text, each answered "noted: <text>".
func converseTexts(t *testing.T, s *session.Session, fake *providertest.Fake, prompts []string) {
	t.Helper()
	for _, p := range prompts {
		fake.QueueTurn(providertest.Reply{Text: "noted: " + p})
		require.NoError(t, wait(t, mustPrompt(t, s, p)).Err)
	}
}

// embedded waits until store holds a vector of every message of session id.
func embedded(t *testing.T, store history.Store, id string) {
	t.Helper()
	ok := poll.Within(waitLimit, func() bool {
		left, err := store.Unembedded(context.Background(), id, -1, 1)
		return err == nil && len(left) == 0
	})
	require.True(t, ok, "the messages were never all embedded")
}

// hitIDs are the message IDs of hits.
func hitIDs(hits []session.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MessageID
	}
	return out
}

// messageID is the ID of the message of s whose text is text.
func messageID(t *testing.T, store history.Store, id, text string) string {
	t.Helper()
	tl, err := store.Timeline(context.Background(), id)
	require.NoError(t, err)
	for _, e := range tl {
		if e.Message != nil && e.Message.Text == text {
			return e.Message.ID
		}
	}
	t.Fatalf("no message %q", text)
	return ""
}

// TestEmbedder_FindsParaphrase: a question that shares no word with its
// answer finds nothing by words; the same session opened again with an
// embedder embeds what it holds in the background and then finds the
// answer first, with the reply after it as its neighbour. Without the
// embedder nothing was stored. On memstore and SQLite.
func TestEmbedder_FindsParaphrase(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) history.Store{
		"memstore": func(*testing.T) history.Store { return memstore.New() },
		"sqlite": func(t *testing.T) history.Store {
			st, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			store := open(t)
			fake := providertest.New()
			s := newSession(t, fake, session.Config{ID: "p", Store: store})
			converseTexts(t, s, fake, paraphraseTurns)
			answer := messageID(t, store, "p", paraphraseAnswer)

			hits, err := s.Search(ctx, session.SearchRequest{Query: paraphraseQuestion})
			require.NoError(t, err)
			assert.NotContains(t, hitIDs(hits), answer, "words alone do not find it")
			left, err := store.Unembedded(ctx, "p", -1, 100)
			require.NoError(t, err)
			assert.Len(t, left, 2*len(paraphraseTurns), "without an embedder nothing is stored")
			require.NoError(t, s.Close())

			emb := paraphraseEmbedder()
			s = newSession(t, fake, session.Config{ID: "p", Store: store, Embedder: emb})
			embedded(t, store, "p") // in the background, from open
			hits, err = s.Search(ctx, session.SearchRequest{Query: paraphraseQuestion, Neighbors: 1})
			require.NoError(t, err)
			require.NotEmpty(t, hits)
			assert.Equal(t, answer, hits[0].MessageID, "the embedder finds the paraphrase first")
			if assert.Len(t, hits[0].Neighbors, 2) {
				assert.Equal(t, 1, hits[0].NeighborsBefore)
				assert.Equal(t, "noted: "+paraphraseAnswer, hits[0].Neighbors[1].Text, "the reply after it")
			}
			assert.Equal(t, paraphraseAnswer, hits[0].Snippet, "a hit found by its vector alone shows the message's start")
			for i, h := range hits {
				assert.NotContains(t, hitIDs(hits[i+1:]), h.MessageID, "a message is returned once")
				for _, n := range h.Neighbors {
					assert.NotContains(t, hitIDs(hits), n.ID, "a neighbour is no hit of its own")
				}
			}

			// A word query still ranks its word hit first.
			hits, err = s.Search(ctx, session.SearchRequest{Query: "linker"})
			require.NoError(t, err)
			require.NotEmpty(t, hits)
			assert.Equal(t, messageID(t, store, "p", paraphraseTurns[0]), hits[0].MessageID)

			// A turn's messages are embedded as they are committed.
			converseTexts(t, s, fake, []string{"the deploy script needs a dry run flag"})
			embedded(t, store, "p")
		})
	}
}

// TestEmbedder_RecallTool: the recall tool ranks with the embedder too.
func TestEmbedder_RecallTool(t *testing.T) {
	fake := providertest.New()
	store := memstore.New()
	s := newSession(t, fake, session.Config{ID: "r", Store: store, Embedder: paraphraseEmbedder(), Recall: true})
	converseTexts(t, s, fake, paraphraseTurns)
	embedded(t, store, "r")
	fake.QueueTurn(providertest.Reply{ToolCalls: []history.ToolCall{call("c1", session.RecallTool, `{"query":"`+paraphraseQuestion+`"}`)}}, providertest.Reply{Text: "found it"})
	require.NoError(t, wait(t, mustPrompt(t, s, "remind me")).Err)
	tl, err := store.Timeline(ctxT(t), "r")
	require.NoError(t, err)
	var out string
	for _, e := range tl {
		if e.Message != nil && e.Message.Role == history.RoleTool {
			out = e.Message.Text
		}
	}
	assert.Contains(t, out, "message "+messageID(t, store, "r", paraphraseAnswer), "the recall tool's answer")
	assert.Contains(t, out, "noted: "+paraphraseAnswer, "with its neighbour")
}

// TestEmbedder_OpenAI: provider/openai's Embed against a fake
// /v1/embeddings server serves as a session's embedder.
func TestEmbedder_OpenAI(t *testing.T) {
	emb := paraphraseEmbedder()
	var requests atomic.Int32
	srv := httptest.NewServer(openaitest.Embeddings(func(texts []string) [][]float32 {
		requests.Add(1)
		out := make([][]float32, len(texts))
		for i, text := range texts {
			out[i] = emb.Vector(text)
		}
		return out
	}))
	t.Cleanup(srv.Close)
	p, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithModel("chat"), openai.WithEmbeddingModel("embed-small"), openai.WithAPIKey("sk-test"))
	require.NoError(t, err)

	fake := providertest.New()
	store := memstore.New()
	s := newSession(t, fake, session.Config{ID: "o", Store: store, Embedder: p})
	converseTexts(t, s, fake, paraphraseTurns)
	embedded(t, store, "o")
	hits, err := s.Search(ctxT(t), session.SearchRequest{Query: paraphraseQuestion})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, messageID(t, store, "o", paraphraseAnswer), hits[0].MessageID)
	assert.Positive(t, requests.Load())
}

// TestEmbedder_Fork: a fork has its source's vectors: opened with the
// embedder, it embeds only its own messages, and finds the paraphrase.
func TestEmbedder_Fork(t *testing.T) {
	ctx := ctxT(t)
	fake := providertest.New()
	store := memstore.New()
	emb := paraphraseEmbedder()
	s := newSession(t, fake, session.Config{ID: "src", Store: store, Embedder: emb})
	converseTexts(t, s, fake, paraphraseTurns)
	embedded(t, store, "src")
	before := len(slices.Concat(emb.Calls()...))

	_, err := session.Fork(ctx, store, session.ForkRequest{From: "src", ID: "f"})
	require.NoError(t, err)
	f := newSession(t, fake, session.Config{ID: "f", Store: store, Embedder: emb})
	converseTexts(t, f, fake, []string{"a fork's own question"})
	embedded(t, store, "f")
	assert.ElementsMatch(t, []string{"a fork's own question", "noted: a fork's own question"}, slices.Concat(emb.Calls()...)[before:],
		"the fork embeds its own messages, none it inherits")
	hits, err := f.Search(ctx, session.SearchRequest{Query: paraphraseQuestion})
	require.NoError(t, err)
	require.NotEmpty(t, hits)
	assert.Equal(t, messageID(t, store, "f", paraphraseAnswer), hits[0].MessageID)
}

// TestEmbedder_Fails: an embedder that fails, times out, answers with
// another count or dimension than asked for, or NaN never fails a turn;
// the session reports it once with an EmbedEvent however many messages
// it could not embed, and the messages are found by their words.
func TestEmbedder_Fails(t *testing.T) {
	const dim = 8
	vectors := func(texts []string, d int) [][]float32 {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, d)
			out[i][i%d] = 1
		}
		return out
	}
	for name, c := range map[string]struct {
		answer  func(calls int, ctx context.Context, texts []string) ([][]float32, error)
		timeout time.Duration
		first   bool // the first turn is embedded: the failure comes after
		retried bool // wait for the retry after the backoff (a second failure)
	}{
		"error": {answer: func(_ int, _ context.Context, _ []string) ([][]float32, error) {
			return nil, errors.New("embedding service unavailable")
		}, retried: true},
		"timeout": {answer: func(_ int, ctx context.Context, _ []string) ([][]float32, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, timeout: 20 * time.Millisecond},
		"wrong count": {answer: func(_ int, _ context.Context, texts []string) ([][]float32, error) {
			return vectors(texts, dim)[:len(texts)-1], nil
		}},
		"NaN": {answer: func(_ int, _ context.Context, texts []string) ([][]float32, error) {
			out := vectors(texts, dim)
			out[0][1] = float32(math.NaN())
			return out, nil
		}},
		"mixed dimensions": {answer: func(_ int, _ context.Context, texts []string) ([][]float32, error) {
			var out [][]float32
			for _, text := range texts { // in one answer, or from one answer to the next
				out = append(out, vectors([]string{text}, dim+len(text)%2)...)
			}
			return out, nil
		}},
		"dimension changes": {answer: func(_ int, _ context.Context, texts []string) ([][]float32, error) {
			if texts[0] == "one text" || texts[0] == "fine" {
				return vectors(texts, dim), nil // the first turn's
			}
			return vectors(texts, dim/2), nil
		}, first: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			var calls atomic.Int32
			emb := &providertest.Embedder{Answer: func(ctx context.Context, texts []string) ([][]float32, error) {
				return c.answer(int(calls.Add(1)), ctx, texts)
			}}
			fake := providertest.New()
			store := memstore.New()
			s := newSession(t, fake, session.Config{ID: "x", Store: store, Embedder: emb, EmbedTimeout: c.timeout})
			rec := record(t, s)
			if c.first {
				fake.QueueTurn(providertest.Reply{Text: "fine"})
				require.NoError(t, wait(t, mustPrompt(t, s, "one text")).Err)
				embedded(t, store, "x")
			}
			converseTexts(t, s, fake, []string{"the linker step failed", "the queue package test is flaky"})
			evs := rec.until(t, func(evs []session.Event) bool { return len(embedEvents(evs)) > 0 })
			got := embedEvents(evs)[0]
			assert.True(t, got.Failed)
			assert.NotEmpty(t, got.Error)

			// More messages it cannot embed, and a retry that fails: no
			// second report.
			n := calls.Load()
			converseTexts(t, s, fake, []string{"and a third turn"})
			if c.retried {
				require.True(t, poll.Within(waitLimit, func() bool { return calls.Load() > n }), "tried again")
			}
			hits, err := s.Search(ctx, session.SearchRequest{Query: "flaky linker"})
			require.NoError(t, err, "a search with an embedder that fails")
			assert.Len(t, hits, 4, "found by their words (the prompts and the replies)")
			left, err := store.Unembedded(ctx, "x", -1, 100)
			require.NoError(t, err)
			assert.NotEmpty(t, left, "not embedded")
			require.NoError(t, s.Close())
			assert.Len(t, embedEvents(rec.all()), 1, "reported once")
		})
	}
}

// TestEmbedder_NeverHoldsAppends: an embedder that never answers holds no
// turn up: every append is acknowledged while it waits.
func TestEmbedder_NeverHoldsAppends(t *testing.T) {
	release := make(chan struct{})
	emb := &providertest.Embedder{Answer: func(ctx context.Context, _ []string) ([][]float32, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, errors.New("released")
	}}
	defer close(release)
	fake := providertest.New()
	store := memstore.New()
	s := newSession(t, fake, session.Config{ID: "h", Store: store, Embedder: emb, EmbedTimeout: time.Hour})
	converseTexts(t, s, fake, []string{"one", "two", "three"})
	left, err := store.Unembedded(ctxT(t), "h", -1, 100)
	require.NoError(t, err)
	assert.Len(t, left, 6, "all stored, none embedded")
}

// embedEvents are the EmbedEvents of evs.
func embedEvents(evs []session.Event) []*session.EmbedEvent {
	var out []*session.EmbedEvent
	for _, ev := range evs {
		if e, ok := ev.Payload.(*session.EmbedEvent); ok {
			out = append(out, e)
		}
	}
	return out
}

// TestEmbedder_BadConfig: a negative EmbedTimeout is refused, naming it.
func TestEmbedder_BadConfig(t *testing.T) {
	_, err := session.New(context.Background(), session.Config{Provider: providertest.New(), Embedder: providertest.NewEmbedder(4), EmbedTimeout: -time.Second})
	require.ErrorIs(t, err, session.ErrInvalid)
	assert.Contains(t, err.Error(), "EmbedTimeout")
}
