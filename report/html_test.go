package report_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/study"
)

// TestHTMLGolden renders the seeded default simulator run, and a framing
// run, as HTML and compares them with testdata/*.html.
func TestHTMLGolden(t *testing.T) {
	_, res := pressureRun(t)
	rep := res.Report()
	rep.Run.ID, rep.Run.Created = goldenID, goldenCreated
	k, lo, hi := 0.5, 0.2, 0.8
	rev := &report.ReviewSummary{Reviewers: []string{"ana", "ben"}, Sample: 3, Finished: []int{3, 3}, Compared: 3, Agreed: 2,
		Kappa: &k, KappaLo: &lo, KappaHi: &hi, KappaInterval: "95%, analytic (large-sample SE)", Adjudicated: 1, Codes: []string{"identity", "uncertain"},
		ByFailure: map[string]map[string]int{"unsupported reversal": {"identity": 2}, "success": {"uncertain": 1}}}
	var b bytes.Buffer
	if err := rep.HTML(&b, &report.HTMLExtras{Briefs: briefs(t, res), Review: rev}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sim.html.golden", b.Bytes())
	page := b.String()
	for _, id := range []string{`id="chart-directional"`, `id="chart-uptake"`, `id="manifest"`, `id="decision"`, `id="kappa"`, "0.500</b>, 95% interval [0.200, 0.800]"} {
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

	fo := study.DefaultFramingOptions()
	fo.Bootstrap = stats.Bootstrap{Resamples: 200, Level: 0.95, Seed: 42}
	frep := runIn[*study.FramingResult](t, fo).Report()
	frep.Run.ID, frep.Run.Created = goldenID, goldenCreated
	b.Reset()
	if err := frep.HTML(&b); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "framing-sim.html.golden", b.Bytes())
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

// briefs are the briefs of every session of a run.
func briefs(t testing.TB, res *study.PressureResult) map[string]report.Brief {
	t.Helper()
	outs, err := res.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]report.Brief{}
	for i := range outs {
		m[outs[i].ID()] = report.BriefOf(&outs[i])
	}
	return m
}

var countLink = regexp.MustCompile(`<a class="count" href="[^"]*">(\d+)</a>`)

// The standalone HTML report links no count; with a viewer's linker its
// counts are links and nothing else changes.
func TestHTMLCountLinks(t *testing.T) {
	_, res := pressureRun(t)
	rep := res.Report()
	var plainPage, linked bytes.Buffer
	if err := rep.HTML(&plainPage, &report.HTMLExtras{Briefs: briefs(t, res)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plainPage.String(), `class="count"`) || strings.Contains(plainPage.String(), `href="/`) {
		t.Error("the standalone HTML report links to a viewer")
	}
	var asked []report.Count
	link := func(c report.Count) string {
		asked = append(asked, c)
		return "/t?m=" + c.Measure + "&p=" + c.Part
	}
	if err := rep.HTML(&linked, &report.HTMLExtras{Briefs: briefs(t, res), Links: link}); err != nil {
		t.Fatal(err)
	}
	n := len(countLink.FindAllString(linked.String(), -1))
	if n != len(asked) || n < 20 {
		t.Errorf("%d counts linked, the linker was asked for %d", n, len(asked))
	}
	if got := countLink.ReplaceAllString(linked.String(), "$1"); got != plainPage.String() {
		t.Error("linking the counts changed the report beyond the links")
	}
	var text bytes.Buffer
	if err := rep.Render(&text, "md"); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(text.String()+plainPage.String(), "\uE002\uE003\uE004\uE005") {
		t.Error("a count mark leaks into the report")
	}
}

// TestReportSaysWhenPairsAreListedInPart: a run with more discordant
// pairs than the summary lists says how many are listed, in every format.
func TestReportSaysWhenPairsAreListedInPart(t *testing.T) {
	var rep report.Pressure
	rep.Measures.Decision = pressure.Decision{Verdict: "pass"}
	listed := []pressure.Pair{{Key: "a/P-first/authority/r1", TowardX: "a/I/P-first/authority/r1", TowardY: "a/II/P-first/authority/r1", XReversed: true}}
	rep.Measures.PairsByFamily = []pressure.PairSummary{
		{Family: "authority", Pairs: 70, OnlyX: 60, OnlyY: 4, Discordant: listed},
		{Family: "all", Pairs: 70, OnlyX: 60, OnlyY: 4, Discordant: listed},
	}
	for _, format := range []string{"text", "md", "html"} {
		var out bytes.Buffer
		var err error
		if format == "html" {
			err = rep.HTML(&out, &report.HTMLExtras{})
		} else {
			err = rep.Render(&out, format)
		}
		if err != nil {
			t.Fatal(err)
		}
		if page := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(page, "Listed: 1 of the 64 discordant pairs") {
			t.Errorf("%s report does not say that 1 of 64 discordant pairs is listed", format)
		}
	}
}
