// Package poll is how the tests of this module wait for a condition: one
// polling loop with a bounded total, so that no test writes its own loop of
// sleeps. A wait here only ever waits for something to become true; it never
// decides an order between goroutines (use a gate, a channel, or
// testing/synctest for that).
package poll

import (
	"context"
	"iter"
	"testing"
	"time"
)

// Limit is the bound of For: how long a condition may take to hold before
// the test fails.
const Limit = 10 * time.Second

// interval bounds the pause between two checks of a condition; the first
// checks follow each other faster.
const interval = 20 * time.Millisecond

// For waits until cond holds, for at most Limit, and fails t naming what it
// waited for when it does not. cond runs in the caller's goroutine, so it
// may use require.
func For(t testing.TB, cond func() bool, what string) {
	t.Helper()
	Until(t, Limit, cond, what)
}

// Until is For with a bound of its own.
func Until(t testing.TB, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	if !Within(limit, cond) {
		t.Fatalf("waited %v: %s did not happen", limit, what)
	}
}

// Within reports whether cond held within limit. It is for code that fails in
// its own way (a test's child process, an assertion kept after the wait).
func Within(limit time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return Context(ctx, cond)
}

// Context reports whether cond held before ctx ended. cond is checked
// at least once, even when ctx has ended already.
func Context(ctx context.Context, cond func() bool) bool {
	for range Tries(ctx) {
		if cond() {
			return true
		}
	}
	return false
}

// Tries paces a loop that retries an operation until it succeeds, for loops
// that check each attempt (leave with break or return): it yields the attempt
// number at once, then after each pause, and a last time when ctx ends.
func Tries(ctx context.Context) iter.Seq[int] {
	return func(yield func(int) bool) {
		pause := time.Millisecond
		for n := 0; ; n++ {
			if !yield(n) || ctx.Err() != nil {
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(n + 1)
				return
			case <-t.C:
			}
			pause = min(2*pause, interval)
		}
	}
}
