package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadLease: a live lease of another Store is read, with its holder,
// without being taken; a released one, and a session never leased, read as
// none.
func TestReadLease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	agent := open(t, path, WithHolder("agent-1"))
	reader := open(t, path)

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
	assert.WithinDuration(t, time.Now().Add(DefaultLeaseTTL), info.Expires, 5*time.Second)

	info2, err := reader.ReadLease(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, info.Holder, info2.Holder, "reading took nothing over")
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
