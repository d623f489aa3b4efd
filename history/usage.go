package history

import (
	"context"
	"fmt"
	"time"
)

// Ledger is a session's usage ledger: one [UsageRecord] per provider
// response (a turn's step, a compaction's summary call, any other call a
// provider billed), kept for the session's whole life. Nothing ever takes
// a record out but [Catalog.Delete]: a compaction, an Uncompact or a new
// process leaves it as it is, so totals summed from it never go down.
//
// A record is written with what its response produced where there is one,
// in the same transaction: a turn step's reply through [Writer.Append],
// a summary through [Commit.Usage]. RecordUsage writes the records of
// responses that produced nothing the store keeps (an empty summary, a
// summary whose compaction failed or was cancelled, a fidelity check).
//
// Records are idempotent by ID: a record whose ID the session's ledger
// holds already is not recorded again (it keeps the first), so a write
// retried after a failure that landed after all counts once.
type Ledger interface {
	// RecordUsage records recs in the session's ledger, in one
	// transaction. Like [EventLog]'s writes it neither takes nor changes
	// the session's version (a lease still fences it). It fails with
	// ErrNotFound for an unknown session and with an error wrapping
	// ErrInvalid for a malformed record (see [UsageRecord.Validate]) or
	// two records of one ID; then nothing is written.
	RecordUsage(ctx context.Context, id string, recs []UsageRecord) error
	// Usage returns the session's ledger in the order it was recorded.
	// It fails with ErrNotFound for an unknown session.
	Usage(ctx context.Context, id string) ([]UsageRecord, error)
	// UsageTotals returns the sums of the session's ledger without its
	// records: one [UsageTotal] for each purpose and currency recorded,
	// and one for each currency over every purpose (Purpose ""), ordered
	// by Purpose, then Currency. The store keeps them as it records, so
	// reading them does not grow with the ledger. It fails with
	// ErrNotFound for an unknown session.
	UsageTotals(ctx context.Context, id string) ([]UsageTotal, error)
	// LastUsage returns the newest record of the session's ledger whose
	// Purpose is purpose, and whether there is one: a session opened again
	// takes the context its conversation held from its last turn
	// response's record. Reading it does not grow with the ledger. It
	// fails with ErrNotFound for an unknown session and with an error
	// wrapping ErrInvalid for an empty purpose.
	LastUsage(ctx context.Context, id, purpose string) (UsageRecord, bool, error)
}

// UsageTotal sums the records of a session's [Ledger] of one purpose
// (Purpose "" sums every purpose) and one currency (Currency "" sums the
// unpriced records, whose Cost is 0). Cost adds the records' costs one at
// a time in the order they were recorded, as a float64 sum in Go does, so
// a sum made from [Ledger.Usage] in that order is the same number.
type UsageTotal struct {
	Purpose  string
	Currency string
	// Requests is how many records the sum holds; the token figures and
	// Cost are the sums of theirs.
	Requests                                                     int
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int
	Cost                                                         float64
}

// Add adds record r to t (whose Purpose and Currency the caller matched).
func (t *UsageTotal) Add(r *UsageRecord) {
	t.Requests++
	t.InputTokens += r.InputTokens
	t.OutputTokens += r.OutputTokens
	t.CacheReadTokens += r.CacheReadTokens
	t.CacheWriteTokens += r.CacheWriteTokens
	t.Cost += r.Cost
}

// UsageRecord is one provider response as the ledger keeps it: why it was
// made, by what, what the provider reported of it and what it cost.
type UsageRecord struct {
	ID string // unique per session; required
	// Purpose is the provider.Purpose of the request ("turn", "summary",
	// ...); required.
	Purpose string
	// Provider and Model name what answered ("" when unknown).
	Provider, Model string
	// TurnID is the turn the response belongs to, CompactID the
	// compaction; "" when none.
	TurnID, CompactID string
	// The token figures of provider.Usage, as the provider reported them
	// (never negative).
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int
	// Cost is what the response cost, in Currency; Currency "" means the
	// response was not priced (Cost is then 0).
	Cost     float64
	Currency string
	At       time.Time
}

// Validate reports the first problem of r, or nil: no ID or purpose, a
// negative token figure, a negative or not finite cost, or a cost without
// a currency. The error wraps [ErrInvalid] and names the field.
func (r *UsageRecord) Validate() error {
	switch {
	case r.ID == "":
		return invalidf("usage record has no ID")
	case r.Purpose == "":
		return invalidf("usage record %s has no Purpose", r.ID)
	case r.InputTokens < 0:
		return invalidf("usage record %s: InputTokens is negative (%d)", r.ID, r.InputTokens)
	case r.OutputTokens < 0:
		return invalidf("usage record %s: OutputTokens is negative (%d)", r.ID, r.OutputTokens)
	case r.CacheReadTokens < 0:
		return invalidf("usage record %s: CacheReadTokens is negative (%d)", r.ID, r.CacheReadTokens)
	case r.CacheWriteTokens < 0:
		return invalidf("usage record %s: CacheWriteTokens is negative (%d)", r.ID, r.CacheWriteTokens)
	case !(r.Cost >= 0) || r.Cost > maxCost: // also NaN
		return invalidf("usage record %s: Cost %v is not a price", r.ID, r.Cost)
	case r.Cost != 0 && r.Currency == "":
		return invalidf("usage record %s: Cost %v has no Currency", r.ID, r.Cost)
	}
	return nil
}

// maxCost bounds a record's Cost: anything above is not a price (and
// keeps the sums finite).
const maxCost = 1e12

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
