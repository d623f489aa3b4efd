package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/historytest"
	"github.com/sessionkit/sessionkit/internal/pgtest"
)

// BenchmarkOtherSessionsWhileFrozen measures the latency of other agents'
// work on their own sessions (each operation an append through a lease and
// a load, round robin over four sessions) while one process or connection
// is frozen somewhere:
//
//   - none: nothing is frozen (the reference);
//   - holder: a frozen holder's open transaction keeps the lease row and
//     the sessions row of another session locked;
//   - reader+migration: a reader frozen inside its read transaction on the
//     messages table while a new release's agent tries, again and again,
//     to migrate with an ALTER TABLE of that table.
//
// It reports the p50 and p99 of an operation; the goal is a p99 within 2x
// of the "none" run's.
func BenchmarkOtherSessionsWhileFrozen(b *testing.B) {
	for _, frozen := range []string{"none", "holder", "reader+migration"} {
		b.Run("frozen="+frozen, func(b *testing.B) {
			url := pgtest.Database(b)
			ctx := context.Background()
			s := openStore(b, url, WithHolder("fleet"))
			type sess struct {
				st history.Store
				id string
				v  uint64
			}
			var all []*sess
			for i := range 4 {
				id := fmt.Sprint("other", i)
				l := acquire(b, s, id)
				snap, err := l.Store().Create(ctx, history.NewSession{ID: id})
				require.NoError(b, err)
				all = append(all, &sess{st: l.Store(), id: id, v: snap.Version})
			}
			frozenSession := acquire(b, s, "frozen")
			_, err := frozenSession.Store().Create(ctx, history.NewSession{ID: "frozen"})
			require.NoError(b, err)
			stop := func() {}
			switch frozen {
			case "holder":
				stop = pgtest.Hold(b, url, `SELECT 1 FROM leases WHERE session_id = '\x66726f7a656e' FOR UPDATE`, `SELECT 1 FROM sessions WHERE id = '\x66726f7a656e' FOR UPDATE`)
			case "reader+migration":
				stopReader := pgtest.Hold(b, url, `SELECT count(*) FROM messages`)
				mctx, cancel := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Go(func() {
					later := append(slices.Clone(migrations), `ALTER TABLE messages ADD COLUMN bench bigint`)
					if st, err := Open(mctx, url, withMigrations(later)); err == nil {
						_ = st.Close()
					}
				})
				stop = func() { cancel(); wg.Wait(); stopReader() }
			}
			var lat historytest.SearchLatencies
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				x := all[i%len(all)]
				lat.Time(func() {
					v, err := x.st.Append(ctx, x.id, x.v, historytest.Msgs(fmt.Sprint("m", i), 1))
					require.NoError(b, err)
					x.v = v
					_, err = s.Load(ctx, x.id)
					require.NoError(b, err)
				})
			}
			b.StopTimer()
			stop()
			lat.Report(b)
		})
	}
}
