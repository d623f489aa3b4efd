package providertest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"unicode"

	"github.com/sessionkit/sessionkit/provider"
)

var _ provider.Embedder = (*Embedder)(nil)

// Embedder is a fake [provider.Embedder]: a text's vector is the sum of
// one hashed direction per lowercased word, normalized, of Dim dimensions,
// so texts that share words are close and the same text always gets the
// same vector. Answer, when set, answers instead (to script an error, a
// wrong count or dimension, NaN, or a wait). It is safe for concurrent
// use and records every call.
//
// Same maps a word (lowercased) to the word whose direction it takes, so
// that a test can make texts that share no word close, as a real
// embedding model makes paraphrases close: with Same{"wife": "woman"},
// "his wife" and "a woman" are near. Set it before the first call.
type Embedder struct {
	Dim    int
	Answer func(ctx context.Context, texts []string) ([][]float32, error)
	Same   map[string]string

	mu    sync.Mutex
	calls [][]string
}

// NewEmbedder returns an Embedder of dim dimensions.
func NewEmbedder(dim int) *Embedder { return &Embedder{Dim: dim} }

// Embed implements [provider.Embedder].
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, append([]string(nil), texts...))
	answer := e.Answer
	e.mu.Unlock()
	if answer != nil {
		return answer(ctx, texts)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.Vector(t)
	}
	return out, nil
}

// Calls returns the texts of every call so far, in order.
func (e *Embedder) Calls() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([][]string, len(e.calls))
	for i, c := range e.calls {
		out[i] = append([]string(nil), c...)
	}
	return out
}

// Vector is the vector Embed returns for text (without Answer).
func (e *Embedder) Vector(text string) []float32 {
	v := make([]float32, max(1, e.Dim))
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if same, ok := e.Same[w]; ok {
			w = same
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		v[x%uint64(len(v))] += 1 - 2*float32(x>>63)
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	return v
}
