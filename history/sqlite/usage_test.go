package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/history/storekit"
)

// TestUsageTotalsMigration: migration 18 sums the ledgers recorded
// before it into usage_totals, and the trigger adds what is recorded
// after it.
func TestUsageTotalsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	old := openAtVersion(t, path, len(migrations)-1)
	recs := historytest.UsageMix()
	for _, id := range []string{"a", "b"} {
		_, err := old.Create(ctx, history.NewSession{ID: id})
		require.NoError(t, err)
		require.NoError(t, old.RecordUsage(ctx, id, recs[:len(recs)-1]))
	}
	require.NoError(t, old.Close())

	s := open(t, path)
	require.NoError(t, s.RecordUsage(ctx, "a", recs[len(recs)-1:]))
	got, err := s.UsageTotals(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, storekit.SumUsage(recs), got)
	got, err = s.UsageTotals(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, storekit.SumUsage(recs[:len(recs)-1]), got)
}
