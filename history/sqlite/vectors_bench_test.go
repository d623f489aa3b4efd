package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history/historytest"
)

// BenchmarkNearest is historytest.BenchNearest on a SQLite file: bytes/msg
// is what the vectors add to the file (after a checkpoint) per message,
// and a Nearest is a scan of every vector of the session.
func BenchmarkNearest(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	s := open(b, path)
	size := func() int64 {
		_, err := s.w.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`)
		require.NoError(b, err)
		fi, err := os.Stat(path)
		require.NoError(b, err)
		return fi.Size()
	}
	historytest.BenchNearest(b, s, size, map[string]func() time.Duration{"cpu-ms": historytest.ProcessCPU})
}
