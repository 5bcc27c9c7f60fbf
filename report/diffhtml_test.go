package report_test

import (
	"strings"
	"testing"

	"github.com/buildlab/budge/report"
)

var diffCols = []report.DiffColumn{{Name: "status", Compared: true}, {Name: "answer", Compared: true}, {Name: "reasoning"}}

func side(f ...string) report.DiffSide { return report.DiffSide{Fields: f} }

// A cell changes when a compared field differs or one run lacks it; free
// text that is shown but not compared never makes it change.
func TestNewDiffCell(t *testing.T) {
	for _, c := range []struct {
		name    string
		b, a    report.DiffSide
		changed bool
		differs []bool
	}{
		{"same", side("ok", "A", "x"), side("ok", "A", "x"), false, []bool{false, false, false}},
		{"reasoning only", side("ok", "A", "x"), side("ok", "A", "y"), false, []bool{false, false, false}},
		{"answer", side("ok", "A", "x"), side("ok", "B", "x"), true, []bool{false, true, false}},
		{"missing after", side("ok", "A", "x"), report.DiffSide{Missing: true}, true, []bool{false, false, false}},
		{"missing both", report.DiffSide{Missing: true}, report.DiffSide{Missing: true}, false, []bool{false, false, false}},
	} {
		got := report.NewDiffCell(0, "k", diffCols, c.b, c.a)
		if got.Changed != c.changed {
			t.Errorf("%s: changed %v, want %v", c.name, got.Changed, c.changed)
		}
		for i := range c.differs {
			if got.Differs[i] != c.differs[i] {
				t.Errorf("%s: column %d differs %v, want %v", c.name, i, got.Differs[i], c.differs[i])
			}
		}
	}
}

// The diff file escapes what it shows, marks changed fields and counts the
// cells of each section.
func TestDiffWriter(t *testing.T) {
	var b strings.Builder
	w := report.NewDiffWriter(&b, "diff <of> runs")
	w.Section(report.DiffHead{Protocol: "pressure", Columns: diffCols,
		Section: report.CompareSection{Before: report.RunInfo{ID: "r1"}, After: report.RunInfo{ID: "r2"}, Refused: "the runs used different decks"}})
	w.Cell(report.NewDiffCell(0, "c/I/P-first/authority/r1", diffCols, side("ok", "A", "<script>alert(1)</script>"), side("ok", "B", "y")))
	w.Cell(report.NewDiffCell(1, "c/II/P-first/authority/r1", diffCols, side("ok", "A", "x"), side("ok", "A", "x")))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"diff &lt;of&gt; runs", "&lt;script&gt;alert(1)&lt;/script&gt;", "REFUSED: the runs used different decks",
		`<tr class="changed">`, `<tr class="same">`, `<td class="chg b">A</td><td class="chg a">B</td>`, "2 cells, 1 changed", "</html>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the file lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("model text became markup")
	}
}
