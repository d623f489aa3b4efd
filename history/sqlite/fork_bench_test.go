package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkFork measures the goals of forks (historytest.BenchFork) with
// fork-B the bytes of payload the database gained per fork (every table's
// and index's cells, from the dbstat table: what a fork adds to it is
// what the fork wrote, whatever free space the file had).
func BenchmarkFork(b *testing.B) {
	s := benchOpen(b)
	historytest.BenchFork(b, s, func() int64 {
		var n int64
		require.NoError(b, s.r.QueryRow(`SELECT sum(payload) FROM dbstat`).Scan(&n))
		return n
	})
}
