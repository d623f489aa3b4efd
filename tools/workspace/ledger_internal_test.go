package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
	"github.com/sessionkit/sessionkit/session"
)

// BenchmarkLedgerWork is the ledger's own work in an edit_file of a 1 MiB
// file, alone: the ledger path (links resolved), the check of the content
// before (one hash) and the record of the content after (one more), as
// guard and change do it. BenchmarkLedger measures whole calls.
func BenchmarkLedgerWork(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	require.NoError(b, os.MkdirAll(filepath.Join(root, "pkg", "sub"), 0o755))
	text := strings.Repeat(strings.Repeat("x", 63)+"\n", (1<<20)/64)
	require.NoError(b, os.WriteFile(filepath.Join(root, "pkg", "sub", "big.txt"), []byte(text), 0o644))
	w, err := New(root)
	require.NoError(b, err)
	b.Cleanup(func() { _ = w.Close() })
	t := tools{w: w, o: Options{}.withDefaults()}
	led := session.NewFileLedger(0)
	ctx := session.WithFileLedger(context.Background(), led)
	l, err := w.resolve("pkg/sub/big.txt")
	require.NoError(b, err)
	t.record(ctx, l, seenWhole(history.FileRead, text))
	tg := &target{l: l, text: text, exists: true}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if err := t.guard(ctx, "edit_file", tg); err != nil {
			b.Fatal(err)
		}
		t.record(ctx, l, seenWhole(history.FileChanged, text))
	}
}

// The ledger path of a name: links inside the directory resolved, the
// rest left as it is (a link out of the directory, through an absolute
// target, a loop, a name that does not exist yet), never a path outside
// the directory.
func TestLedgerPathLinks(t *testing.T) {
	parent, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(parent, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pkg"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pkg", "util.go"), []byte("package pkg\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(parent, "secret"), []byte("x"), 0o644))
	for link, target := range map[string]string{
		"sub/up":   "../pkg/util.go",           // inside
		"pkgs":     "sub/../pkg",               // inside, through ..
		"out":      "../secret",                // out of the directory
		"sub/out":  "../../secret",             // out, from below
		"again":    "../root/pkg/util.go",      // out and back in: the Root refuses it
		"abs":      filepath.Join(root, "pkg"), // absolute
		"loop":     "loop",
		"sub/loop": "../loop2",
		"loop2":    "sub/loop",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, link)))
	}
	w, err := New(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	for name, want := range map[string]string{
		"sub/up":        "pkg/util.go",
		"pkgs/util.go":  "pkg/util.go",
		"sub/../sub/up": "pkg/util.go",
		"out":           "out",
		"sub/out":       "sub/out",
		"again":         "again",
		"abs/util.go":   "abs/util.go",
		"loop":          "loop",
		"loop2/x":       "loop2/x",
		"pkgs/new/f.go": "pkg/new/f.go",
	} {
		l, err := w.locate(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, w.ledgerPath(l), name)
	}
}
