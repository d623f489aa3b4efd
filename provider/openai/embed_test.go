package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/openai"
)

// embedServer answers /v1/embeddings with answer(the request's input).
func embedServer(t *testing.T, answer func(w http.ResponseWriter, input []string)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "embed-small" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		answer(w, req.Input)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type datum struct {
	Embedding []float32 `json:"embedding"`
	Index     int       `json:"index"`
}

func reply(w http.ResponseWriter, data []datum) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "embed-small"})
}

func TestEmbed_OneVectorPerTextInOrder(t *testing.T) {
	srv := embedServer(t, func(w http.ResponseWriter, input []string) {
		var data []datum
		for i := len(input) - 1; i >= 0; i-- { // listed in reverse
			data = append(data, datum{[]float32{float32(len(input[i])), float32(i)}, i})
		}
		reply(w, data)
	})
	p, err := openai.New(openai.WithModel("chat"), openai.WithEmbeddingModel("embed-small"), openai.WithBaseURL(srv.URL))
	require.NoError(t, err)
	vecs, err := p.Embed(context.Background(), []string{"a", "bbb", "cc"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 0}, {3, 1}, {2, 2}}, vecs)
	vecs, err = p.Embed(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, vecs)
}

func TestEmbed_Failures(t *testing.T) {
	ctx := context.Background()
	p, err := openai.New(openai.WithModel("chat"), openai.WithBaseURL("http://127.0.0.1:1"))
	require.NoError(t, err)
	_, err = p.Embed(ctx, []string{"x"})
	assert.ErrorIs(t, err, openai.ErrNoEmbeddingModel)

	for name, c := range map[string]struct {
		answer func(w http.ResponseWriter, input []string)
		bad    bool // an answer that is not one usable vector per text
	}{
		"server error": {func(w http.ResponseWriter, _ []string) {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
		}, false},
		"too few": {func(w http.ResponseWriter, _ []string) { reply(w, []datum{{[]float32{1}, 0}}) }, true},
		"index twice": {func(w http.ResponseWriter, _ []string) {
			reply(w, []datum{{[]float32{1}, 0}, {[]float32{1}, 0}})
		}, true},
		"index out of range": {func(w http.ResponseWriter, _ []string) {
			reply(w, []datum{{[]float32{1}, 0}, {[]float32{1}, 5}})
		}, true},
		"other dimension": {func(w http.ResponseWriter, _ []string) {
			reply(w, []datum{{[]float32{1, 2}, 0}, {[]float32{1}, 1}})
		}, true},
	} {
		srv := embedServer(t, c.answer)
		p, err := openai.New(openai.WithModel("chat"), openai.WithEmbeddingModel("embed-small"), openai.WithBaseURL(srv.URL), openai.WithAPIKey("sk-secret"))
		require.NoError(t, err)
		_, err = p.Embed(ctx, []string{"one", "two"})
		require.Error(t, err, name)
		assert.Equal(t, c.bad, errors.Is(err, provider.ErrBadEmbedding), name)
		assert.NotContains(t, err.Error(), "sk-secret", name)
	}
}

func TestEmbed_Timeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handler returns
	srv.Config.SetKeepAlivesEnabled(false)
	p, err := openai.New(openai.WithModel("chat"), openai.WithEmbeddingModel("embed-small"), openai.WithBaseURL(srv.URL), openai.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	_, err = p.Embed(context.Background(), []string{"x"})
	require.Error(t, err, "the request is bounded by WithTimeout")
}
