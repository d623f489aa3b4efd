package session

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/provider"
)

// UsageTotals adds up provider responses: how many there were, the token
// figures they reported (those of provider.Usage) and what they cost.
type UsageTotals struct {
	Requests         int
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
	// Cost is the sum of the priced responses' costs (provider.Cost.Add:
	// a sum over more than one currency is provider.MixedCurrency); the
	// zero Cost when none was priced.
	Cost provider.Cost
}

// Add adds one ledger record to t.
func (t *UsageTotals) Add(r *history.UsageRecord) {
	t.Requests++
	t.InputTokens += r.InputTokens
	t.OutputTokens += r.OutputTokens
	t.CacheReadTokens += r.CacheReadTokens
	t.CacheWriteTokens += r.CacheWriteTokens
	t.Cost = t.Cost.Add(provider.Cost{Amount: r.Cost, Currency: r.Currency})
}

// UsageReport is what a session's provider responses used and cost, in
// all and by purpose (see [Session.Usage]).
type UsageReport struct {
	Total     UsageTotals
	ByPurpose map[provider.Purpose]UsageTotals
}

// TallyUsage adds up ledger records (history.Ledger.Usage) as
// [Session.Usage] does; programs that read a store directly, such as
// cmd/sessionkit, use it for the records of one turn or one compaction.
func TallyUsage(recs []history.UsageRecord) UsageReport {
	rep := UsageReport{ByPurpose: make(map[provider.Purpose]UsageTotals)}
	for i := range recs {
		r := &recs[i]
		rep.Total.Add(r)
		t := rep.ByPurpose[provider.Purpose(r.Purpose)]
		t.Add(r)
		rep.ByPurpose[provider.Purpose(r.Purpose)] = t
	}
	return rep
}

// usageReport is the UsageReport of a ledger whose sums are totals
// (history.Ledger.UsageTotals): the same as TallyUsage of its records.
func usageReport(totals []history.UsageTotal) UsageReport {
	rep := UsageReport{ByPurpose: make(map[provider.Purpose]UsageTotals)}
	for i := 0; i < len(totals); {
		j := i + 1
		for j < len(totals) && totals[j].Purpose == totals[i].Purpose {
			j++
		}
		t := summed(totals[i:j])
		if p := totals[i].Purpose; p == "" {
			rep.Total = t
		} else {
			rep.ByPurpose[provider.Purpose(p)] = t
		}
		i = j
	}
	return rep
}

// summed is the UsageTotals of one purpose's sums, one per currency: what
// UsageTotals.Add makes of their records in the order recorded. Its Cost
// is the one currency's sum, MixedCurrency (Amount 0) over more than one
// currency, the zero Cost over none; a currency that is MixedCurrency
// itself keeps the Amount of its record only while it is the only one.
func summed(rows []history.UsageTotal) UsageTotals {
	var (
		t     UsageTotals
		known []history.UsageTotal // the rows of a currency
	)
	for _, r := range rows {
		t.Requests += r.Requests
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CacheReadTokens += r.CacheReadTokens
		t.CacheWriteTokens += r.CacheWriteTokens
		if r.Currency != "" {
			known = append(known, r)
		}
	}
	switch {
	case len(known) > 1:
		t.Cost = provider.Cost{Currency: provider.MixedCurrency}
	case len(known) == 1 && known[0].Currency == provider.MixedCurrency && known[0].Requests > 1:
		t.Cost = provider.Cost{Currency: provider.MixedCurrency}
	case len(known) == 1:
		t.Cost = provider.Cost{Amount: known[0].Cost, Currency: known[0].Currency}
	}
	return t
}

// Usage returns what the session's provider responses used and cost: every
// response the session recorded in its store's usage ledger, turn steps,
// summary calls (of compactions that committed, failed or were
// cancelled alike) and any other, in this process and every process
// before it. The totals never go down: a compaction, an Uncompact, a
// reopen or a takeover leaves the ledger as it was. A request that failed
// without a response (the provider billed nothing) is not counted.
// Errors: the store's, wrapped.
func (s *Session) Usage(ctx context.Context) (UsageReport, error) {
	totals, err := s.store.UsageTotals(ctx, s.id)
	if err != nil {
		return UsageReport{}, fmt.Errorf("session: read usage: %w", err)
	}
	return usageReport(totals), nil
}

// maxReportedTokens bounds a token figure a provider reports for one
// response; a larger one (or a negative one) is not believed.
const maxReportedTokens = 1 << 30

// cleanUsage returns u with every figure a provider cannot have meant
// (negative, or above maxReportedTokens) as 0, and whether it changed
// any. Cache figures above the input are cut to it.
func cleanUsage(u provider.Usage) (provider.Usage, bool) {
	bad := false
	fix := func(n *int) {
		if *n < 0 || *n > maxReportedTokens {
			*n, bad = 0, true
		}
	}
	fix(&u.InputTokens)
	fix(&u.OutputTokens)
	fix(&u.CacheReadTokens)
	fix(&u.CacheWriteTokens)
	if u.CacheReadTokens > u.InputTokens {
		u.CacheReadTokens, bad = u.InputTokens, true
	}
	if u.CacheWriteTokens > u.InputTokens-u.CacheReadTokens {
		u.CacheWriteTokens, bad = u.InputTokens-u.CacheReadTokens, true
	}
	return u, bad
}

// meter makes the ledger records of a session's responses. It is a value
// the loop hands to its jobs: what it holds does not change.
type meter struct {
	pricing provider.Pricing // nil = nothing is priced
	log     *zap.Logger
}

// record returns the ledger record of one response: u as the provider
// reported it (cleaned: cleanUsage), priced with the meter's pricing.
func (m meter) record(purpose provider.Purpose, info provider.Info, model string, u provider.Usage, turnID, compactID string) history.UsageRecord {
	u, bad := cleanUsage(u)
	if bad {
		m.log.Warn("the provider reported token figures that cannot be right; they count as 0", zap.String("provider", info.Name), zap.String("model", model))
	}
	if model == "" {
		model = info.Model
	}
	r := history.UsageRecord{
		ID: newID(), Purpose: string(purpose), Provider: info.Name, Model: model, TurnID: turnID, CompactID: compactID,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
		At: time.Now(),
	}
	if m.pricing != nil {
		if c, ok := m.pricing.Price(model, u); ok && c.Known() && c.Amount >= 0 && c.Amount < 1e12 {
			r.Cost, r.Currency = c.Amount, c.Currency
		}
	}
	return r
}

// usageOf returns r's figures as a provider.Usage.
func usageOf(r *history.UsageRecord) provider.Usage {
	return provider.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens}
}

// costOf returns r's cost.
func costOf(r *history.UsageRecord) provider.Cost {
	return provider.Cost{Amount: r.Cost, Currency: r.Currency}
}

// spent adds recorded response r to the session's cumulative cost and
// publishes its UsageEvent (commit, then emit: r is in the store).
// contextTokens is the UsageEvent's ContextTokens.
func (l *loop) spent(r *history.UsageRecord, contextTokens int) {
	l.cost = l.cost.Add(costOf(r))
	l.publish(&UsageEvent{
		Purpose: provider.Purpose(r.Purpose), Usage: usageOf(r), ContextTokens: contextTokens, TurnID: r.TurnID,
		CompactID: r.CompactID, Model: r.Model, Cost: costOf(r), SessionCost: l.cost,
	})
}
