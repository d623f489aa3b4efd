// Package queue is a session's ordered input queue (docs/design.md §2).
//
// The queue holds two kinds of commands. Prompts start turns and are taken
// only when the session is idle. Checkpoint commands (steer, configure,
// compact) are taken at the next step checkpoint of the active turn, or at
// once when the session is idle, and always before the next prompt. Within
// each kind the queue order is kept exactly. An automatic compaction enters
// at the front of the checkpoint commands.
//
//	var q queue.Queue[string]
//	q.Push(queue.Prompt, "p1", "hello")
//	q.Push(queue.Checkpoint, "c1", "compact")
//	v, _ := q.Next(true) // "compact": an idle session takes checkpoint commands first
//
// # Ownership
//
// A Queue is not safe for concurrent use: it belongs to the one goroutine
// that owns a session's state.
package queue

// Kind tells how a command is scheduled.
type Kind int

// Command kinds.
const (
	// Prompt commands start a turn; they are taken only when the session is
	// idle and no checkpoint command is waiting.
	Prompt Kind = iota
	// Checkpoint commands (steer, configure, compact) are taken at the next
	// step checkpoint, or at once when the session is idle.
	Checkpoint
)

func (k Kind) String() string {
	if k == Prompt {
		return "prompt"
	}
	return "checkpoint"
}

type item[T any] struct {
	id string
	v  T
}

// Queue is an ordered input queue of values of type T, each with an ID. The
// zero value is an empty queue.
type Queue[T any] struct {
	prompts     []item[T]
	checkpoints []item[T]
}

// Push adds v with the given ID at the back of its kind.
func (q *Queue[T]) Push(k Kind, id string, v T) {
	if k == Prompt {
		q.prompts = append(q.prompts, item[T]{id, v})
		return
	}
	q.checkpoints = append(q.checkpoints, item[T]{id, v})
}

// PushFront adds a checkpoint command before every waiting checkpoint
// command (docs/design.md §3.2: an automatic compaction).
func (q *Queue[T]) PushFront(id string, v T) {
	q.checkpoints = append([]item[T]{{id, v}}, q.checkpoints...)
}

// Next removes and returns the command to run now. At a step checkpoint
// (idle false) only checkpoint commands are taken; when idle, checkpoint
// commands come first and then prompts.
func (q *Queue[T]) Next(idle bool) (T, bool) {
	if len(q.checkpoints) > 0 {
		return pop(&q.checkpoints), true
	}
	if idle && len(q.prompts) > 0 {
		return pop(&q.prompts), true
	}
	var zero T
	return zero, false
}

func pop[T any](s *[]item[T]) T {
	it := (*s)[0]
	var zero item[T]
	(*s)[0] = zero // let the value be collected
	*s = (*s)[1:]
	if len(*s) == 0 {
		*s = nil
	}
	return it.v
}

// Remove removes the command with the given ID and reports whether it was
// queued.
func (q *Queue[T]) Remove(id string) (T, bool) {
	for _, s := range []*[]item[T]{&q.prompts, &q.checkpoints} {
		for i, it := range *s {
			if it.id == id {
				*s = append((*s)[:i:i], (*s)[i+1:]...)
				return it.v, true
			}
		}
	}
	var zero T
	return zero, false
}

// Len returns the number of queued commands.
func (q *Queue[T]) Len() int { return len(q.prompts) + len(q.checkpoints) }

// Checkpoints returns the number of queued checkpoint commands.
func (q *Queue[T]) Checkpoints() int { return len(q.checkpoints) }

// IDs returns the IDs of the queued commands: checkpoint commands first,
// then prompts, each in queue order.
func (q *Queue[T]) IDs() []string {
	out := make([]string, 0, q.Len())
	for _, s := range [][]item[T]{q.checkpoints, q.prompts} {
		for _, it := range s {
			out = append(out, it.id)
		}
	}
	return out
}

// Drain removes every command and returns them: checkpoint commands first,
// then prompts, each in queue order.
func (q *Queue[T]) Drain() []T {
	out := make([]T, 0, q.Len())
	for _, it := range q.checkpoints {
		out = append(out, it.v)
	}
	for _, it := range q.prompts {
		out = append(out, it.v)
	}
	q.checkpoints, q.prompts = nil, nil
	return out
}
