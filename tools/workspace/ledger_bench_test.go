package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/session"
	"github.com/sessionkit/sessionkit/tools/workspace"
)

// BenchmarkLedger measures what the file ledger costs a tool call on a
// 1 MiB file: edit_file and a whole read_file, each with the session's
// ledger and the guard (hashing the content seen, before and after) and
// without either (no ledger in ctx, Options.NoFileGuard). The ledger's
// cost is the difference; docs/compaction.md ("Files") gives a run's
// figures.
func BenchmarkLedger(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	require.NoError(b, err)
	line := strings.Repeat("x", 63) + "\n"
	content := "MARK-A\n" + strings.Repeat(line, (1<<20)/64-1)
	require.NoError(b, os.WriteFile(filepath.Join(root, "big.txt"), []byte(content), 0o644))
	ws, err := workspace.New(root)
	require.NoError(b, err)
	b.Cleanup(func() { _ = ws.Close() })
	for _, on := range []bool{false, true} {
		name := "without"
		if on {
			name = "with"
		}
		tools := map[string]session.Tool{}
		for _, t := range ws.Tools(workspace.Options{AllowAll: true, MaxOutput: 2 << 20, NoFileGuard: !on}) {
			tools[t.Name] = t
		}
		ctx := context.Background()
		if on {
			ctx = session.WithFileLedger(ctx, session.NewFileLedger(0))
		}
		run := func(b *testing.B, name string, args any) {
			raw, _ := json.Marshal(args)
			if _, err := tools[name].Run(ctx, raw); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("read_file/"+name, func(b *testing.B) {
			for b.Loop() {
				run(b, "read_file", map[string]any{"path": "big.txt"})
			}
		})
		b.Run("edit_file/"+name, func(b *testing.B) {
			run(b, "read_file", map[string]any{"path": "big.txt"})
			marks := [2]string{"MARK-A", "MARK-B"}
			i := 0
			for b.Loop() {
				run(b, "edit_file", map[string]any{"path": "big.txt", "old_text": marks[i%2], "new_text": marks[(i+1)%2]})
				i++
			}
		})
	}
}
