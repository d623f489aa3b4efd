package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/storekit"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// TestUsageTotalsMigration: migration 17 sums the ledgers recorded
// before it into usage_totals, and the trigger adds what is recorded
// after it.
func TestUsageTotalsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	old, err := Open(ctx, url, withMigrations(migrations[:16]))
	require.NoError(t, err)
	recs := historytest.UsageMix()
	for _, id := range []string{"a", "b"} {
		_, err := old.Create(ctx, history.NewSession{ID: id})
		require.NoError(t, err)
		require.NoError(t, old.RecordUsage(ctx, id, recs[:len(recs)-1]))
	}
	require.NoError(t, old.Close())

	s := openStore(t, url)
	require.NoError(t, s.RecordUsage(ctx, "a", recs[len(recs)-1:]))
	for id, want := range map[string][]history.UsageRecord{"a": recs, "b": recs[:len(recs)-1]} {
		got, err := s.UsageTotals(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, storekit.SumUsage(want), got, id)
	}
}
