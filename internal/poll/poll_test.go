package poll

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeT records a Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) { f.failed = format }

func TestUntilWaitsForTheCondition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ready atomic.Bool
		go func() {
			time.Sleep(3 * time.Second)
			ready.Store(true)
		}()
		start := time.Now()
		ft := &fakeT{TB: t}
		Until(ft, time.Minute, ready.Load, "ready")
		assert.Empty(t, ft.failed)
		took := time.Since(start)
		assert.GreaterOrEqual(t, took, 3*time.Second)
		assert.Less(t, took, 3*time.Second+2*interval, "it checks at least every interval")
	})
}

func TestUntilFailsAfterItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ft := &fakeT{TB: t}
		checks := 0
		Until(ft, 5*time.Second, func() bool { checks++; return false }, "never")
		assert.NotEmpty(t, ft.failed, "the test fails")
		assert.Equal(t, 5*time.Second, time.Since(start), "after the bound, not before")
		assert.Greater(t, checks, 1)
	})
}

func TestContextChecksOnceWhenDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.True(t, Context(ctx, func() bool { return true }))
	assert.False(t, Context(ctx, func() bool { return false }))
}

func TestTriesEndsWithCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		tries := 0
		var last error
		for n := range Tries(ctx) {
			assert.Equal(t, tries, n)
			tries++
			last = ctx.Err()
		}
		assert.Equal(t, time.Second, time.Since(start), "it ends when ctx ends")
		assert.Greater(t, tries, int(time.Second/interval), "it tries at least every interval")
		assert.Error(t, last, "the last try is after ctx ended")
	})
}
