//go:build linux && !(amd64 || arm64)

package sandbox

// denySockets does nothing on this architecture: UDP (below Landlock ABI
// 10), Multipath TCP and UNIX sockets (below ABI 9) stay open to a command
// (docs/security.md).
func denySockets(network bool) error { return nil }
