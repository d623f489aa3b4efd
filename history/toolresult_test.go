package history_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sessionkit/sessionkit/history"
)

func TestToolFailed(t *testing.T) {
	assert.True(t, history.ToolFailed("error: tool x failed: boom"))
	assert.True(t, history.ToolFailed(history.ToolErrorPrefix))
	assert.False(t, history.ToolFailed("wrote a.txt"))
	assert.False(t, history.ToolFailed(" error: indented"))
	assert.False(t, history.ToolFailed(""))
}

// TestOneToolErrorPrefix reads the module's Go code outside tests: a
// failed tool result is written and recognised with ToolErrorPrefix and
// ToolFailed only, never by a literal of its own (compact's fact markers
// look for error words in any text, and are not about tool results).
func TestOneToolErrorPrefix(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root")
	allowed := map[string]bool{"history/toolresult.go": true, "compact/facts.go": true}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		files++
		if allowed[filepath.ToSlash(rel)] {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, history.ToolErrorPrefix) {
					t.Errorf("%s:%d: %s; use history.ToolErrorPrefix or history.ToolFailed", rel, fset.Position(lit.Pos()).Line, lit.Value)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "the module's Go files")
}
