package historytest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

// testConfigRecords: RecordConfig replaces the configuration and records
// the change at the next timeline position in one write: Load reads the
// new configuration, Timeline has the record between the entries written
// before and after it (its data, time and position kept exactly, also
// after a reopen and in an archived stretch), and the positions that
// follow go on after it.
func testConfigRecords(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "s", Msgs("a", 2))
	at := t0.Add(time.Minute)
	v2, rec, err := s.RecordConfig(ctx, "s", v, history.ConfigChange{
		Config: json.RawMessage(`{"model":"m2"}`), Data: json.RawMessage(`{"changed":["Model"]}`), At: at,
	})
	require.NoError(t, err)
	require.Greater(t, v2, v, "a write must advance the version")
	require.NotNil(t, rec)
	assert.Equal(t, int64(2), rec.Position, "the next position")
	assert.JSONEq(t, `{"changed":["Model"]}`, string(rec.Data))
	assert.True(t, rec.At.Equal(at))
	v = appendMsgs(t, s, "s", v2, Msgs("b", 2))
	v, _, err = s.RecordConfig(ctx, "s", v, history.ConfigChange{Config: nil, Data: json.RawMessage(`{"n":2}`), At: at.Add(time.Second)})
	require.NoError(t, err)
	v, _ = compact(t, s, "s", v, "c1", 3, "S")

	check := func(s history.Store) {
		t.Helper()
		snap, err := s.Load(ctx, "s")
		require.NoError(t, err)
		assert.Nil(t, snap.Config, "the last change set no configuration")
		assert.Equal(t, int64(7), snap.NextPosition)
		tl, err := s.Timeline(ctx, "s")
		require.NoError(t, err)
		require.Len(t, tl, 7)
		kinds := ""
		for i, e := range tl {
			assert.Equal(t, int64(i), e.Position, "entry %d", i)
			switch {
			case e.Message != nil:
				kinds += "m"
			case e.Config != nil:
				kinds += "s"
				assert.Equal(t, e.Position, e.Config.Position)
			case e.Compaction != nil:
				kinds += "c"
			}
		}
		assert.Equal(t, "mmsmmsc", kinds)
		assert.JSONEq(t, `{"changed":["Model"]}`, string(tl[2].Config.Data))
		assert.True(t, tl[2].Config.At.Equal(at))
		assert.JSONEq(t, `{"n":2}`, string(tl[5].Config.Data))
		assert.False(t, tl[2].Archived, "a record is no archived message")
	}
	check(s)
	s = h.reopen(t, s)
	check(s)

	// The first change's configuration was stored, then replaced.
	v, _, err = s.RecordConfig(ctx, "s", v, history.ConfigChange{Config: json.RawMessage(`{"model":"m3"}`), Data: json.RawMessage(`{}`), At: at})
	require.NoError(t, err)
	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m3"}`, string(snap.Config))
	assert.Equal(t, v, snap.Version)
}

// testConfigRecordsInvalid: a stale version, a missing session, data or a
// configuration that is not JSON are refused and write nothing.
func testConfigRecordsInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "s")
	r := s
	ok := history.ConfigChange{Config: json.RawMessage(`{"a":1}`), Data: json.RawMessage(`{}`), At: t0}
	_, _, err := r.RecordConfig(ctx, "s", v+1, ok)
	assert.ErrorIs(t, err, history.ErrConflict)
	_, _, err = r.RecordConfig(ctx, "nope", 1, ok)
	assert.ErrorIs(t, err, history.ErrNotFound)
	bad := ok
	bad.Data = json.RawMessage(`{nope`)
	_, _, err = r.RecordConfig(ctx, "s", v, bad)
	assert.ErrorIs(t, err, history.ErrInvalid)
	bad.Data = nil
	_, _, err = r.RecordConfig(ctx, "s", v, bad)
	assert.ErrorIs(t, err, history.ErrInvalid, "a record without data")
	bad = ok
	bad.Config = json.RawMessage(`nope`)
	_, _, err = r.RecordConfig(ctx, "s", v, bad)
	assert.ErrorIs(t, err, history.ErrInvalid)

	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "nothing was written")
	assert.JSONEq(t, `{"k":1}`, string(snap.Config))
	assert.Zero(t, snap.NextPosition)
	tl, err := s.Timeline(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, tl)
}
