package provider_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sessionkit/sessionkit/provider"
)

func TestCheckEmbeddings(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	assert.NoError(t, provider.CheckEmbeddings([][]float32{{1, 2}, {3, 4}}, 2))
	assert.NoError(t, provider.CheckEmbeddings(nil, 0))
	for name, c := range map[string]struct {
		vecs [][]float32
		n    int
	}{
		"too few":         {[][]float32{{1}}, 2},
		"too many":        {[][]float32{{1}, {2}}, 1},
		"empty vector":    {[][]float32{{}}, 1},
		"other dimension": {[][]float32{{1, 2}, {3}}, 2},
		"NaN":             {[][]float32{{1, nan}}, 1},
		"infinity":        {[][]float32{{inf}}, 1},
	} {
		assert.ErrorIs(t, provider.CheckEmbeddings(c.vecs, c.n), provider.ErrBadEmbedding, name)
	}
}
