package sqlite

import (
	"context"
	"database/sql"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// insertUsage is the insert of one ledger row; a record whose ID the
// session holds is left out (history.Ledger: a retried write counts once).
const insertUsage = `INSERT INTO usage_records (session_id, id, purpose, provider, model, turn_id, compact_id,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, currency, at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, id) DO NOTHING`

// recordUsage inserts recs, which have passed storekit.CheckUsage, in tx:
// the transaction of the write that recorded them.
func (s *Store) recordUsage(ctx context.Context, tx *sql.Tx, op, id string, recs []history.UsageRecord) error {
	for i := range recs {
		r := &recs[i]
		at, err := encodeTime(r.At)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertUsage, id, r.ID, r.Purpose, r.Provider, r.Model, r.TurnID, r.CompactID,
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.Cost, r.Currency, at); err != nil {
			return s.fail(ctx, op, err)
		}
	}
	return nil
}

// RecordUsage implements [history.Ledger]: one write of the committer,
// with the lease check of every write and without the version
// compare-and-swap, like LogEvents.
func (s *Store) RecordUsage(ctx context.Context, id string, recs []history.UsageRecord) error {
	const op = "record usage"
	return sqlstore.RecordUsage(recs, s.fenced(ctx, op, id), func(q txQuerier) error {
		var one int
		return s.row(q.ctx, q.tx, op, id, "1", &one)
	}, func(q txQuerier, recs []history.UsageRecord) error { return s.recordUsage(q.ctx, q.tx, op, id, recs) })
}

// Usage implements [history.Ledger]: the rows in rowid order, the order
// they were inserted in.
func (s *Store) Usage(ctx context.Context, id string) ([]history.UsageRecord, error) {
	return s.usageRows(ctx, "usage", id, `ORDER BY rowid`)
}

// LastUsage implements [history.Ledger]: one backward step of the index
// of migration 19.
func (s *Store) LastUsage(ctx context.Context, id, purpose string) (history.UsageRecord, bool, error) {
	if err := storekit.CheckPurpose(purpose); err != nil {
		return history.UsageRecord{}, false, err
	}
	return storekit.Last(s.usageRows(ctx, "last usage", id, lastUsageTail, purpose))
}

// selectUsage reads the ledger rows of a session (session_id = ?) that
// the condition and order tail after it selects.
const selectUsage = `SELECT id, purpose, provider, model, turn_id, compact_id,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, currency, at
	FROM usage_records WHERE session_id = ? `

// lastUsageTail is LastUsage's tail of selectUsage: the newest record of
// a purpose, one backward step of the index of migration 19
// (TestQueryPlans).
const lastUsageTail = `AND purpose = ? ORDER BY rowid DESC LIMIT 1`

// usageRows reads the ledger rows of session id that the condition and
// order tail (after session_id = ?) selects.
func (s *Store) usageRows(ctx context.Context, op, id, tail string, args ...any) ([]history.UsageRecord, error) {
	var out []history.UsageRecord
	err := s.read(ctx, op, func(tx *sql.Tx) error {
		if _, err := s.exists(ctx, tx, op, id); err != nil {
			return err
		}
		return s.each(ctx, tx, op, selectUsage+tail, append([]any{id}, args...), func(rows *sql.Rows) error {
			var (
				r  history.UsageRecord
				at sql.NullInt64
			)
			if err := rows.Scan(&r.ID, &r.Purpose, &r.Provider, &r.Model, &r.TurnID, &r.CompactID,
				&r.InputTokens, &r.OutputTokens, &r.CacheReadTokens, &r.CacheWriteTokens, &r.Cost, &r.Currency, &at); err != nil {
				return err
			}
			r.At = decodeTime(at)
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UsageTotals implements [history.Ledger]: the rows of usage_totals,
// which the trigger of migration 18 keeps as records are inserted.
func (s *Store) UsageTotals(ctx context.Context, id string) ([]history.UsageTotal, error) {
	const op = "usage totals"
	var out []history.UsageTotal
	err := s.view(ctx, op, func(q querier) error {
		if _, err := s.existsIn(ctx, q, op, id); err != nil {
			return err
		}
		var err error
		out, err = collect(q, `SELECT purpose, currency, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost
			FROM usage_totals WHERE session_id = ? ORDER BY purpose, currency`, []any{id}, func(rows rowScanner) (history.UsageTotal, error) {
			var t history.UsageTotal
			var n, in, o, cr, cw int64
			err := rows.Scan(&t.Purpose, &t.Currency, &n, &in, &o, &cr, &cw, &t.Cost)
			t.Requests, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens = int(n), int(in), int(o), int(cr), int(cw)
			return t, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
