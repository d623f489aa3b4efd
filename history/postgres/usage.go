package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/internal/sqlstore"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// recordUsage inserts recs, which have passed storekit.CheckUsage, in tx
// (the transaction of the write that records them), in one statement. A
// record whose ID the session holds is left out (history.Ledger: a retried
// write counts once).
func (s *Store) recordUsage(ctx context.Context, tx pgx.Tx, op, id string, recs []history.UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	n := len(recs)
	var (
		ids, purposes, provs, models = make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
		turns, compacts, currencies  = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		in, out, cr, cw              = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		costs                        = make([]float64, n)
		ats                          = make([]*int64, n)
	)
	for i := range recs {
		r := &recs[i]
		at, err := encodeTime(r.At)
		if err != nil {
			return err
		}
		ids[i], purposes[i], provs[i], models[i] = bin(r.ID), bin(r.Purpose), bin(r.Provider), bin(r.Model)
		turns[i], compacts[i], currencies[i] = bin(r.TurnID), bin(r.CompactID), bin(r.Currency)
		in[i], out[i], cr[i], cw[i] = int64(r.InputTokens), int64(r.OutputTokens), int64(r.CacheReadTokens), int64(r.CacheWriteTokens)
		costs[i], ats[i] = r.Cost, at
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO usage_records (session_id, id, purpose, provider, model, turn_id, compact_id,
			input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, currency, at)
		SELECT $1, u.id, u.purpose, u.provider, u.model, u.turn_id, u.compact_id, u.i, u.o, u.cr, u.cw, u.cost, u.currency, u.at
		FROM unnest($2::bytea[], $3::bytea[], $4::bytea[], $5::bytea[], $6::bytea[], $7::bytea[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::float8[], $13::bytea[], $14::bigint[])
			WITH ORDINALITY AS u (id, purpose, provider, model, turn_id, compact_id, i, o, cr, cw, cost, currency, at, ord)
		ORDER BY u.ord
		ON CONFLICT (session_id, id) DO NOTHING`,
		bin(id), ids, purposes, provs, models, turns, compacts, in, out, cr, cw, costs, currencies, ats)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}

// RecordUsage implements [history.Ledger]: one transaction with the lease
// check of every write and without the version compare-and-swap, like
// LogEvents.
func (s *Store) RecordUsage(ctx context.Context, id string, recs []history.UsageRecord) error {
	const op = "record usage"
	return sqlstore.RecordUsage(recs, s.fenced(ctx, op, id), func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, bin(id)).Scan(&one)
		return s.found(ctx, op, id, err)
	}, func(tx pgx.Tx, recs []history.UsageRecord) error { return s.recordUsage(ctx, tx, op, id, recs) })
}

// Usage implements [history.Ledger]: the rows in the order of num, the
// order they were inserted in.
func (s *Store) Usage(ctx context.Context, id string) ([]history.UsageRecord, error) {
	return s.usageRows(ctx, "usage", id, `ORDER BY num`)
}

// LastUsage implements [history.Ledger]: one backward step of the index
// of migration 19.
func (s *Store) LastUsage(ctx context.Context, id, purpose string) (history.UsageRecord, bool, error) {
	if err := storekit.CheckPurpose(purpose); err != nil {
		return history.UsageRecord{}, false, err
	}
	return storekit.Last(s.usageRows(ctx, "last usage", id, lastUsageTail, bin(purpose)))
}

// selectUsage reads the ledger rows of a session (session_id = $1) that
// the condition and order tail after it selects.
const selectUsage = `SELECT id, purpose, provider, model, turn_id, compact_id,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, currency, at
	FROM usage_records WHERE session_id = $1 `

// lastUsageTail is LastUsage's tail of selectUsage: the newest record of
// a purpose, one backward step of the index of migration 19
// (TestQueryPlans).
const lastUsageTail = `AND purpose = $2 ORDER BY num DESC LIMIT 1`

// usageRows reads the ledger rows of session id that the condition and
// order tail (after session_id = $1) selects.
func (s *Store) usageRows(ctx context.Context, op, id, tail string, args ...any) ([]history.UsageRecord, error) {
	return sessionRows(ctx, s, op, id, selectUsage+tail, append([]any{bin(id)}, args...), func(rows pgx.Rows) (history.UsageRecord, error) {
		var (
			ids, purpose, prov, model, turn, comp, cur []byte
			in, o, cr, cw                              int64
			r                                          history.UsageRecord
			at                                         *int64
		)
		if err := rows.Scan(&ids, &purpose, &prov, &model, &turn, &comp, &in, &o, &cr, &cw, &r.Cost, &cur, &at); err != nil {
			return r, err
		}
		r.ID, r.Purpose, r.Provider, r.Model = string(ids), string(purpose), string(prov), string(model)
		r.TurnID, r.CompactID, r.Currency = string(turn), string(comp), string(cur)
		r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens = int(in), int(o), int(cr), int(cw)
		r.At = decodeTime(at)
		return r, nil
	})
}

// UsageTotals implements [history.Ledger]: the rows of usage_totals,
// which the trigger of migration 17 keeps as records are inserted.
func (s *Store) UsageTotals(ctx context.Context, id string) ([]history.UsageTotal, error) {
	return sessionRows(ctx, s, "usage totals", id, `SELECT purpose, currency, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost
			FROM usage_totals WHERE session_id = $1 ORDER BY purpose, currency`, []any{bin(id)}, func(rows pgx.Rows) (history.UsageTotal, error) {
		var (
			purpose, cur     []byte
			n, in, o, cr, cw int64
			t                history.UsageTotal
		)
		err := rows.Scan(&purpose, &cur, &n, &in, &o, &cr, &cw, &t.Cost)
		t.Purpose, t.Currency = string(purpose), string(cur)
		t.Requests, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens = int(n), int(in), int(o), int(cr), int(cw)
		return t, err
	})
}
