package providertest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
)

func TestEmbedder(t *testing.T) {
	e := providertest.NewEmbedder(16)
	vecs, err := e.Embed(context.Background(), []string{"the ledger rounding", "The Ledger rounding!", "cobra"})
	require.NoError(t, err)
	require.NoError(t, provider.CheckEmbeddings(vecs, 3))
	assert.Equal(t, vecs[0], vecs[1], "the same words, the same vector")
	assert.Len(t, vecs[2], 16)
	assert.Equal(t, [][]string{{"the ledger rounding", "The Ledger rounding!", "cobra"}}, e.Calls())

	boom := errors.New("boom")
	e.Answer = func(context.Context, []string) ([][]float32, error) { return nil, boom }
	_, err = e.Embed(context.Background(), []string{"x"})
	assert.ErrorIs(t, err, boom)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.Answer = nil
	_, err = e.Embed(ctx, []string{"x"})
	assert.ErrorIs(t, err, context.Canceled)
}
