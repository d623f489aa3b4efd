package acp

import (
	"github.com/sessionkit/sessionkit/acp/schema"
	"github.com/sessionkit/sessionkit/provider"
)

// raiseCost takes c, the session's cumulative cost (UsageEvent.SessionCost,
// Session.Usage), as the cost to report when it is above the one held:
// a replayed event carries an older cost, and what the client is told
// never goes down. It reports whether the cost rose.
func (a *agentSession) raiseCost(c provider.Cost) bool {
	switch {
	case !c.Known() || c.Currency == provider.MixedCurrency:
		return false
	case !a.cost.Known():
	case c.Currency != a.cost.Currency || c.Amount <= a.cost.Amount:
		return false
	}
	a.cost = c
	return true
}

// usageUpdate is the usage_update of the figures held: the context last
// reported and, when prices are known, the session's cumulative cost.
func (a *agentSession) usageUpdate(meta map[string]any) *schema.UsageUpdate {
	u := &schema.UsageUpdate{Used: a.used, Size: a.srv.contextWindow(), Meta: meta}
	if a.cost.Known() {
		u.Cost = &schema.Cost{Amount: a.cost.Amount, Currency: a.cost.Currency}
	}
	return u
}
