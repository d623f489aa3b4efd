package chanbatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFill: Fill takes what the channel holds, up to the limit, without
// waiting for more, and leaves the rest in the channel.
func TestFill(t *testing.T) {
	ch := make(chan int, 8)
	for i := range 5 {
		ch <- i
	}
	assert.Equal(t, []int{9, 0, 1}, Fill([]int{9}, ch, 3), "up to the limit")
	assert.Len(t, ch, 3, "the rest stays in the channel")
	assert.Equal(t, []int{2, 3, 4}, Fill(nil, ch, 10), "no more than the channel holds, without waiting")
	assert.Empty(t, Fill(nil, ch, 10), "an empty channel")
	full := []int{1, 2}
	ch <- 7
	assert.Equal(t, full, Fill(full, ch, 2), "a batch already at the limit takes nothing")
	assert.Len(t, ch, 1)
}
