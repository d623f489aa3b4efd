package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sessionkit/sessionkit"

// layers are the rows of docs/design.md's package picture, lowest first: a
// package may import packages of its own layer or a lower one, never one
// above. A package is in the layer of the longest prefix that names it
// (a prefix "p" names p and every package under p/).
var layers = [][]string{
	{"history", "history/storekit"}, // the vocabulary and the interfaces; the kit for store authors
	{"internal", "queue"},           // plumbing that users never call; the queue's two rules
	{"history/memstore", "history/sqlite", "history/postgres", // the stores and their suite
		"history/historytest", "history/internal"},
	{"provider"}, // providers, their backends and fromenv
	{"compact"},
	{"session"},
	{"acp"},
	{"tools", "examples", "cmd", "bench"}, // the leaves
}

// pkg is what the test reads of `go list -json`.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Module       *struct{ Path string }
}

// rel is path inside the module ("" and false for a package outside it).
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// under reports whether p is prefix or a package under it.
func under(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// layerOf is the layer of p (relative), -1 when no row names it.
func layerOf(p string) int {
	best, layer := -1, -1
	for i, row := range layers {
		for _, prefix := range row {
			if under(p, prefix) && len(prefix) > best {
				best, layer = len(prefix), i
			}
		}
	}
	return layer
}

// graph runs `go list -deps -json ./...` at the module's root and returns
// the module's packages by relative path.
func graph(t *testing.T) map[string]*pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: the import graph cannot be read")
	}
	cmd := exec.Command(gobin, "list", "-deps", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if r, ok := rel(p.ImportPath); ok && p.Module != nil && p.Module.Path == module {
			pkgs[r] = &p
		}
	}
	if len(pkgs) < 10 || pkgs["history"] == nil || pkgs["session"] == nil {
		t.Fatalf("go list found only %d packages of the module: not run at its root?", len(pkgs))
	}
	return pkgs
}

// own returns the module's packages among paths, relative.
func own(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, ok := rel(p); ok {
			out = append(out, r)
		}
	}
	return out
}

// TestLayers: no package imports one above it in the picture, and every
// package of the module is in the picture.
func TestLayers(t *testing.T) {
	for path, p := range graph(t) {
		l := layerOf(path)
		if l < 0 {
			t.Errorf("%s is in no layer of the package picture: add it to docs/design.md and to layers", path)
			continue
		}
		for _, imp := range own(p.Imports) {
			if il := layerOf(imp); il > l {
				t.Errorf("%s (layer %d) imports %s (layer %d), a package above it in docs/design.md's picture", path, l, imp, il)
			}
		}
	}
}

// TestNarrowRules: the rules of the picture that layers alone do not say.
func TestNarrowRules(t *testing.T) {
	pkgs := graph(t)
	for path, p := range pkgs {
		imports := own(p.Imports)
		switch {
		case path == "history":
			// The vocabulary imports nothing of the project.
			for _, imp := range imports {
				t.Errorf("history imports %s: it imports nothing of the project", imp)
			}
		case path == "history/storekit":
			for _, imp := range imports {
				if imp != "history" {
					t.Errorf("history/storekit imports %s: it builds on history alone", imp)
				}
			}
		case under(path, "internal"):
			for _, imp := range imports {
				if !under(imp, "internal") && !under(imp, "history") {
					t.Errorf("%s imports %s: internal packages import only history and each other (never provider or acp)", path, imp)
				}
			}
		case under(path, "examples"):
			// An example can be copied out of the module as the start of
			// one's own program; its tests may start PostgreSQL with
			// internal/pgtest.
			for _, imp := range imports {
				if under(imp, "internal") || strings.Contains(imp, "/internal/") || strings.HasSuffix(imp, "/internal") {
					t.Errorf("%s imports %s: an example imports no internal package", path, imp)
				}
			}
			for _, imp := range own(slices.Concat(p.TestImports, p.XTestImports)) {
				if (under(imp, "internal") || strings.Contains(imp, "/internal/")) && imp != "internal/pgtest" {
					t.Errorf("the tests of %s import %s: an example's tests use no internal package but internal/pgtest", path, imp)
				}
			}
		}
	}
	// The read-only CLI links no provider backend, so none of their SDKs
	// (provider itself, the interface, comes with session).
	cli := pkgs["cmd/sessionkit"]
	if cli == nil {
		t.Fatal("cmd/sessionkit is not in the graph")
	}
	for _, dep := range own(cli.Deps) {
		if strings.HasPrefix(dep, "provider/") {
			t.Errorf("cmd/sessionkit depends on %s: the read-only CLI needs no provider backend", dep)
		}
	}
}
