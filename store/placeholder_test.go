package store

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlWords mark a string literal as SQL.
var sqlWords = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|WHERE|VALUES)\b`)

// The store's queries write their parameters as $1, $2, ...: nothing
// rewrites a query for PostgreSQL, which reads a ? as an operator. A ?
// in a query of the package's own code (outside a quoted SQL string) is
// a query that works on SQLite only.
func TestQueriesNumberTheirParameters(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !sqlWords.MatchString(s) {
				return true
			}
			checked++
			quoted := false
			for _, c := range s {
				switch {
				case c == '\'':
					quoted = !quoted
				case c == '?' && !quoted:
					t.Errorf("%s: a query with a ? parameter (write $1, $2, ...): %.80s", fset.Position(lit.Pos()), strings.Join(strings.Fields(s), " "))
					return true
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Errorf("checked %d queries: the check does not find the store's queries", checked)
	}
}
