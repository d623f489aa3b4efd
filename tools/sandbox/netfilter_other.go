//go:build linux && !(amd64 || arm64)

package sandbox

// denySockets does nothing on this architecture: every socket family but
// TCP (which Landlock restricts) stays open to a command
// (docs/security.md).
func denySockets(network bool) error { return nil }
