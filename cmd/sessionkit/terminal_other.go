//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package main

// isTerminal reports no terminal where sessionkit cannot tell: delete then
// needs --yes.
func isTerminal(uintptr) bool { return false }
