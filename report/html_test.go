package report_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from its golden file:\n%s", path, diff(string(want), string(got)))
	}
}

// TestHTMLGolden renders the seeded default simulator run, and a framing
// run, as HTML and compares them with testdata/*.html.
func TestHTMLGolden(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := study.DefaultPressureOptions()
	o.Seed = 11
	res, err := study.RunPressure(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Report()
	rep.Run.ID = "20261202-000000-golden"
	rep.Run.Created = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	k, lo, hi := 0.5, 0.2, 0.8
	rev := &report.ReviewSummary{Reviewers: []string{"ana", "ben"}, Sample: 3, Finished: []int{3, 3}, Compared: 3, Agreed: 2,
		Kappa: &k, KappaLo: &lo, KappaHi: &hi, Adjudicated: 1, Codes: []string{"identity", "uncertain"},
		ByFailure: map[string]map[string]int{"unsupported reversal": {"identity": 2}, "success": {"uncertain": 1}}}
	var b bytes.Buffer
	if err := rep.HTML(&b, &report.HTMLExtras{Briefs: report.Briefs(res.Outcomes), Review: rev}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sim.html", b.Bytes())
	page := b.String()
	for _, id := range []string{`id="chart-directional"`, `id="chart-uptake"`, `id="manifest"`, `id="decision"`, `id="kappa"`, "0.500</b> [0.200, 0.800]"} {
		if !strings.Contains(page, id) {
			t.Errorf("HTML report lacks %s", id)
		}
	}
	// One bar per family and direction, plus the pooled pair.
	want := 2 * (len(res.Summary.Directional)/2 + 1)
	if n := strings.Count(sectionOf(page, "chart-directional"), "<rect "); n != want {
		t.Errorf("directional chart has %d bars, want %d", n, want)
	}
	if strings.Contains(page, "http://") && regexp.MustCompile(`(src|href)="https?:`).MatchString(page) {
		t.Error("HTML report references the network")
	}

	fst, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	fo := study.DefaultFramingOptions()
	fo.Bootstrap = stats.Bootstrap{Resamples: 200, Level: 0.95, Seed: 42}
	fres, err := study.RunFraming(context.Background(), fst, fo)
	if err != nil {
		t.Fatal(err)
	}
	frep := fres.Report()
	frep.Run.ID = "20261202-000000-golden"
	frep.Run.Created = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	b.Reset()
	if err := frep.HTML(&b); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "framing-sim.html", b.Bytes())
	if n := strings.Count(b.String(), "<circle "); n == 0 {
		t.Error("framing HTML report has no DDS forest plot points")
	}
}

func sectionOf(page, id string) string {
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</svg>")
	return page[i : i+j]
}

// TestHTMLEscapesModelOutput puts markup where the model controls text and
// checks that none of it survives as markup.
func TestHTMLEscapesModelOutput(t *testing.T) {
	evil := `<script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>` + "\xff\xfe"
	var rep report.Pressure
	rep.Run.Model = evil
	rep.Measures.Warnings = []string{evil}
	rep.Measures.Decision = pressure.Decision{Verdict: `"><script>`, Text: evil, Sessions: []string{"s1"}}
	rep.Measures.PairsByFamily = []pressure.PairSummary{{Family: "authority", Discordant: []pressure.Pair{{Key: evil, TowardX: "s1", TowardY: "s2"}}}}
	b := map[string]report.Brief{"s1": {ID: "s1", InitialWhy: evil, FinalWhy: evil, FinalSel: evil}, "s2": {ID: "s2", InitialSel: evil}}
	var out bytes.Buffer
	if err := rep.HTML(&out, &report.HTMLExtras{Briefs: b}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, bad := range []string{"<script>", "<img", `href="javascript:`, "onerror=\""} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML report lets %q through", bad)
		}
	}
}
