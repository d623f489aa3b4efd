package acp

import (
	"context"

	"go.uber.org/zap"

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

// storedUsage queues the usage_update that a session resumed without a
// replay owes a client this owner has told nothing: the session's cost so
// far (the usage ledger's) and the context it holds (in a new process, the
// last turn response's, or the estimate of a compaction after it, marked
// as one; Session.ContextTokens), as after a replay; nothing when neither
// is known. The owner subscribed before: a later figure follows as usual.
func (a *agentSession) storedUsage() {
	if rep, err := a.sess.Usage(context.Background()); err == nil {
		a.raiseCost(rep.Total.Cost)
	} else {
		a.log.Warn("cannot read the session's usage", zap.Error(err))
	}
	tokens, est, err := a.sess.ContextTokens(context.Background())
	if err != nil {
		a.log.Warn("cannot read the session's context", zap.Error(err))
	}
	if tokens <= 0 && !a.cost.Known() {
		return
	}
	a.used = uint64(max(tokens, 0))
	a.enqueue(a.usageUpdate(estimatedIf(est && tokens > 0)))
}
