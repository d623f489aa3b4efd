package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
