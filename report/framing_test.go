package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/study"
)

// TestFramingGolden renders seeded simulator framing runs in every format
// and compares them with testdata/framing-<name>.<format>; run
// `go test ./report -update` after an intended change and review the diff.
func TestFramingGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		design func(d *framing.Design)
		model  string
	}{
		{"sim", func(*framing.Design) {}, "sim"},
		{"mitigations", func(d *framing.Design) {
			for _, m := range []string{"be-honest", "dehumanize"} {
				mi, _ := framing.ParseMitigation(m)
				d.Mitigations = append(d.Mitigations, mi)
			}
			d.Challenges, _ = framing.ParseChallenges([]string{"disagree", "expert"}, "")
		}, "sim:overcorrects"},
	} {
		o := study.DefaultFramingOptions()
		o.Model = c.model
		o.Bootstrap = stats.Bootstrap{Resamples: 1000, Level: 0.95, Seed: 42}
		c.design(&o.Design)
		rep := runIn[*study.FramingResult](t, o).Report()
		rep.Run.ID, rep.Run.Created = goldenID, goldenCreated
		checkFormats(t, "framing-"+c.name, rep)
	}
}

func TestFramingReportShowsRatesWithDenominators(t *testing.T) {
	o := study.DefaultFramingOptions()
	o.Model = "sim:messy"
	o.Bootstrap.Resamples = 200
	res := runIn[*study.FramingResult](t, o)
	var b bytes.Buffer
	res.Report().Render(&b, "text")
	out := b.String()
	for _, want := range []string{"/12 ", "unparseable", "refused", "repaired: fenced-code", "are counted wrong", "/216"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if err := res.Report().Render(&b, "pdf"); err == nil {
		t.Error("unknown format accepted")
	}
}
