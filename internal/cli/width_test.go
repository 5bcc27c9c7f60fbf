package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/report"
)

// TestListingsFitInTheTerminal: deck check of every built-in and example
// deck, deck list and runs (with a Chinese deck's long name) fit in 100
// terminal columns, Chinese characters counted as two.
func TestListingsFitInTheTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	examples, _ := filepath.Glob(filepath.Join("..", "..", "docs", "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example decks in docs/examples")
	}
	pages := [][]string{{"deck", "list"}}
	for _, d := range append([]string{"discovery", "confirmation", "discovery-zh", "confirmation-zh"}, examples...) {
		pages = append(pages, []string{"deck", "check", d})
	}
	if code, out, errs := budge(t, "run", "--deck", "discovery-zh", "--dir", dir, "--quiet"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	pages = append(pages, []string{"runs", "--dir", dir})
	for _, p := range pages {
		code, out, errs := budge(t, p...)
		if code != ExitOK || out == "" {
			t.Fatalf("budge %s: exit %d\n%s", strings.Join(p, " "), code, errs)
		}
		for i, l := range strings.Split(out, "\n") {
			if c := report.Columns(l); c > report.TextWidth {
				t.Errorf("budge %s: line %d is %d columns:\n%s", strings.Join(p, " "), i+1, c, l)
			}
		}
	}
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	long := "  NOTE deck.yaml:3: identity: " + strings.Repeat("words that wrap ", 12) + "(审查者「未指定，请替换为针对你的使用场景选定这组身份对照的合格审查者，并记录其资格与审查日期」) end"
	got := wrapText(long, "    ")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("%d lines:\n%s", len(lines), got)
	}
	for i, l := range lines {
		if report.Columns(l) > report.TextWidth {
			t.Errorf("line %d is %d columns: %s", i+1, report.Columns(l), l)
		}
		if i > 0 && (!strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ")) {
			t.Errorf("line %d is not indented by 4: %q", i+1, l)
		}
		if i > 0 && strings.ContainsAny(strings.TrimSpace(l)[:3], "，」）") {
			t.Errorf("line %d starts with punctuation: %q", i+1, l)
		}
	}
	// Nothing lost: the words, and the Chinese text without spaces added.
	flat := strings.Join(strings.Fields(got), " ")
	if !strings.Contains(strings.ReplaceAll(flat, " ", ""), strings.ReplaceAll(strings.Join(strings.Fields(long), ""), " ", "")) {
		t.Errorf("text changed:\n%s", got)
	}
	if !strings.HasPrefix(got, "  NOTE deck.yaml:3:") {
		t.Errorf("first line lost its indent: %q", got)
	}
	if w := wrapText("  short line", "    "); w != "  short line\n" {
		t.Errorf("short line: %q", w)
	}
}
