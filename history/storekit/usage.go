package storekit

import (
	"cmp"
	"slices"

	"github.com/sessionkit/sessionkit/history"
)

// SumUsage returns the totals of a ledger whose records are recs, in the
// order recorded, as [history.Ledger.UsageTotals] returns them: one per
// purpose and currency, one per currency over every purpose (Purpose ""),
// ordered by Purpose, then Currency.
func SumUsage(recs []history.UsageRecord) []history.UsageTotal {
	var out []history.UsageTotal
	for i := range recs {
		out = AddUsage(out, &recs[i])
	}
	return out
}

// AddUsage adds record r to totals (as SumUsage made them) and returns
// them, a total added in its place.
func AddUsage(totals []history.UsageTotal, r *history.UsageRecord) []history.UsageTotal {
	for _, purpose := range []string{"", r.Purpose} {
		i, found := slices.BinarySearchFunc(totals, [2]string{purpose, r.Currency}, func(t history.UsageTotal, k [2]string) int {
			return cmp.Or(cmp.Compare(t.Purpose, k[0]), cmp.Compare(t.Currency, k[1]))
		})
		if !found {
			totals = slices.Insert(totals, i, history.UsageTotal{Purpose: purpose, Currency: r.Currency})
		}
		totals[i].Add(r)
	}
	return totals
}
