package session_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/memstore"
	"github.com/sessionkit/sessionkit/provider"
	"github.com/sessionkit/sessionkit/provider/providertest"
	"github.com/sessionkit/sessionkit/session"
)

// ledgerWant adds up what a test's fake provider reported, as
// Session.Usage must.
type ledgerWant struct {
	prices provider.PriceTable
	rep    session.UsageReport
}

func (w *ledgerWant) add(p provider.Purpose, model string, u provider.Usage) provider.Cost {
	c, _ := w.prices.Price(model, u)
	r := history.UsageRecord{Purpose: string(p), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, Cost: c.Amount, Currency: c.Currency}
	if w.rep.ByPurpose == nil {
		w.rep.ByPurpose = map[provider.Purpose]session.UsageTotals{}
	}
	w.rep.Total.Add(&r)
	t := w.rep.ByPurpose[p]
	t.Add(&r)
	w.rep.ByPurpose[p] = t
	return c
}

// equalReport asserts two reports equal, costs within rounding.
func equalReport(t *testing.T, want, got session.UsageReport) {
	t.Helper()
	eq := func(what string, w, g session.UsageTotals) {
		t.Helper()
		assert.InDelta(t, w.Cost.Amount, g.Cost.Amount, 1e-9, "%s cost", what)
		w.Cost.Amount, g.Cost.Amount = 0, 0
		assert.Equal(t, w, g, what)
	}
	eq("total", want.Total, got.Total)
	require.Len(t, got.ByPurpose, len(want.ByPurpose))
	for p, w := range want.ByPurpose {
		eq(string(p), w, got.ByPurpose[p])
	}
}

// TestUsage_LedgerSurvivesCompactionsAndReopen: Session.Usage is the sum
// of what the provider reported, per purpose and priced with
// Config.Pricing, through turns with tool calls, a manual and an
// automatic compaction, a summary call that came back empty (paid for:
// counted, and its CompactResult carries its usage and cost), a request
// that failed without a response (not counted), figures that cannot be
// right (counted as 0), an Uncompact and a reopen in a new store; every
// UsageEvent's SessionCost is the cost so far and never decreases.
func TestUsage_LedgerSurvivesCompactionsAndReopen(t *testing.T) {
	prices := provider.PriceTable{
		"m-turn": {Input: 2, Output: 10, CacheRead: 0.5, CacheWrite: 2.5},
		"m-sum":  {Input: 1, Output: 4, CacheRead: 0.25, CacheWrite: 1.25},
	}
	for name, newStore := range allStores(t) {
		t.Run(name, func(t *testing.T) {
			store, reopen := newStore(t)
			fake := providertest.New()
			s := newSession(t, fake, session.Config{Store: store, Pricing: prices, AutoCompactTokens: 5000, Tools: []session.Tool{echoTool()}})
			rec := record(t, s)
			want := &ledgerWant{prices: prices}

			u1 := provider.Usage{InputTokens: 1000, OutputTokens: 40, CacheReadTokens: 600, CacheWriteTokens: 100}
			u2 := provider.Usage{InputTokens: 1200, OutputTokens: 70, CacheReadTokens: 1000}
			fake.QueueTurn(
				providertest.Reply{ToolCalls: []history.ToolCall{call("c1", "echo", `{}`)}, Usage: u1, Model: "m-turn"},
				providertest.Reply{Text: "done", Usage: u2, Model: "m-turn"},
			)
			require.NoError(t, wait(t, mustPrompt(t, s, "one")).Err)
			want.add(provider.PurposeTurn, "m-turn", u1)
			want.add(provider.PurposeTurn, "m-turn", u2)
			converse(t, s, fake, 2) // no model reported: unpriced
			want.add(provider.PurposeTurn, "", provider.Usage{InputTokens: 10, OutputTokens: 5})
			want.add(provider.PurposeTurn, "", provider.Usage{InputTokens: 20, OutputTokens: 5})

			s1 := provider.Usage{InputTokens: 800, OutputTokens: 90, CacheWriteTokens: 300}
			fake.QueueSummary(providertest.Reply{Text: "Summary one.", Usage: s1, Model: "m-sum"})
			res := wait(t, mustCompact(t, s, ""))
			require.True(t, res.Compacted, res.Error)
			c := want.add(provider.PurposeSummary, "m-sum", s1)
			assert.Equal(t, s1, res.Usage)
			assert.InDelta(t, c.Amount, res.Cost.Amount, 1e-12)
			assert.Equal(t, "USD", res.Cost.Currency)

			// An empty summary: compact_failed, and paid for.
			converse(t, s, fake, 2)
			want.add(provider.PurposeTurn, "", provider.Usage{InputTokens: 10, OutputTokens: 5})
			want.add(provider.PurposeTurn, "", provider.Usage{InputTokens: 20, OutputTokens: 5})
			s2 := provider.Usage{InputTokens: 700, OutputTokens: 3}
			fake.QueueSummary(providertest.Reply{Text: "  ", Usage: s2, Model: "m-sum"})
			res = wait(t, mustCompact(t, s, ""))
			require.Equal(t, session.ReasonCompactFailed, res.Reason)
			c = want.add(provider.PurposeSummary, "m-sum", s2)
			assert.Equal(t, s2, res.Usage, "the failed compaction carries its summary call's usage")
			assert.InDelta(t, c.Amount, res.Cost.Amount, 1e-12)
			assert.Equal(t, "USD", res.Cost.Currency)

			// A request that failed without a response counts nothing.
			fake.QueueTurn(providertest.Reply{Err: errors.New("connection reset")})
			require.Error(t, wait(t, mustPrompt(t, s, "fails")).Err)

			// Figures that cannot be right count as 0.
			fake.QueueTurn(providertest.Reply{Text: "odd", Usage: provider.Usage{InputTokens: -5, OutputTokens: 7}, Model: "m-turn"})
			require.NoError(t, wait(t, mustPrompt(t, s, "odd")).Err)
			want.add(provider.PurposeTurn, "m-turn", provider.Usage{OutputTokens: 7})

			// An automatic compaction.
			big := provider.Usage{InputTokens: 6000, OutputTokens: 10, CacheReadTokens: 5000}
			s3 := provider.Usage{InputTokens: 900, OutputTokens: 80}
			fake.QueueTurn(providertest.Reply{Text: "big", Usage: big, Model: "m-turn"})
			fake.QueueSummary(providertest.Reply{Text: "Summary three.", Usage: s3, Model: "m-sum"})
			require.NoError(t, wait(t, mustPrompt(t, s, "big")).Err)
			want.add(provider.PurposeTurn, "m-turn", big)
			want.add(provider.PurposeSummary, "m-sum", s3)
			rec.until(t, func(evs []session.Event) bool {
				for _, ev := range evs {
					if c, ok := ev.Payload.(*session.CompactionEvent); ok && c.Trigger == session.TriggerAuto && c.Phase == session.PhaseFinished {
						require.True(t, c.Result.Compacted, c.Result.Error)
						return true
					}
				}
				return false
			})

			un := mustUncompact(t, s)
			require.NoError(t, un.Err)

			got, err := s.Usage(ctxT(t))
			require.NoError(t, err)
			equalReport(t, want.rep, got)
			assert.Equal(t, 11, got.Total.Requests)

			// UsageEvents: one per recorded response, the session's cost
			// so far in each, never decreasing.
			var last provider.Cost
			n := 0
			for _, ev := range rec.all() {
				if u, ok := ev.Payload.(*session.UsageEvent); ok {
					n++
					assert.GreaterOrEqual(t, u.SessionCost.Amount, last.Amount, "SessionCost never decreases")
					last = u.SessionCost
				}
			}
			assert.Equal(t, 11, n)
			assert.InDelta(t, got.Total.Cost.Amount, last.Amount, 1e-9)

			// A new process: the same ledger, and the cost goes on from it.
			require.NoError(t, s.Close())
			store2 := reopen()
			s2s, err := session.Open(context.Background(), session.Config{ID: s.ID(), Provider: fake, Store: store2, Pricing: prices})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s2s.Close() })
			again, err := s2s.Usage(ctxT(t))
			require.NoError(t, err)
			equalReport(t, want.rep, again)
			rec2 := record(t, s2s)
			u9 := provider.Usage{InputTokens: 100, OutputTokens: 10}
			fake.QueueTurn(providertest.Reply{Text: "after", Usage: u9, Model: "m-turn"})
			require.NoError(t, wait(t, mustPrompt(t, s2s, "after")).Err)
			want.add(provider.PurposeTurn, "m-turn", u9)
			again, err = s2s.Usage(ctxT(t))
			require.NoError(t, err)
			equalReport(t, want.rep, again)
			for _, ev := range rec2.all() {
				if u, ok := ev.Payload.(*session.UsageEvent); ok {
					assert.InDelta(t, want.rep.Total.Cost.Amount, u.SessionCost.Amount, 1e-9, "the cost goes on from the ledger")
				}
			}
		})
	}
}

// TestUsage_FailedStoreCountsOnce: a write that the store failed after
// its transaction committed is read back as landed, and the usage it
// carried counts once (a turn step's append, a compaction commit); a
// commit that failed before it landed still counts its summary call,
// which was paid for.
func TestUsage_FailedStoreCountsOnce(t *testing.T) {
	store := &faultStore{Store: memstore.New()}
	fake := providertest.New()
	s := newSession(t, fake, session.Config{Store: store})
	store.set(func(f *faultStore) {
		f.failAppend, f.failCommit, f.afterWrite = errors.New("ack lost"), errors.New("ack lost"), true
	})
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S", Usage: provider.Usage{InputTokens: 100, OutputTokens: 9}})
	res := wait(t, mustCompact(t, s, ""))
	require.True(t, res.Compacted, res.Error)
	got, err := s.Usage(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, 3, got.Total.Requests)
	assert.Equal(t, 130, got.Total.InputTokens)

	store.set(func(f *faultStore) { f.failAppend, f.afterWrite = nil, false })
	converse(t, s, fake, 2)
	fake.QueueSummary(providertest.Reply{Text: "S2", Usage: provider.Usage{InputTokens: 200, OutputTokens: 9}})
	res = wait(t, mustCompact(t, s, ""))
	require.Equal(t, session.ReasonCompactFailed, res.Reason, "the commit failed before it landed")
	assert.Equal(t, 200, res.Usage.InputTokens)
	got, err = s.Usage(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, 6, got.Total.Requests)
	assert.Equal(t, 2, got.ByPurpose[provider.PurposeSummary].Requests)
	assert.Equal(t, 360, got.Total.InputTokens)
}

// ledgerReads is a store that counts the reads of whole ledgers.
type ledgerReads struct {
	history.Store
	reads int
}

func (s *ledgerReads) Usage(ctx context.Context, id string) ([]history.UsageRecord, error) {
	s.reads++
	return s.Store.Usage(ctx, id)
}

// TestUsage_OpenReadsTotals: an open and Session.Usage read the store's
// sums of the ledger (history.Ledger.UsageTotals), never its records, and
// report what TallyUsage makes of the records to the last bit, across
// turns, a compaction and a reopen; a fork's usage starts at nothing and
// its source's stays as it was.
func TestUsage_OpenReadsTotals(t *testing.T) {
	prices := provider.PriceTable{"m": {Input: 0.3, Output: 1.1, CacheRead: 0.07}}
	for name, newStore := range allStores(t) {
		t.Run(name, func(t *testing.T) {
			inner, reopen := newStore(t)
			store := &ledgerReads{Store: inner}
			fake := providertest.New()
			s := newSession(t, fake, session.Config{Store: store, Pricing: prices})
			for range 5 {
				fake.QueueTurn(providertest.Reply{Text: "ok", Usage: provider.Usage{InputTokens: 1234, OutputTokens: 77, CacheReadTokens: 321}, Model: "m"})
				require.NoError(t, wait(t, mustPrompt(t, s, "q")).Err)
			}
			fake.QueueSummary(providertest.Reply{Text: "Summary.", Usage: provider.Usage{InputTokens: 999, OutputTokens: 33}, Model: "m"})
			require.True(t, wait(t, mustCompact(t, s, "")).Compacted)
			exact := func(s *session.Session, what string) session.UsageReport {
				t.Helper()
				recs, err := inner.Usage(ctxT(t), s.ID())
				require.NoError(t, err)
				got, err := s.Usage(ctxT(t))
				require.NoError(t, err)
				assert.Equal(t, session.TallyUsage(recs), got, what)
				return got
			}
			live := exact(s, "live")
			assert.Equal(t, 6, live.Total.Requests)
			require.NoError(t, s.Close())

			store = &ledgerReads{Store: reopen()}
			s2, err := session.Open(ctxT(t), session.Config{ID: s.ID(), Provider: fake, Store: store, Pricing: prices})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s2.Close() })
			assert.Equal(t, live, exact(s2, "reopened"))
			rec := record(t, s2)
			fake.QueueTurn(providertest.Reply{Text: "ok", Usage: provider.Usage{InputTokens: 10, OutputTokens: 1}, Model: "m"})
			require.NoError(t, wait(t, mustPrompt(t, s2, "q")).Err)
			after := exact(s2, "a turn after the reopen")
			var last session.UsageEvent
			rec.until(t, func(evs []session.Event) bool {
				for _, ev := range evs {
					if u, ok := ev.Payload.(*session.UsageEvent); ok {
						last = *u
						return true
					}
				}
				return false
			})
			assert.Equal(t, after.Total.Cost, last.SessionCost, "the live cost goes on from the sums, to the last bit")

			f, err := session.Fork(ctxT(t), store, session.ForkRequest{From: s.ID()})
			require.NoError(t, err)
			fs, err := session.Open(ctxT(t), session.Config{ID: f.ID, Provider: fake, Store: store, Pricing: prices})
			require.NoError(t, err)
			t.Cleanup(func() { _ = fs.Close() })
			fu, err := fs.Usage(ctxT(t))
			require.NoError(t, err)
			assert.Zero(t, fu.Total, "a fork's usage is its own")
			assert.Equal(t, after, exact(s2, "the source, after its fork"))
			assert.Zero(t, store.reads, "an open and Session.Usage read no ledger records")
		})
	}
}
