package doccheck

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/internal/cli"
)

// pointsAway matches what a user does not have: the design documents
// budge was built from, and paths into the machine it was built on.
var pointsAway = regexp.MustCompile(`(?i)seed sections?\b|\bthe seed('s)?\b|\bseed documents?\b|\.\./shared|shared/data|\.\./data/`)

// TestNoPointersAway: no document and no help text sends a user to the
// design documents budge was built from or to paths on the machine it was
// built on. budge states its method in its own words.
func TestNoPointersAway(t *testing.T) {
	root := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "bench", "RESULTS.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if m := pointsAway.FindString(l); m != "" {
				t.Errorf("%s:%d: %q points a user at something budge does not ship: %s", f, i+1, m, l)
			}
		}
	}
	for _, page := range append(helpPages, []string{"deck"}, []string{"sim"}, []string{"deck", "list"}) {
		var out bytes.Buffer
		cli.Main(context.Background(), append(append([]string{}, page...), "--help"), nil, &out, io.Discard)
		if out.Len() == 0 {
			t.Errorf("budge %s --help printed nothing", strings.Join(page, " "))
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if m := pointsAway.FindString(l); m != "" {
				t.Errorf("budge %s --help: %q points a user at something budge does not ship: %s", strings.Join(page, " "), m, l)
			}
		}
	}
}

// TestLicenseAndReadme: the README stays a first page (at most 250
// lines), names the module, states the scope and links every docs page;
// the licence exists.
func TestLicenseAndReadme(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "LICENSE")); err != nil {
		t.Error("no LICENSE file")
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it to 250 and move the rest to docs/", n)
	}
	for _, want := range []string{"github.com/buildlab/budge", "go test ./...", "go run ./cmd/budge run",
		"not for\nemployment, credit, medical treatment, housing or education decisions"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, p := range pages {
		if link := "docs/" + filepath.Base(p); !strings.Contains(readme, "("+link+")") {
			t.Errorf("README.md does not link %s", link)
		}
	}
}
