package historytest

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// usageRec returns a usage record for tests.
func usageRec(id, purpose string, in, out int) history.UsageRecord {
	return history.UsageRecord{
		ID: id, Purpose: purpose, Provider: "prov", Model: "model-" + id, TurnID: "turn-" + id,
		InputTokens: in, OutputTokens: out, CacheReadTokens: in / 2, CacheWriteTokens: in / 4,
		Cost: float64(in) / 1000, Currency: "USD", At: t0.Add(time.Duration(in) * time.Second),
	}
}

// compactSummarized commits compaction c1 (Segment g1, summary S) of
// session id at version v, archiving archive messages, with the summary
// call's ledger record (sum1), and returns the new version and that
// record.
func compactSummarized(t *testing.T, s history.Store, id string, v uint64, archive int) (uint64, history.UsageRecord) {
	t.Helper()
	ctx := context.Background()
	sum := usageRec("sum1", "summary", 300, 30)
	sum.TurnID, sum.CompactID = "", "c1"
	v, err := s.BeginCompaction(ctx, id, v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, _, err = s.CommitCompaction(ctx, id, v, history.Commit{CompactID: "c1", SegmentID: "g1", Archive: archive, Summary: "S", At: t0, Usage: []history.UsageRecord{sum}})
	require.NoError(t, err)
	return v, sum
}

// UsageMix returns five usage records of two purposes, two currencies
// and none, whose costs add up to the same float64 in any order: for a
// store's tests of sums made other than one record at a time (a
// migration's).
func UsageMix() []history.UsageRecord {
	rec := func(id, purpose string, in int, cost float64, currency string) history.UsageRecord {
		return history.UsageRecord{ID: id, Purpose: purpose, InputTokens: in, OutputTokens: in / 2, CacheReadTokens: in / 4, CacheWriteTokens: in / 8, Cost: cost, Currency: currency}
	}
	return []history.UsageRecord{
		rec("r1", "turn", 100, 0.5, "USD"), rec("r2", "turn", 200, 0, ""), rec("r3", "summary", 300, 0.25, "USD"),
		rec("r4", "turn", 400, 2, "EUR"), rec("r5", "turn", 500, 0.125, "USD"),
	}
}

// equalUsage asserts that two ledgers are equal record by record (times
// compared with Equal).
func equalUsage(t *testing.T, want, got []history.UsageRecord) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		assert.True(t, w.At.Equal(g.At), "record %s At: want %v, got %v", w.ID, w.At, g.At)
		w.At, g.At = time.Time{}, time.Time{}
		assert.Equal(t, w, g, "record %d", i)
	}
}

// testUsageLedger: usage recorded by Append, by a compaction commit and
// by RecordUsage is read back by Usage in the order recorded, every field
// kept, also after a reopen; a record whose ID the ledger holds is not
// recorded again (a retried write counts once); a compaction and an
// Uncompact take nothing out; sessions do not share ledgers.
func testUsageLedger(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "s")
	other := create(t, s, "other")
	got, err := s.Usage(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, got, "a new session's ledger")

	r1, r2 := usageRec("r1", "turn", 100, 10), usageRec("r2", "turn", 200, 20)
	r2.Provider, r2.Model, r2.TurnID, r2.CacheReadTokens, r2.CacheWriteTokens, r2.Cost, r2.Currency = "", "", "", 0, 0, 0, ""
	nv, err := s.Append(ctx, "s", v, Msgs("a", 2), r1)
	require.NoError(t, err)
	v = nv
	v = appendMsgs(t, s, "s", v, Msgs("b", 2))
	nv, err = s.Append(ctx, "s", v, Msgs("c", 1), r2)
	require.NoError(t, err)
	v = nv

	v, sum := compactSummarized(t, s, "s", v, 3)

	failed := usageRec("sum2", "summary", 400, 0)
	failed.CompactID = "c2"
	require.NoError(t, s.RecordUsage(ctx, "s", []history.UsageRecord{failed}))
	// Retried writes: the IDs are recorded, nothing is counted twice.
	require.NoError(t, s.RecordUsage(ctx, "s", []history.UsageRecord{failed, r1}))
	v, err = s.Append(ctx, "s", v, Msgs("d", 1), r2)
	require.NoError(t, err)
	require.NoError(t, s.RecordUsage(ctx, "s", nil), "an empty batch")

	_, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0})
	require.NoError(t, err)

	want := []history.UsageRecord{r1, r2, sum, failed}
	got, err = s.Usage(ctx, "s")
	require.NoError(t, err)
	equalUsage(t, want, got)
	s = h.reopen(t, s)
	got, err = s.Usage(ctx, "s")
	require.NoError(t, err)
	equalUsage(t, want, got)

	// The same ID in another session is another record.
	_, err = s.Append(ctx, "other", other, Msgs("o", 1), r1)
	require.NoError(t, err)
	got, err = s.Usage(ctx, "other")
	require.NoError(t, err)
	equalUsage(t, []history.UsageRecord{r1}, got)
	got, err = s.Usage(ctx, "s")
	require.NoError(t, err)
	assert.Len(t, got, 4)
}

// testLastUsage: LastUsage returns the newest record of a purpose, by the
// order recorded (not by ID, time or figures; a repeated ID is no newer
// record), across a compaction
// and a reopen; none for a purpose never recorded, a new session or a
// fork (whose ledger is its own); ErrNotFound for an unknown session and
// ErrInvalid for an empty purpose.
func testLastUsage(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "s")
	last := func(s history.Store, id, purpose string) (history.UsageRecord, bool) {
		t.Helper()
		r, ok, err := s.LastUsage(ctx, id, purpose)
		require.NoError(t, err)
		return r, ok
	}
	_, ok := last(s, "s", "turn")
	assert.False(t, ok, "a new session's ledger")

	// r2, recorded after r1, is first in no other order: its ID, its
	// time and its figures are all below r1's.
	r1, r2 := usageRec("r2", "turn", 200, 20), usageRec("r1", "turn", 100, 10)
	v, err := s.Append(ctx, "s", v, Msgs("a", 2), r1)
	require.NoError(t, err)
	v, err = s.Append(ctx, "s", v, Msgs("b", 2), r2)
	require.NoError(t, err)
	_, sum := compactSummarized(t, s, "s", v, 2)
	require.NoError(t, s.RecordUsage(ctx, "s", []history.UsageRecord{r1}), "a retried write")

	for _, reopened := range []bool{false, true} {
		if reopened {
			s = h.reopen(t, s)
		}
		got, ok := last(s, "s", "turn")
		require.True(t, ok)
		equalUsage(t, []history.UsageRecord{r2}, []history.UsageRecord{got})
		got, ok = last(s, "s", "summary")
		require.True(t, ok)
		equalUsage(t, []history.UsageRecord{sum}, []history.UsageRecord{got})
		_, ok = last(s, "s", "fidelity")
		assert.False(t, ok, "a purpose never recorded")
	}

	_, err = s.Fork(ctx, history.ForkSpec{ID: "f", From: "s"})
	require.NoError(t, err)
	_, ok = last(s, "f", "turn")
	assert.False(t, ok, "a fork's ledger is its own")
	_, _, err = s.LastUsage(ctx, "nope", "turn")
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, _, err = s.LastUsage(ctx, "s", "")
	assert.ErrorIs(t, err, history.ErrInvalid)
	assert.ErrorContains(t, err, "purpose")
}

// testUsageTotals: UsageTotals sums the ledger as it is recorded, by
// purpose and currency and by currency over every purpose, the costs
// added one at a time in the order recorded (the sum Go makes of Usage in
// that order, to the last bit); a repeated ID adds nothing; the totals
// stay as they are across a compaction, an Uncompact and a reopen; a
// fork's start empty and leave its source's alone; an unknown session is
// ErrNotFound.
func testUsageTotals(t *testing.T, h Harness) {
	ctx := context.Background()
	s := h.New(t)
	v := create(t, s, "s")
	got, err := s.UsageTotals(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, got, "a new session's totals")

	// Costs whose float64 sum depends on the order they are added in:
	// (0.1 + 0.2) + 0.3 is not 0.1 + (0.2 + 0.3).
	rec := func(id, purpose string, cost float64, currency string) history.UsageRecord {
		r := usageRec(id, purpose, len(id)*7, len(id))
		r.Cost, r.Currency = cost, currency
		return r
	}
	var err2 error
	v, err2 = s.Append(ctx, "s", v, Msgs("a", 1), rec("t1", "turn", 0.1, "USD"))
	require.NoError(t, err2)
	v, err2 = s.Append(ctx, "s", v, Msgs("b", 1), rec("t2", "turn", 0.2, "USD"), rec("t3", "turn", 0, ""))
	require.NoError(t, err2)
	require.NoError(t, s.RecordUsage(ctx, "s", []history.UsageRecord{rec("e1", "embed", 0.25, "EUR"), rec("s0", "summary", 0.3, "USD")}))
	v, err = s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerAuto, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, _, err = s.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 1, Summary: "S", At: t0,
		Usage: []history.UsageRecord{rec("s1", "summary", 0.7, "USD")}})
	require.NoError(t, err)
	// A retried write: nothing counts twice.
	require.NoError(t, s.RecordUsage(ctx, "s", []history.UsageRecord{rec("t1", "turn", 0.1, "USD"), rec("t4", "turn", 1e-9, "USD")}))

	recs, err := s.Usage(ctx, "s")
	require.NoError(t, err)
	require.Len(t, recs, 7)
	want := storekit.SumUsage(recs)
	got, err = s.UsageTotals(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, want, got)
	// The sums, spelled out: the order of the rows and the float64 sums in
	// the order recorded.
	usd := 0.1
	usd += 0.2
	usd += 0.3
	usd += 0.7
	usd += 1e-9
	keys := make([]string, len(got))
	for i, g := range got {
		keys[i] = g.Purpose + "/" + g.Currency
	}
	assert.Equal(t, []string{"/", "/EUR", "/USD", "embed/EUR", "summary/USD", "turn/", "turn/USD"}, keys)
	if i := slices.Index(keys, "/USD"); assert.GreaterOrEqual(t, i, 0) {
		assert.Equal(t, usd, got[i].Cost, "every purpose's USD, added in the order recorded")
		assert.Equal(t, 5, got[i].Requests)
		assert.Equal(t, (2+2+2+2+2)*7, got[i].InputTokens)
	}
	if i := slices.Index(keys, "turn/USD"); assert.GreaterOrEqual(t, i, 0) {
		assert.Equal(t, 3, got[i].Requests, "t1 once, t2, t4")
	}

	// Unchanged by a compaction without usage, an Uncompact and a reopen.
	v, err = s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c2", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	v, _, err = s.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c2", SegmentID: "g2", Archive: 1, Summary: "S2", At: t0})
	require.NoError(t, err)
	_, _, err = s.Uncompact(ctx, "s", v, history.Uncompaction{ID: "u1", At: t0})
	require.NoError(t, err)
	got, err = s.UsageTotals(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, want, got, "after a compaction and an Uncompact")
	s = h.reopen(t, s)
	got, err = s.UsageTotals(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, want, got, "after a reopen")

	// A fork's totals are its own.
	_, err = s.Fork(ctx, history.ForkSpec{ID: "f", From: "s"})
	require.NoError(t, err)
	got, err = s.UsageTotals(ctx, "f")
	require.NoError(t, err)
	assert.Empty(t, got, "a fork's totals start empty")
	require.NoError(t, s.RecordUsage(ctx, "f", []history.UsageRecord{rec("t1", "turn", 5, "USD")}))
	got, err = s.UsageTotals(ctx, "f")
	require.NoError(t, err)
	assert.Equal(t, storekit.SumUsage([]history.UsageRecord{rec("t1", "turn", 5, "USD")}), got)
	got, err = s.UsageTotals(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, want, got, "the source's, after its fork recorded")

	_, err = s.UsageTotals(ctx, "nope")
	assert.ErrorIs(t, err, history.ErrNotFound)
}

// testUsageInvalid: a malformed record (no ID, no purpose, a negative
// figure, a negative, not finite or unbounded cost, a cost without a
// currency, two records of one ID) fails with ErrInvalid naming what is
// wrong, through Append, a commit and RecordUsage alike, and writes
// nothing: no message, no commit, no record. An unknown session is
// ErrNotFound.
func testUsageInvalid(t *testing.T, h Harness) {
	ctx := context.Background()
	s, v := h.seeded(t, "s", Msgs("a", 2))
	v, err := s.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: "c1", Trigger: history.TriggerManual, Status: history.StatusInProgress, StartedAt: t0})
	require.NoError(t, err)
	good := usageRec("ok", "turn", 1, 1)
	bad := map[string]func(r *history.UsageRecord){
		"ID":               func(r *history.UsageRecord) { r.ID = "" },
		"Purpose":          func(r *history.UsageRecord) { r.Purpose = "" },
		"InputTokens":      func(r *history.UsageRecord) { r.InputTokens = -1 },
		"OutputTokens":     func(r *history.UsageRecord) { r.OutputTokens = -5 },
		"CacheReadTokens":  func(r *history.UsageRecord) { r.CacheReadTokens = -1 },
		"CacheWriteTokens": func(r *history.UsageRecord) { r.CacheWriteTokens = -1 },
		"Cost":             func(r *history.UsageRecord) { r.Cost = -0.5 },
		"Cost NaN":         func(r *history.UsageRecord) { r.Cost = math.NaN() },
		"Cost Inf":         func(r *history.UsageRecord) { r.Cost = math.Inf(1) },
		"Currency":         func(r *history.UsageRecord) { r.Currency = "" },
	}
	for name, spoil := range bad {
		t.Run(name, func(t *testing.T) {
			r := usageRec("x", "turn", 3, 3)
			spoil(&r)
			field := name
			if i := len(field); i > 4 && (field[i-3:] == "NaN" || field[i-3:] == "Inf") {
				field = field[:i-4]
			}
			checkRefused := func(what string, err error) {
				t.Helper()
				require.ErrorIs(t, err, history.ErrInvalid, what)
				if field != "ID" {
					assert.Contains(t, err.Error(), field, "%s: the error names the field", what)
				}
			}
			_, err := s.Append(ctx, "s", v, Msgs("n", 1), good, r)
			checkRefused("Append", err)
			_, _, err = s.CommitCompaction(ctx, "s", v, history.Commit{CompactID: "c1", SegmentID: "g1", Archive: 1, Summary: "S", At: t0, Usage: []history.UsageRecord{r}})
			checkRefused("CommitCompaction", err)
			checkRefused("RecordUsage", s.RecordUsage(ctx, "s", []history.UsageRecord{good, r}))
		})
	}
	dup := []history.UsageRecord{usageRec("d", "turn", 1, 1), usageRec("d", "summary", 2, 2)}
	_, err = s.Append(ctx, "s", v, Msgs("n", 1), dup...)
	assert.ErrorIs(t, err, history.ErrInvalid, "two records of one ID")
	assert.ErrorIs(t, s.RecordUsage(ctx, "s", dup), history.ErrInvalid, "two records of one ID")

	snap, err := s.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "nothing was written")
	assert.Len(t, snap.Active, 2)
	assert.Equal(t, []string{"c1"}, snap.Interrupted, "the compaction is still in progress")
	got, err := s.Usage(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, got, "no record of a refused write")

	err = s.RecordUsage(ctx, "nope", []history.UsageRecord{good})
	assert.ErrorIs(t, err, history.ErrNotFound)
	_, err = s.Usage(ctx, "nope")
	assert.ErrorIs(t, err, history.ErrNotFound)
	assert.False(t, errors.Is(err, history.ErrInvalid))
}
