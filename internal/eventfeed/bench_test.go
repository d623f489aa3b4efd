package eventfeed

import (
	"errors"
	"testing"
)

var errClosed = errors.New("closed")

// BenchmarkFeedBurst publishes a burst of 10,000 events to one subscriber
// that reads them in another goroutine, as an ACP session's owner reads its
// session's deltas: per event, the cost of the channel and, past its 64
// events, of the overflow and the pump.
func BenchmarkFeedBurst(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		f := newTestFeed(8, 1<<14)
		s, err := f.Subscribe(b.Context(), 0, 0, func(*Subscription[event]) {})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan int)
		go func() {
			got := 0
			for range s.Events() {
				got++
			}
			done <- got
		}()
		for range n {
			f.Publish(payload{})
		}
		f.CloseAll(errClosed)
		if got := <-done; got != n {
			b.Fatalf("%d events of %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}
