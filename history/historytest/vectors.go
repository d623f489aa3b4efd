package historytest

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// unit is the vector of dim dimensions whose component k is 1 and the
// others small, so that unit(k) is nearest itself, then the vectors that
// share its tilt.
func unit(dim, k int, tilt float32) []float32 {
	v := make([]float32, dim)
	v[k] = 1
	v[(k+1)%dim] = tilt
	return v
}

// positions maps each message ID of session id to its timeline position.
func positions(t *testing.T, s history.Store, id string) map[string]int64 {
	t.Helper()
	tl, err := s.Timeline(context.Background(), id)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, e := range tl {
		if e.Message != nil {
			out[e.Message.ID] = e.Position
		}
	}
	return out
}

// vec is the MessageVector of message msgID of session id.
func vec(pos map[string]int64, msgID string, v []float32) history.MessageVector {
	return history.MessageVector{Position: pos[msgID], MessageID: msgID, Vector: v}
}

// nearIDs are the message IDs of hits, in order.
func nearIDs(hits []history.VectorHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.MessageID
	}
	return out
}

// unembedded are the IDs Unembedded returns after position after.
func unembedded(t *testing.T, s history.Store, id string, after int64, limit int) []string {
	t.Helper()
	got, err := s.Unembedded(context.Background(), id, after, limit)
	require.NoError(t, err)
	out := make([]string, len(got))
	for i, m := range got {
		out[i] = m.Message.ID
		assert.Equal(t, positions(t, s, id)[m.Message.ID], m.Position, "the position of %s", m.Message.ID)
	}
	return out
}

// testVectors: vectors are kept per message, Active and archived, found
// nearest first by cosine (ties: the later message first), limited, left
// out when of another dimension; an empty vector marks a message done
// without making it findable; a vector written again replaces the first;
// Unembedded lists what has none, oldest first, from a position on; all
// of it survives reopen.
func testVectors(t *testing.T, h Harness) {
	ctx := context.Background()
	const dim = 8
	s, v := h.seeded(t, "s", Msgs("m", 6))
	v, _ = compact(t, s, "s", v, "c1", 2, "sum") // m-0, m-1 archived
	appendMsgs(t, s, "s", v, Msgs("n", 2))
	pos := positions(t, s, "s")

	assert.Equal(t, []string{"m-0", "m-1", "m-2", "m-3", "m-4", "m-5", "n-0", "n-1"}, unembedded(t, s, "s", -1, 100))
	hits, err := s.Nearest(ctx, "s", history.VectorQuery{Vector: unit(dim, 0, 0)})
	require.NoError(t, err)
	assert.Empty(t, hits, "no vector yet")
	assert.NotNil(t, hits)

	require.NoError(t, s.PutVectors(ctx, "s", []history.MessageVector{
		vec(pos, "m-0", unit(dim, 0, 0)),   // archived
		vec(pos, "m-2", unit(dim, 0, 0.5)), // nearer unit 0 than m-4
		vec(pos, "m-4", unit(dim, 1, 0)),
		vec(pos, "m-5", nil), // nothing to embed
	}))
	require.NoError(t, s.PutVectors(ctx, "s", []history.MessageVector{
		vec(pos, "n-0", unit(dim, 0, 0)),        // ties m-0: the later first
		vec(pos, "n-1", make([]float32, dim+1)), // another dimension
	}[:1]))
	other := make([]float32, dim+1)
	other[0] = 1
	require.NoError(t, s.PutVectors(ctx, "s", []history.MessageVector{vec(pos, "n-1", other)}))

	check := func(s history.Store) {
		t.Helper()
		hits, err := s.Nearest(ctx, "s", history.VectorQuery{Vector: unit(dim, 0, 0)})
		require.NoError(t, err)
		assert.Equal(t, []string{"n-0", "m-0", "m-2", "m-4"}, nearIDs(hits))
		if assert.Len(t, hits, 4) {
			assert.InDelta(t, 1, hits[0].Score, 0.01)
			assert.InDelta(t, 1/math.Sqrt(1.25), hits[2].Score, 0.01)
			assert.InDelta(t, 0, hits[3].Score, 0.01)
			assert.Equal(t, pos["m-2"], hits[2].Position)
		}
		hits, err = s.Nearest(ctx, "s", history.VectorQuery{Vector: unit(dim, 0, 0), Limit: 2})
		require.NoError(t, err)
		assert.Equal(t, []string{"n-0", "m-0"}, nearIDs(hits), "Limit")
		hits, err = s.Nearest(ctx, "s", history.VectorQuery{Vector: other})
		require.NoError(t, err)
		assert.Equal(t, []string{"n-1"}, nearIDs(hits), "only vectors of the query's dimension")
		assert.Equal(t, []string{"m-1", "m-3"}, unembedded(t, s, "s", -1, 100))
		assert.Equal(t, []string{"m-1"}, unembedded(t, s, "s", -1, 1), "limit")
		assert.Equal(t, []string{"m-3"}, unembedded(t, s, "s", pos["m-1"], 100), "after")
	}
	check(s)

	// Written again, a vector replaces the first.
	require.NoError(t, s.PutVectors(ctx, "s", []history.MessageVector{vec(pos, "m-4", unit(dim, 0, 0.1))}))
	hits, err = s.Nearest(ctx, "s", history.VectorQuery{Vector: unit(dim, 1, 0), Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"m-2"}, nearIDs(hits), "m-4 is no longer unit 1")
	require.NoError(t, s.PutVectors(ctx, "s", []history.MessageVector{vec(pos, "m-4", unit(dim, 1, 0))}))

	check(h.reopen(t, s))
}

// testVectorsInvalid: a bad vector, a vector of a message the session does
// not hold and a bad query fail with ErrInvalid and write nothing.
func testVectorsInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s, _ := h.seeded(t, "s", Msgs("m", 3))
	pos := positions(t, s, "s")
	good := vec(pos, "m-0", unit(4, 0, 0))
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for name, bad := range map[string]history.MessageVector{
		"NaN":            vec(pos, "m-1", []float32{1, nan, 0, 0}),
		"infinity":       vec(pos, "m-1", []float32{inf, 0, 0, 0}),
		"zero":           vec(pos, "m-1", make([]float32, 4)),
		"too long":       vec(pos, "m-1", make([]float32, history.MaxVectorDim+1)),
		"same position":  vec(pos, "m-0", unit(4, 1, 0)),
		"wrong ID":       {Position: pos["m-1"], MessageID: "m-2", Vector: unit(4, 1, 0)},
		"no message":     {Position: 99, MessageID: "m-1", Vector: unit(4, 1, 0)},
		"unknown ID":     {Position: pos["m-1"], MessageID: "nope", Vector: unit(4, 1, 0)},
		"negative place": {Position: -1, MessageID: "m-1", Vector: unit(4, 1, 0)},
	} {
		if name == "too long" {
			bad.Vector[0] = 1
		}
		err := s.PutVectors(ctx, "s", []history.MessageVector{good, bad})
		assert.ErrorIs(t, err, history.ErrInvalid, name)
		if name == "wrong ID" || name == "no message" || name == "unknown ID" || name == "negative place" {
			assert.ErrorIs(t, err, history.ErrUnknownMessage, name)
		}
	}
	assert.Equal(t, []string{"m-0", "m-1", "m-2"}, unembedded(t, s, "s", -1, 10), "nothing was written")

	assert.ErrorIs(t, s.PutVectors(ctx, "missing", []history.MessageVector{good}), history.ErrNotFound)
	_, err := s.Unembedded(ctx, "missing", -1, 1)
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Nearest(ctx, "missing", history.VectorQuery{Vector: unit(4, 0, 0)})
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Unembedded(ctx, "s", -1, 0)
	assert.ErrorIs(t, err, history.ErrInvalid, "limit 0")
	for name, q := range map[string]history.VectorQuery{
		"empty":          {},
		"zero":           {Vector: make([]float32, 4)},
		"NaN":            {Vector: []float32{nan, 1}},
		"negative limit": {Vector: unit(4, 0, 0), Limit: -1},
		"limit too high": {Vector: unit(4, 0, 0), Limit: history.MaxSearchLimit + 1},
	} {
		_, err := s.Nearest(ctx, "s", q)
		assert.ErrorIs(t, err, history.ErrInvalid, name)
	}
	require.NoError(t, s.PutVectors(ctx, "s", nil), "nothing to write")
}

// testVectorsFork: a fork has its source's vectors of the messages it
// inherits, none of the source's later messages; what it writes (of an
// inherited message or its own) never shows in the source; forks of forks
// alike. Deleting a session deletes its vectors, and a fork of a deleted
// source keeps what it inherited.
func testVectorsFork(t *testing.T, h Harness) {
	ctx := context.Background()
	const dim = 4
	s, v := h.seeded(t, "src", Msgs("m", 4))
	pos := positions(t, s, "src")
	require.NoError(t, s.PutVectors(ctx, "src", []history.MessageVector{
		vec(pos, "m-0", unit(dim, 0, 0)), vec(pos, "m-3", unit(dim, 0, 0.2)),
	}))
	fork(t, s, "f", "src", "m-2")
	appendMsgs(t, s, "src", v, Msgs("later", 1))
	near := func(id string) []string {
		t.Helper()
		hits, err := s.Nearest(ctx, id, history.VectorQuery{Vector: unit(dim, 0, 0)})
		require.NoError(t, err)
		return nearIDs(hits)
	}
	assert.Equal(t, []string{"m-0"}, near("f"), "m-3 is after the fork point")
	assert.Equal(t, []string{"m-1", "m-2"}, unembedded(t, s, "f", -1, 10))

	fv, err := s.Load(ctx, "f")
	require.NoError(t, err)
	appendMsgs(t, s, "f", fv.Version, Msgs("own", 1))
	fpos := positions(t, s, "f")
	require.NoError(t, s.PutVectors(ctx, "f", []history.MessageVector{
		vec(fpos, "m-1", unit(dim, 0, 0.1)), vec(fpos, "own-0", unit(dim, 0, 0.3)),
	}))
	assert.Equal(t, []string{"m-0", "m-1", "own-0"}, near("f"))
	assert.Equal(t, []string{"m-2"}, unembedded(t, s, "f", -1, 10))
	assert.Equal(t, []string{"m-0", "m-3"}, near("src"), "the fork's vectors are its own")
	assert.Equal(t, []string{"m-1", "m-2", "later-0"}, unembedded(t, s, "src", -1, 10))

	// A fork of the fork, at its own message.
	fork(t, s, "g", "f", "own-0")
	assert.Equal(t, []string{"m-0", "m-1", "own-0"}, near("g"))
	assert.Equal(t, []string{"m-2"}, unembedded(t, s, "g", -1, 10))
	gpos := positions(t, s, "g")
	require.NoError(t, s.PutVectors(ctx, "g", []history.MessageVector{vec(gpos, "m-2", unit(dim, 1, 0))}))
	assert.Empty(t, unembedded(t, s, "g", -1, 10))
	assert.Equal(t, []string{"m-2"}, unembedded(t, s, "f", -1, 10), "g's vector is its own")

	// The source deleted: the forks keep what they inherited.
	require.NoError(t, s.Delete(ctx, "src"))
	assert.Equal(t, []string{"m-0", "m-1", "own-0"}, near("f"))
	require.NoError(t, s.Delete(ctx, "f"))
	assert.Equal(t, []string{"m-0", "m-1", "own-0", "m-2"}, near("g"))
	require.NoError(t, s.Delete(ctx, "g"))

	// Created again under a deleted ID, a session has no vector.
	v = create(t, s, "src")
	appendMsgs(t, s, "src", v, Msgs("m", 4))
	assert.Empty(t, near("src"))
	assert.Equal(t, []string{"m-0", "m-1", "m-2", "m-3"}, unembedded(t, s, "src", -1, 10))
}
