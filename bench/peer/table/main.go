// Command table prints the peer benchmark results side by side: it reads the
// JSON lines of bench/peer/goworker and the Node worker from stdin and prints
// a Markdown table per N with the ratio peer / sessionkit (above 1 means
// sessionkit is faster or smaller).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"

	"github.com/sessionkit/sessionkit/bench/internal/workload"
)

// result is one worker's JSON line (the Go worker's type, which has the
// Node worker's fields too).
type (
	result = workload.Result
	stat   = workload.Stat
)

func main() {
	byN := map[int][]result{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			log.Fatalf("bad line %q: %v", line, err)
		}
		byN[r.N] = append(byN[r.N], r)
	}
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	for _, n := range ns {
		rs := byN[n]
		var sk, peer *result
		for i := range rs {
			if strings.HasPrefix(rs[i].SDK, "sessionkit") {
				sk = &rs[i]
			} else {
				peer = &rs[i]
			}
		}
		if sk == nil || peer == nil {
			log.Fatalf("N=%d: need one sessionkit and one peer result", n)
		}
		print(n, sk, peer)
	}
}

func ms(s stat) string {
	return fmt.Sprintf("%.2f (%.2f-%.2f; cold %.2f)", s.Median, s.Min, s.Max, s.Cold)
}

func ratio(peer, sk float64) string {
	if sk <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", peer/sk)
}

func print(n int, sk, peer *result) {
	fmt.Printf("\n### N = %d (medians of %d warm reps in ms, min-max, cold rep 0)\n\n", n, sk.Compact.E2E.N)
	fmt.Printf("| | %s | %s | peer / sessionkit |\n|---|---|---|---|\n", sk.SDK, peer.SDK)
	row := func(name string, a, b stat) {
		fmt.Printf("| %s | %s | %s | %s |\n", name, ms(a), ms(b), ratio(b.Median, a.Median))
	}
	num := func(name string, a, b float64, unit string) {
		fmt.Printf("| %s | %.1f%s | %.1f%s | %s |\n", name, a, unit, b, unit, ratio(b, a))
	}
	count := func(name string, a, b int64) {
		fmt.Printf("| %s | %d | %d | %s |\n", name, a, b, ratio(float64(b), float64(a)))
	}
	num("build: N durable appends", sk.Build.Ms, peer.Build.Ms, " ms")
	count("build: file bytes", sk.Build.FileBytes, peer.Build.FileBytes)
	row("compact: end to end", sk.Compact.E2E, peer.Compact.E2E)
	row("compact: model HTTP request", sk.Compact.ModelHTTP, peer.Compact.ModelHTTP)
	row("**compact: excluding the model request**", sk.Compact.ExclModel, peer.Compact.ExclModel)
	row("compact: call to request sent", sk.Compact.Prepare, peer.Compact.Prepare)
	count("compact: summary request bytes", int64(sk.Compact.RequestBytes), int64(peer.Compact.RequestBytes))
	fmt.Printf("| compact: model calls | %d | %d | |\n", sk.Compact.ModelCalls, peer.Compact.ModelCalls)
	fmt.Printf("| compact: context messages after | %d | %d | |\n", sk.Compact.ContextMessagesAfter, peer.Compact.ContextMessagesAfter)
	row("**reopen compacted + context**", sk.Reopen.CompactedCtx, peer.Reopen.CompactedCtx)
	if peer.Reopen.StoreOnly != nil {
		fmt.Printf("| (peer store only: open JSONL + buildSessionContext) | | %s | %s |\n", ms(*peer.Reopen.StoreOnly), ratio(peer.Reopen.StoreOnly.Median, sk.Reopen.CompactedCtx.Median))
	}
	row("reopen uncompacted + context", sk.Reopen.UncompactedCtx, peer.Reopen.UncompactedCtx)
	row("resume to request", sk.Reopen.ResumeToRequest, peer.Reopen.ResumeToRequest)
	fmt.Printf("| messages in the resumed request | %d | %d | |\n", sk.Reopen.ContextMessages, peer.Reopen.ContextMessages)
	num("RSS after init", sk.RSSAfterInitMB, peer.RSSAfterInitMB, " MB")
	num("**peak RSS**", sk.PeakRSSMB, peer.PeakRSSMB, " MB")
	fmt.Printf("| summarized | %s | %s | |\n", sk.Summarized, peer.Summarized)
}
