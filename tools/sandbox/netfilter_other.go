//go:build linux && !(amd64 || arm64)

package sandbox

// denyNetSockets does nothing on this architecture: UDP (below Landlock ABI
// 10) and Multipath TCP stay open to a command (docs/security.md).
func denyNetSockets() error { return nil }
