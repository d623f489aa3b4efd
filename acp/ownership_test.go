package acp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ownerTypes are the types whose values belong to an ACP session's owner
// goroutine: the session itself, the prompts waiting for their answers and
// the items of its queue.
var ownerTypes = []string{"agentSession", "waitingPrompt", "outItem"}

// An ACP session's state is changed by its owner alone (docs/design.md
// §7.9): outside the owner's files (acp/owner*.go) no code writes a field of
// an agentSession, reads one the owner changes (those after "Owned by run."),
// touches a waitingPrompt or an outItem, or calls a method of agentSession
// other than the requests declared in acp/owner_requests.go, which only send
// the owner a function to run. Inside the owner's files that code runs on
// the owner goroutine, which the race detector checks in every test that
// runs a session.
//
// The rule is one of code layout, so the test reads the package's code
// (type-checked, so that a.x means a field of an agentSession and nothing
// that happens to share its name).
func TestOwnerAloneChangesItsState(t *testing.T) {
	fset, files, pkg, info := checkPackage(t)

	owner := map[*types.Named]bool{}
	for _, name := range ownerTypes {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		require.True(t, ok, "acp has no type %s", name)
		owner[tn.Type().(*types.Named)] = true
	}
	session := pkg.Scope().Lookup("agentSession").Type().(*types.Named)
	owned := ownedFields(t, fset, files)
	requests := map[string]bool{}
	for _, f := range files {
		if filepath.Base(fset.Position(f.Pos()).Filename) != "owner_requests.go" {
			continue
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				requests[fn.Name.Name] = true
			}
		}
	}
	require.NotEmpty(t, requests, "acp/owner_requests.go declares the requests")

	var bad []string
	report := func(n ast.Node, format string, args ...any) {
		bad = append(bad, fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(fset.Position(f.Pos()).Filename), "owner") {
			continue
		}
		written := map[*ast.SelectorExpr]bool{}
		markWritten := func(e ast.Expr) {
			for {
				switch x := e.(type) {
				case *ast.IndexExpr:
					e = x.X
					continue
				case *ast.ParenExpr:
					e = x.X
					continue
				case *ast.StarExpr:
					e = x.X
					continue
				case *ast.SelectorExpr:
					written[x] = true
				}
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.AssignStmt:
				for _, l := range x.Lhs {
					markWritten(l)
				}
			case *ast.IncDecStmt:
				markWritten(x.X)
			case *ast.UnaryExpr:
				if x.Op == token.AND {
					markWritten(x.X)
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(x.Args) > 0 {
					markWritten(x.Args[0])
				}
			case *ast.CompositeLit:
				if tv, ok := info.Types[x]; ok {
					if nt := named(tv.Type); nt != nil && owner[nt] {
						report(x, "builds a %s", nt.Obj().Name())
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			x, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			sel := info.Selections[x]
			if sel == nil {
				return true
			}
			recv := named(sel.Recv())
			if recv == nil || !owner[recv] {
				return true
			}
			name := sel.Obj().Name()
			switch {
			case sel.Kind() == types.MethodVal && recv == session:
				if !requests[name] {
					report(x, "calls agentSession.%s, which is not a request of acp/owner_requests.go", name)
				}
			case recv != session:
				report(x, "reaches into a %s (.%s)", recv.Obj().Name(), name)
			case written[x]:
				report(x, "writes agentSession.%s", name)
			case owned[name]:
				report(x, "reads agentSession.%s, which its owner changes", name)
			}
			return true
		})
	}
	if len(bad) > 0 {
		t.Errorf("outside the owner's files (acp/owner*.go):\n%s", strings.Join(bad, "\n"))
	}
}

// checkPackage parses and type-checks the package's code (no tests).
func checkPackage(t *testing.T) (*token.FileSet, []*ast.File, *types.Package, *types.Info) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", exportData(t))}
	info := &types.Info{
		Selections: map[*ast.SelectorExpr]*types.Selection{},
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
	}
	pkg, err := conf.Check("github.com/sessionkit/sessionkit/acp", fset, files, info)
	require.NoError(t, err)
	return fset, files, pkg, info
}

// The connection's negotiated state needs no lock because the handlers own
// it (docs/acp.md, "One initialize per connection"): the connection runs
// them one at a time, which holds while no handler detaches, so the package
// never calls jsonrpc.Detach; initialize (acp/server_init.go) alone writes
// server.negotiated, and only the handlers' files (acp/server*.go) read it,
// never an owner, a surface or a tool, which copy what they need at open.
func TestHandlersAloneHoldTheNegotiatedState(t *testing.T) {
	fset, files, pkg, info := checkPackage(t)
	srv := pkg.Scope().Lookup("server").Type().(*types.Named)
	var bad []string
	for _, f := range files {
		file := filepath.Base(fset.Position(f.Pos()).Filename)
		written := map[*ast.SelectorExpr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok {
				for _, l := range as.Lhs {
					for {
						if sel, ok := l.(*ast.SelectorExpr); ok {
							written[sel] = true
							l = sel.X
							continue
						}
						break
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			x, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if fn, ok := info.Uses[x.Sel].(*types.Func); ok && fn.Pkg() != nil && fn.Pkg().Path() == "github.com/sessionkit/sessionkit/internal/jsonrpc" && fn.Name() == "Detach" {
				bad = append(bad, fset.Position(x.Pos()).String()+": calls jsonrpc.Detach: handlers would no longer run one at a time")
			}
			sel := info.Selections[x]
			if sel == nil || sel.Kind() != types.FieldVal || named(sel.Recv()) != srv || sel.Obj().Name() != "negotiated" {
				return true
			}
			switch {
			case written[x] && file != "server_init.go":
				bad = append(bad, fset.Position(x.Pos()).String()+": writes server.negotiated outside initialize")
			case !strings.HasPrefix(file, "server"):
				bad = append(bad, fset.Position(x.Pos()).String()+": reads server.negotiated outside the handlers")
			}
			return true
		})
	}
	if len(bad) > 0 {
		t.Errorf("the connection's negotiated state:\n%s", strings.Join(bad, "\n"))
	}
}

// named is the named type of t or of what t points to.
func named(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := t.(*types.Named)
	return n
}

// ownedFields are the fields of agentSession its owner changes: those
// declared after the comment "Owned by run." (the ones before are set when
// it is built and only read afterwards).
func ownedFields(t *testing.T, fset *token.FileSet, files []*ast.File) map[string]bool {
	t.Helper()
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			ts := g.Specs[0].(*ast.TypeSpec)
			if ts.Name.Name != "agentSession" {
				continue
			}
			var mark token.Pos
			for _, cg := range f.Comments {
				if cg.Pos() > ts.Pos() && cg.End() < ts.End() && strings.Contains(cg.Text(), "Owned by run.") {
					mark = cg.Pos()
				}
			}
			require.True(t, mark.IsValid(), "agentSession has no comment \"Owned by run.\"")
			owned := map[string]bool{}
			for _, fld := range ts.Type.(*ast.StructType).Fields.List {
				if fld.Pos() > mark {
					for _, n := range fld.Names {
						owned[n.Name] = true
					}
				}
			}
			require.NotEmpty(t, owned)
			return owned
		}
	}
	t.Fatal("no type agentSession")
	return nil
}

// exportData finds the compiled export data of the package's imports (go
// list -export) for the type checker.
func exportData(t *testing.T) func(path string) (io.ReadCloser, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	export := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		export[p.ImportPath] = p.Export
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok || file == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	}
}
