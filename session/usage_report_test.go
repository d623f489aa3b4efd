package session

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/storekit"
	"github.com/sessionkit/sessionkit/provider"
)

// TestUsageReport_SameAsTally: the report made from a ledger's sums
// (what an open and Session.Usage read) is the report TallyUsage makes of
// its records, to the last bit of every cost: random ledgers of three
// purposes and of no, one, two or the mixed currency.
func TestUsageReport_SameAsTally(t *testing.T) {
	currencies := []string{"", "USD", "EUR", provider.MixedCurrency}
	purposes := []string{"turn", "summary", "fidelity"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 38))
		n := rng.IntN(12)
		recs := make([]history.UsageRecord, n)
		for i := range recs {
			r := &recs[i]
			r.ID, r.Purpose = fmt.Sprint("r", i), purposes[rng.IntN(len(purposes))]
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens = rng.IntN(1000), rng.IntN(100), rng.IntN(10), rng.IntN(10)
			if seed%4 == 0 { // one currency: the sums matter
				r.Currency = "USD"
			} else {
				r.Currency = currencies[rng.IntN(len(currencies))]
			}
			if r.Currency != "" {
				r.Cost = rng.Float64() / 10
			}
		}
		want, got := TallyUsage(recs), usageReport(storekit.SumUsage(recs))
		if fmt.Sprintf("%#v", want) != fmt.Sprintf("%#v", got) {
			t.Fatalf("seed %d, records %+v:\nTallyUsage  %#v\nusageReport %#v", seed, recs, want, got)
		}
	}
}
