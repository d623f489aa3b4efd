package historytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// testReadLease: another store reads a live lease with its holder, without
// taking it (the holder keeps it and can still write); a session never
// leased, a released lease and an expired one read as none.
func testReadLease(t *testing.T, h LeaseHarness) {
	open := h.New(t)
	agent := open("agent-1", shortTTL)
	r := open("reader", 0)
	ctx := context.Background()
	read := func(id string) *history.LeaseInfo {
		t.Helper()
		info, err := r.ReadLease(ctx, id)
		require.NoError(t, err)
		return info
	}
	assert.Nil(t, read("s1"), "never leased")

	l, err := agent.Acquire(ctx, "s1")
	require.NoError(t, err)
	info := read("s1")
	require.NotNil(t, info)
	assert.Equal(t, "s1", info.Session)
	assert.Equal(t, "agent-1", info.Holder)
	assert.True(t, info.Expires.After(time.Now().Add(-time.Second)), "expires %v", info.Expires)
	snap, err := l.Store().Create(ctx, history.NewSession{ID: "s1"})
	require.NoError(t, err, "the holder still holds its lease")
	assert.Equal(t, "s1", snap.ID)
	require.NoError(t, l.Release(ctx))
	assert.Nil(t, read("s1"), "released")

	l, err = agent.Acquire(ctx, "s2")
	require.NoError(t, err)
	require.NotNil(t, read("s2"))
	h.StopRenewals(l)
	require.Eventually(t, func() bool { return read("s2") == nil }, 10*shortTTL, shortTTL/10, "expired")
}
