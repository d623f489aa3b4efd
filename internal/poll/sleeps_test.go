package poll

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSleepDecidesAnOrder reads every test file of the module: a
// time.Sleep in a test runs on synctest's fake clock (inside synctest.Test,
// where time moves only when every goroutine of the bubble is blocked) or
// says on its line why it is no wait for an order (a sampling period, a
// random pause); tests wait for a condition with this package, never with
// require.Eventually or a loop of their own.
func TestNoSleepDecidesAnOrder(t *testing.T) {
	root := moduleRoot(t)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		commented := map[int]bool{}
		for _, g := range f.Comments {
			for _, c := range g.List {
				commented[fset.Position(c.Slash).Line] = true
			}
		}
		rel, _ := filepath.Rel(root, path)
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return false
			}
			stack = append(stack, n)
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			pos := fset.Position(call.Pos())
			switch selector(call.Fun) {
			case "time.Sleep":
				if !inSynctest(stack) && !commented[pos.Line] {
					t.Errorf("%s:%d: time.Sleep outside synctest.Test without a comment saying why it decides no order; wait with internal/poll or a gate", rel, pos.Line)
				}
			case "require.Eventually", "assert.Eventually", "require.Eventuallyf", "assert.Eventuallyf":
				t.Errorf("%s:%d: %s; wait with internal/poll", rel, pos.Line, selector(call.Fun))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d test files under %s; the module has more", files, root)
	}
}

// selector names a call's function as pkg.Name.
func selector(e ast.Expr) string {
	s, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := s.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return x.Name + "." + s.Sel.Name
}

// inSynctest reports whether the innermost node of stack is inside a
// function passed to synctest.Test.
func inSynctest(stack []ast.Node) bool {
	for i := len(stack) - 1; i > 0; i-- {
		if _, ok := stack[i].(*ast.FuncLit); !ok {
			continue
		}
		if call, ok := stack[i-1].(*ast.CallExpr); ok && selector(call.Fun) == "synctest.Test" {
			return true
		}
	}
	return false
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
}
