package judge

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The judge's protocol core imports neither the store, the runner, the
// lifecycle nor any provider.
func TestImportsNoStoreRunnerOrProvider(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, bad := range []string{"/store", "/runner", "/provider", "/study"} {
				if strings.HasPrefix(p, "github.com/buildlab/budge"+bad) {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}
