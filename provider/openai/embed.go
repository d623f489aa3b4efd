package openai

import (
	"context"
	"errors"
	"fmt"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/sessionkit/sessionkit/provider"
)

var _ provider.Embedder = (*Provider)(nil)

// ErrNoEmbeddingModel is the error of [Provider.Embed] on a provider made
// without [WithEmbeddingModel].
var ErrNoEmbeddingModel = errors.New("openai: no embedding model (WithEmbeddingModel)")

// Embed implements [provider.Embedder] with one request to the endpoint's
// /embeddings (POST {"model", "input": texts}), bounded by [WithTimeout]
// and not retried (an embedder's caller keeps the text searchable by words
// and tries again later). It returns one vector per text in the order of
// texts, whatever order the server lists them in. Errors: ErrNoEmbeddingModel,
// the request's failure (the API key redacted), ctx's error, or an error
// wrapping [provider.ErrBadEmbedding] for an answer that is not one usable
// vector per text ([provider.CheckEmbeddings]).
func (p *Provider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if p.embedModel == "" {
		return nil, ErrNoEmbeddingModel
	}
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	if p.limits.Request > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.limits.Request)
		defer cancel()
	}
	res, err := p.client.CreateEmbeddings(ctx, goopenai.EmbeddingRequest{Input: texts, Model: goopenai.EmbeddingModel(p.embedModel)})
	if err != nil {
		return nil, fmt.Errorf("openai: embed %d texts: %w", len(texts), p.redactErr(err))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%w: openai: embedding index %d for %d texts", provider.ErrBadEmbedding, d.Index, len(texts))
		}
		out[d.Index] = d.Embedding
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("%w: openai: %d embeddings for %d texts", provider.ErrBadEmbedding, len(res.Data), len(texts))
	}
	if err := provider.CheckEmbeddings(out, len(texts)); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return out, nil
}
