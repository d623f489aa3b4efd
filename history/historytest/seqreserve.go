package historytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// seqGap is the gap the reservation cases reserve: the session package's.
const seqGap = 1 << 32

// testSeqReserve: a reservation raises the recorded Through by the gap and
// reports it before and after, durably (a reopen sees it, a batch below it
// is refused); it is not a versioned write; near history.MaxSeq it reserves
// nothing and writes nothing; a missing session and a bad gap are refused.
func testSeqReserve(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	r := s
	l := s
	v := create(t, s, "s")

	got, err := r.ReserveSeqs(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: 0, Start: seqGap}, got, "a new session")
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(seqGap+1, "turn")}, Through: seqGap + 5}))
	got, err = r.ReserveSeqs(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: seqGap + 5, Start: 2*seqGap + 5}, got, "from the last batch's Through")

	s = h.reopen(t, s)
	r, l = s, s
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(2*seqGap+5), snap.LastSeq, "the reservation is durable")
	assert.Equal(t, v, snap.Version, "a reservation leaves the version as it is")
	err = l.LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(seqGap+6, "turn")}, Through: seqGap + 6})
	require.ErrorIs(t, err, history.ErrInvalid, "a batch below the reserved start")
	_, err = s.Append(ctx, "s", v, Msgs("m", 1))
	require.NoError(t, err, "a reservation does not make the session's next write conflict")

	// At the limit: the last reservation with room, then none.
	limit := uint64(history.MaxSeq - 2*seqGap)
	require.NoError(t, l.LogEvents(ctx, "s", history.EventBatch{Through: limit}))
	got, err = r.ReserveSeqs(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: limit, Start: limit + seqGap}, got, "room for the gap and a gap above it")
	got, err = r.ReserveSeqs(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: limit + seqGap}, got, "no room: nothing reserved")
	snap, err = s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, limit+seqGap, snap.LastSeq, "a reservation without room writes nothing")

	_, err = r.ReserveSeqs(ctx, "missing", seqGap)
	require.ErrorIs(t, err, history.ErrNotFound)
	create(t, s, "t")
	for _, gap := range []uint64{0, history.MaxSeq/2 + 1, 1 << 63} {
		_, err = r.ReserveSeqs(ctx, "t", gap)
		require.ErrorIs(t, err, history.ErrInvalid, "gap %d", gap)
	}
	got, err = r.ReserveSeqs(ctx, "t", history.MaxSeq/2)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Start: history.MaxSeq / 2}, got, "the largest gap")
	snap, err = s.Load(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, uint64(history.MaxSeq/2), snap.LastSeq)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = r.ReserveSeqs(cctx, "t", seqGap)
	require.ErrorIs(t, err, context.Canceled)
}

// testAcquireReserving: AcquireReserving takes the lease and, in the same
// transaction, reserves sequence numbers of a session that exists; a
// session leased before it exists gets its lease and no reservation; a
// refused Acquire reserves nothing; without room the lease is taken and
// nothing reserved; the reservation through a lease is fenced like every
// write, and the store's own is refused on a leased session.
func testAcquireReserving(t *testing.T, h LeaseHarness) {
	t.Parallel()
	open := h.New(t)
	a := open("a", 0)
	probe := a
	b := open("b", 0)
	ctx := context.Background()

	la, res, err := probe.AcquireReserving(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{}, res, "no session yet: nothing reserved")
	_, err = la.Store().Create(ctx, history.NewSession{ID: "s"})
	require.NoError(t, err)
	require.NoError(t, la.Store().LogEvents(ctx, "s", history.EventBatch{Through: 7}))

	_, _, err = b.AcquireReserving(ctx, "s", seqGap)
	LeaseError(t, err, "s", "a")
	snap, err := a.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, uint64(7), snap.LastSeq, "a refused Acquire reserves nothing")
	// The store's own reservation is refused on a leased session; the
	// lease's is made.
	_, err = a.ReserveSeqs(ctx, "s", seqGap)
	LeaseError(t, err, "s", "a")
	got, err := la.Store().ReserveSeqs(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: 7, Start: 7 + seqGap}, got)
	require.NoError(t, la.Release(ctx))

	lb, res, err := b.AcquireReserving(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: 7 + seqGap, Start: 7 + 2*seqGap}, res)
	snap, err = lb.Store().Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, res.Start, snap.LastSeq, "a Load under the lease sees the reservation")
	_, err = la.Store().ReserveSeqs(ctx, "s", seqGap)
	require.ErrorIs(t, err, history.ErrFenced, "a former holder's reservation")
	err = lb.Store().LogEvents(ctx, "s", history.EventBatch{Events: []history.LoggedEvent{loggedEvent(8, "turn")}, Through: 8})
	require.ErrorIs(t, err, history.ErrInvalid, "numbers below the reserved start are refused")

	// Without room the lease is taken and nothing reserved.
	limit := uint64(history.MaxSeq - 2*seqGap)
	require.NoError(t, lb.Store().LogEvents(ctx, "s", history.EventBatch{Through: limit + 1}))
	require.NoError(t, lb.Release(ctx))
	lc, res, err := probe.AcquireReserving(ctx, "s", seqGap)
	require.NoError(t, err)
	assert.Equal(t, history.SeqReservation{Found: true, Last: limit + 1}, res)
	assert.Greater(t, lc.Token(), lb.Token())
	snap, err = a.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, limit+1, snap.LastSeq)
	require.NoError(t, lc.Release(ctx))

	// A bad gap takes nothing.
	for _, gap := range []uint64{0, history.MaxSeq/2 + 1} {
		_, _, err = probe.AcquireReserving(ctx, "s", gap)
		require.ErrorIs(t, err, history.ErrInvalid, "gap %d", gap)
	}
	ld, res, err := b.AcquireReserving(ctx, "s", 1)
	require.NoError(t, err, "the bad gaps left the lease free")
	assert.Equal(t, history.SeqReservation{Found: true, Last: limit + 1, Start: limit + 2}, res)
	require.NoError(t, ld.Release(ctx))
}
