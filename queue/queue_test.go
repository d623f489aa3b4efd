package queue_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sessionkit/sessionkit/queue"
)

type cmd struct {
	id    string
	kind  queue.Kind
	front bool
	n     int // push order
	// ahead lists the checkpoint commands queued when a front command was pushed.
	ahead []string
}

func TestIdleTakesCheckpointsBeforePrompts(t *testing.T) {
	var q queue.Queue[string]
	q.Push(queue.Prompt, "p1", "p1")
	q.Push(queue.Checkpoint, "s1", "s1")
	q.Push(queue.Prompt, "p2", "p2")
	q.Push(queue.Checkpoint, "c1", "c1")
	q.PushFront("auto", "auto")

	_, ok := q.Next(false)
	require.True(t, ok)
	var got []string
	for {
		v, ok := q.Next(true)
		if !ok {
			break
		}
		got = append(got, v)
	}
	// The first Next(false) took "auto".
	assert.Equal(t, []string{"s1", "c1", "p1", "p2"}, got)
	assert.Zero(t, q.Len())
}

func TestCheckpointNeverTakesPrompts(t *testing.T) {
	var q queue.Queue[int]
	q.Push(queue.Prompt, "p", 1)
	_, ok := q.Next(false)
	assert.False(t, ok)
	assert.Equal(t, 1, q.Len())
	assert.Zero(t, q.Checkpoints())
}

func TestRemoveAndDrain(t *testing.T) {
	var q queue.Queue[string]
	q.Push(queue.Prompt, "p1", "p1")
	q.Push(queue.Checkpoint, "c1", "c1")
	q.Push(queue.Checkpoint, "c2", "c2")
	v, ok := q.Remove("c1")
	require.True(t, ok)
	assert.Equal(t, "c1", v)
	_, ok = q.Remove("c1")
	assert.False(t, ok, "a removed command is gone")
	assert.Equal(t, []string{"c2", "p1"}, q.Drain())
	assert.Zero(t, q.Len())
	_, ok = q.Next(true)
	assert.False(t, ok)
}

// TestOrderingProperties drives random interleavings of pushes, removals and
// takes (at checkpoints and when idle) and checks the rules of docs/design.md §2.2
// and §3.2 against what comes out.
func TestOrderingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q queue.Queue[*cmd]
		queued := map[string]*cmd{}
		var out []*cmd
		n := 0
		queuedCheckpoints := func() []string {
			var ids []string
			for id, c := range queued {
				if c.kind == queue.Checkpoint {
					ids = append(ids, id)
				}
			}
			return ids
		}
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); op {
			case 0, 1:
				k := queue.Kind(rapid.IntRange(0, 1).Draw(t, "kind"))
				n++
				c := &cmd{id: fmt.Sprint("x", n), kind: k, n: n}
				q.Push(k, c.id, c)
				queued[c.id] = c
			case 2:
				n++
				c := &cmd{id: fmt.Sprint("f", n), kind: queue.Checkpoint, front: true, n: n, ahead: queuedCheckpoints()}
				q.PushFront(c.id, c)
				queued[c.id] = c
			case 3:
				if len(queued) == 0 {
					continue
				}
				ids := make([]string, 0, len(queued))
				for id := range queued {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				id := rapid.SampledFrom(ids).Draw(t, "remove")
				c, ok := q.Remove(id)
				if !ok || c.id != id {
					t.Fatalf("Remove(%s) = %v, %v", id, c, ok)
				}
				delete(queued, id)
			default:
				idle := op == 5
				hadCheckpoint := len(queuedCheckpoints()) > 0
				c, ok := q.Next(idle)
				if !ok {
					if hadCheckpoint || (idle && len(queued) > 0) {
						t.Fatalf("Next(%v) returned nothing with %d queued", idle, len(queued))
					}
					continue
				}
				if queued[c.id] != c {
					t.Fatalf("Next returned %s, which is not queued", c.id)
				}
				if c.kind == queue.Prompt && (!idle || hadCheckpoint) {
					t.Fatalf("prompt %s taken (idle=%v) while checkpoint commands wait", c.id, idle)
				}
				delete(queued, c.id)
				out = append(out, c)
			}
			if q.Len() != len(queued) {
				t.Fatalf("Len() = %d, want %d", q.Len(), len(queued))
			}
		}
		out = append(out, q.Drain()...)
		for _, c := range out {
			delete(queued, c.id)
		}
		if len(queued) != 0 {
			t.Fatalf("lost commands: %v", queued)
		}
		// Prompts keep their order; checkpoint commands pushed at the back keep
		// theirs; a front command precedes every checkpoint command it overtook.
		pos := map[string]int{}
		for i, c := range out {
			pos[c.id] = i
		}
		var lastPrompt, lastCheckpoint int
		for i, c := range out {
			switch {
			case c.kind == queue.Prompt:
				if c.n < lastPrompt {
					t.Fatalf("prompt %s out of order at %d", c.id, i)
				}
				lastPrompt = c.n
			case !c.front:
				if c.n < lastCheckpoint {
					t.Fatalf("checkpoint command %s out of order at %d", c.id, i)
				}
				lastCheckpoint = c.n
			default:
				for _, a := range c.ahead {
					if p, ok := pos[a]; ok && p < pos[c.id] {
						t.Fatalf("front command %s came after %s", c.id, a)
					}
				}
			}
		}
	})
}
