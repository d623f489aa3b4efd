// Command appendrate measures durable append throughput of a SQLite store
// in three shapes (docs/performance.md, "Appends and the search index"):
// 64 sessions appending one message per call at once, one session
// appending one message per call, and one session appending 64 messages
// per call. It uses only the store's public API, so that the same file
// builds against an older commit for a side-by-side run.
//
//	go run ./bench/appendrate -d 3s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
)

// text is a message of 500 bytes of varied words.
var text = func() string {
	words := strings.Fields("the ledger rounding parser config timeout retry archive summary session compaction " +
		"message search index query store append commit durable write fsync batch group latency throughput")
	var b strings.Builder
	for i := 0; b.Len() < 500; i++ {
		b.WriteString(words[(i*7)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()[:500]
}()

func main() {
	d := flag.Duration("d", 3*time.Second, "how long each shape runs")
	shape := flag.String("shape", "all", "sessions64, session1, batch64 or all")
	prof := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "appendrate:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	for _, sh := range []string{"sessions64", "session1", "batch64"} {
		if *shape != "all" && *shape != sh {
			continue
		}
		cpu0 := cpuTime()
		rate, n, err := run(sh, *d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "appendrate:", err)
			return
		}
		fmt.Printf("%s %.0f msgs/s %.1f cpu-µs/msg\n", sh, rate, float64((cpuTime()-cpu0).Microseconds())/float64(n))
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// run runs one shape for d on a new store and returns durable messages
// appended per second and how many.
func run(shape string, d time.Duration) (float64, int64, error) {
	dir, err := os.MkdirTemp("", "appendrate-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	ctx := context.Background()
	sessions, per := 1, 1
	switch shape {
	case "sessions64":
		sessions = 64
	case "batch64":
		per = 64
	}
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		snap, err := st.Create(ctx, history.NewSession{ID: id})
		if err != nil {
			return 0, 0, err
		}
		wg.Add(1)
		go func(v uint64) {
			defer wg.Done()
			for n := 0; time.Now().Before(stop); n++ {
				msgs := make([]history.Message, per)
				for k := range msgs {
					role := history.RoleUser
					if k%2 == 1 {
						role = history.RoleAssistant
					}
					msgs[k] = history.Message{ID: fmt.Sprintf("%s-%d-%d", id, n, k), Role: role, Text: text, CreatedAt: time.Now()}
				}
				nv, err := st.Append(ctx, id, v, msgs)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				v = nv
				done.Add(int64(per))
			}
		}(snap.Version)
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), done.Load(), firstErr
}
