// Command commitfsync compares the SQLite compaction commit with its floor:
// the same number of bytes written to a plain file and fsynced, in the same
// run. The bytes a commit writes are read from the process's write counter
// (wchar in /proc/self/io, Linux) around CommitCompaction.
//
//	commitfsync --active 10000 --reps 21
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sessionkit/sessionkit/bench/internal/workload"
	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/history/sqlite"
)

func main() {
	active := flag.Int("active", 10000, "Active messages before the first commit")
	reps := flag.Int("reps", 21, "commits (each archives --archive messages)")
	archive := flag.Int("archive", 100, "messages each commit archives")
	flag.Parse()
	if *archive**reps >= *active {
		log.Fatal("--archive * --reps must be below --active")
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sessionkit-commitfsync-")
	must(err)
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "s.db"))
	must(err)
	defer st.Close()
	snap, err := st.Create(ctx, history.NewSession{ID: "s"})
	must(err)
	v := snap.Version
	for i := 0; i < *active; i += 1000 {
		msgs := make([]history.Message, 0, 1000)
		for j := i; j < min(*active, i+1000); j++ {
			role := history.RoleUser
			if j%2 == 1 {
				role = history.RoleAssistant
			}
			msgs = append(msgs, history.Message{ID: fmt.Sprintf("m%d", j), Role: role, Text: workload.Text(j), CreatedAt: time.Now()})
		}
		v, err = st.Append(ctx, "s", v, msgs)
		must(err)
	}
	raw, err := os.OpenFile(filepath.Join(dir, "raw"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(err)
	defer raw.Close()

	var commit, plain []float64
	var bytes []int64
	summary := strings.Repeat("summary ", 40)
	for r := 0; r < *reps; r++ {
		cid := fmt.Sprintf("c%d", r)
		v, err = st.BeginCompaction(ctx, "s", v, history.CompactionRecord{CompactID: cid, Trigger: "manual", Status: history.StatusInProgress, StartedAt: time.Now()})
		must(err)
		w0 := wchar()
		start := time.Now()
		v, _, err = st.CommitCompaction(ctx, "s", v, history.Commit{CompactID: cid, SegmentID: "g" + cid, Archive: *archive, Summary: summary, At: time.Now()})
		d := time.Since(start)
		must(err)
		n := wchar() - w0
		buf := make([]byte, n)
		start = time.Now()
		_, err = raw.Write(buf)
		must(err)
		must(raw.Sync())
		p := time.Since(start)
		commit = append(commit, float64(d.Nanoseconds())/1e6)
		plain = append(plain, float64(p.Nanoseconds())/1e6)
		bytes = append(bytes, n)
	}
	c, p := median(commit[1:]), median(plain[1:])
	out, _ := json.Marshal(map[string]any{
		"active": *active, "commits": *reps - 1, "archiveEach": *archive,
		"commit_ms_median": c, "raw_write_fsync_ms_median": p, "ratio": c / p,
		"bytes_per_commit_median": bytes[len(bytes)/2],
		"commit_ms_min":           minOf(commit[1:]), "raw_ms_min": minOf(plain[1:]),
	})
	fmt.Println(string(out))
}

// wchar is the number of bytes this process has passed to write calls.
func wchar() int64 {
	f, err := os.Open("/proc/self/io")
	must(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			must(err)
			return n
		}
	}
	log.Fatal("no wchar in /proc/self/io")
	return 0
}

func median(xs []float64) float64 {
	ys := append([]float64(nil), xs...)
	sort.Float64s(ys)
	return ys[len(ys)/2]
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
