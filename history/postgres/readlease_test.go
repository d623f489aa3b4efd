package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// TestReadLease: a live lease of another Store is read, with its holder,
// without being taken; a released one, and a session never leased, read as
// none.
func TestReadLease(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	agent := openStore(t, url, WithHolder("agent-1"))
	reader := openStore(t, url)

	info, err := reader.ReadLease(ctx, "s1")
	require.NoError(t, err)
	assert.Nil(t, info, "never leased")

	l, err := agent.Acquire(ctx, "s1")
	require.NoError(t, err)
	info, err = reader.ReadLease(ctx, "s1")
	require.NoError(t, err)
	require.NotNil(t, info)
	assert.Equal(t, "s1", info.Session)
	assert.Equal(t, "agent-1", info.Holder)
	select {
	case <-l.Lost():
		t.Fatal("reading the lease made its holder lose it")
	default:
	}

	require.NoError(t, l.Release(ctx))
	info, err = reader.ReadLease(ctx, "s1")
	require.NoError(t, err)
	assert.Nil(t, info, "released")
}
