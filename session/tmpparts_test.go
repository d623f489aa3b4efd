package session_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessionkit/sessionkit/history/sqlite"
)

func BenchmarkTmpParts(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "replay.db")
	n := 10000
	buildCompacted(b, path, n)
	st, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	db, _ := sql.Open("sqlite", path)
	stmt, _ := db.Prepare(bareScan)
	var ev, tl, sc time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := st.Events(ctx, "s", 0, 0); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := st.Timeline(ctx, "s"); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		scanRows(b, stmt, 0, n)
		t3 := time.Now()
		ev += t1.Sub(t0)
		tl += t2.Sub(t1)
		sc += t3.Sub(t2)
	}
	b.ReportMetric(msOf(ev)/float64(b.N), "events-ms")
	b.ReportMetric(msOf(tl)/float64(b.N), "timeline-ms")
	b.ReportMetric(msOf(sc)/float64(b.N), "scan-ms")
}
