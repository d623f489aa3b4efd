package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Embedder turns texts into vectors whose closeness tells how alike the
// texts' meanings are (an embedding model). Embed returns one vector per
// text, in the order of texts, all of one length; a caller checks what it
// gets with [CheckEmbeddings] before it keeps it. provider/openai
// implements it against an OpenAI-compatible /v1/embeddings endpoint
// (OpenAI, Ollama, vLLM and others serve it) and providertest as a fake.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrBadEmbedding is wrapped by the error of [CheckEmbeddings].
var ErrBadEmbedding = errors.New("provider: unusable embeddings")

// CheckEmbeddings reports why vecs, an Embedder's answer for n texts, is
// not usable: another count than n, an empty vector, vectors of different
// lengths, or a value that is NaN or infinite. The error wraps
// ErrBadEmbedding; nil means every vector can be kept.
func CheckEmbeddings(vecs [][]float32, n int) error {
	if len(vecs) != n {
		return fmt.Errorf("%w: %d vectors for %d texts", ErrBadEmbedding, len(vecs), n)
	}
	for i, v := range vecs {
		switch {
		case len(v) == 0:
			return fmt.Errorf("%w: vector %d is empty", ErrBadEmbedding, i)
		case len(v) != len(vecs[0]):
			return fmt.Errorf("%w: vector %d has %d dimensions, vector 0 has %d", ErrBadEmbedding, i, len(v), len(vecs[0]))
		}
		for j, x := range v {
			if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("%w: vector %d holds %v at %d", ErrBadEmbedding, i, x, j)
			}
		}
	}
	return nil
}
