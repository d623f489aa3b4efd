// Package chanbatch gathers work that waits on a channel into batches, for the
// goroutines of this module that take their work one batch at a time (the
// SQLite store's committer, a session's embedder).
package chanbatch

// Fill appends to b what ch holds now, without waiting, until b holds
// limit items or ch has nothing ready, and returns b.
func Fill[T any](b []T, ch <-chan T, limit int) []T {
	for len(b) < limit {
		select {
		case v := <-ch:
			b = append(b, v)
		default:
			return b
		}
	}
	return b
}
