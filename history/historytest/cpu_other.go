//go:build !unix

package historytest

import "time"

// ProcessCPU is the CPU time this process used so far; it is not
// measured on this system, and is always 0.
func ProcessCPU() time.Duration { return 0 }
