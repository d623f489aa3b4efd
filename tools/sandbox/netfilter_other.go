//go:build linux && !(amd64 || arm64)

package sandbox

// denyNetSockets does nothing on this architecture: UDP (below Landlock ABI
// 10), Multipath TCP and UNIX sockets (below ABI 9) stay open to a command
// (docs/security.md).
func denyNetSockets() error { return nil }
