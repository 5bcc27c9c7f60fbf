package study_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// stillDispatching are the files outside study that still branch on a
// run's protocol, with how many places each; the count may only fall.
// None is left: every page and command asks the result.
var stillDispatching = map[string]int{}

// Outside study's registry, code does not branch on the protocol: no type
// assertion or switch on a protocol's result type, no Kind check, no
// comparison of a run's protocol name. A place that needs to know asks the
// result (study.Output) or a capability (study.Reviewable).
func TestNoProtocolDispatchOutsideStudy(t *testing.T) {
	root := ".."
	found := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "study" || rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if what := dispatch(n); what != "" {
				found[filepath.ToSlash(rel)]++
				if _, known := stillDispatching[filepath.ToSlash(rel)]; !known {
					t.Errorf("%s: %s outside study's registry; ask the result (study.Output) or a capability instead", fset.Position(n.Pos()), what)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, max := range stillDispatching {
		if found[file] > max {
			t.Errorf("%s branches on the protocol in %d places, more than the %d it had", file, found[file], max)
		}
		if found[file] < max {
			t.Errorf("%s now branches on the protocol in %d places: lower its count in stillDispatching to %d", file, found[file], found[file])
		}
	}
}

// dispatch says what protocol dispatch n is, "" when it is none.
func dispatch(n ast.Node) string {
	switch x := n.(type) {
	case *ast.TypeAssertExpr:
		if x.Type != nil && resultType(x.Type) {
			return "a type assertion to a protocol's result"
		}
	case *ast.CaseClause:
		for _, e := range x.List {
			if resultType(e) {
				return "a type switch on a protocol's result"
			}
		}
	case *ast.IndexExpr:
		if resultType(x.Index) {
			return "a protocol's result type as a type argument"
		}
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "KindOf" {
			return "a Kind check"
		}
	case *ast.BinaryExpr:
		if x.Op != token.EQL && x.Op != token.NEQ {
			return ""
		}
		for _, side := range []ast.Expr{x.X, x.Y} {
			if sel, ok := side.(*ast.SelectorExpr); ok && sel.Sel.Name == "Protocol" {
				return "a comparison of the protocol name"
			}
			if lit, ok := side.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, _ := strconv.Unquote(lit.Value); s == "pressure" || s == "framing" || s == "judge" {
					return "a comparison with a protocol name"
				}
			}
		}
	}
	return ""
}

// resultType reports whether e names a protocol's result type
// (study.PressureResult and the like, pointer or not).
func resultType(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "study" && strings.HasSuffix(sel.Sel.Name, "Result") && sel.Sel.Name != "Result"
}
