package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// TestOpenReadOnly: a store opened read-only reads what was written; every
// write fails on the server (read-only transactions); nothing is migrated:
// an empty database stays without tables, and older and newer schema
// versions are refused with one line naming both versions.
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Database(t)
	w := openStore(t, url)
	snap, err := w.Create(ctx, history.NewSession{ID: "s", Title: "kept"})
	require.NoError(t, err)
	_, err = w.Append(ctx, "s", snap.Version, historytest.Msgs("m", 2))
	require.NoError(t, err)

	r, err := OpenReadOnly(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	got, err := r.Load(ctx, "s")
	require.NoError(t, err)
	assert.Len(t, got.Active, 2)
	page, err := r.ListSessions(ctx, history.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 1)
	_, err = r.ReadLease(ctx, "s")
	require.NoError(t, err)
	_, err = r.Append(ctx, "s", got.Version, historytest.Msgs("x", 1))
	require.ErrorContains(t, err, "read-only transaction")
	_, err = r.Acquire(ctx, "s")
	require.ErrorContains(t, err, "read-only transaction")
	require.ErrorContains(t, r.Delete(ctx, "s"), "read-only transaction")
	again, err := w.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, got.Version, again.Version, "nothing written")

	for _, v := range []int{len(migrations) - 1, len(migrations) + 1} {
		_, err = w.pool.Exec(ctx, `UPDATE schema_version SET version = $1`, v)
		require.NoError(t, err)
		_, err = OpenReadOnly(ctx, url)
		if v > len(migrations) {
			require.ErrorIs(t, err, ErrNewerSchema)
			assert.Contains(t, err.Error(), "versions up to "+strconv.Itoa(len(migrations)))
		} else {
			require.ErrorIs(t, err, ErrOlderSchema)
			assert.Contains(t, err.Error(), "reads version "+strconv.Itoa(len(migrations)))
		}
		assert.Contains(t, err.Error(), "schema version "+strconv.Itoa(v))
		assert.NotContains(t, err.Error(), "\n")
		assert.Equal(t, v, schemaVersionOf(t, url), "not migrated")
	}

	empty := pgtest.Database(t)
	_, err = OpenReadOnly(ctx, empty)
	require.ErrorIs(t, err, ErrNotAStore)
	conn, err := pgx.Connect(ctx, empty)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var tables int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables))
	assert.Zero(t, tables, "no table created")
}

// TestConnectFailureOneLine: a connection that fails is one line naming
// each cause once (pgx tries again without TLS, with the same error).
func TestConnectFailureOneLine(t *testing.T) {
	t.Parallel()
	for _, open := range []func(context.Context, string, ...Option) (*Store, error){Open, OpenReadOnly} {
		_, err := open(context.Background(), "postgres://user:s3cret@127.0.0.1:1/db?connect_timeout=5")
		require.Error(t, err)
		msg := err.Error()
		assert.NotContains(t, msg, "\n")
		assert.Contains(t, msg, "cannot connect")
		assert.Equal(t, 1, strings.Count(msg, "connection refused"), msg)
		assert.NotContains(t, msg, "s3cret")
	}
}
