//go:build linux

package attack_test

import (
	"os/exec"
	"testing"

	"github.com/sessionkit/sessionkit/tools/sandbox"
	"github.com/sessionkit/sessionkit/tools/sandbox/sandboxtest"
)

// BenchmarkConfinedTrue measures what confinement costs a command: `true`
// run by sh directly, and through Policy.Prepare and Command.Run confined
// (the helper's stages, the Landlock ruleset, the capability drop and the
// seccomp filter). The goal is at most 25 ms for the confined one.
func BenchmarkConfinedTrue(b *testing.B) {
	b.Run("plain sh", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", "true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("confined", func(b *testing.B) {
		sandboxtest.RequireLandlock(b)
		dir := b.TempDir()
		p := sandbox.Policy{Mode: sandbox.Required, Writable: []string{dir}}
		for b.Loop() {
			if code, out := run(b, p, "true", dir); code != 0 {
				b.Fatal(code, out)
			}
		}
	})
}
