package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/buildlab/budge/reference"
)

// TestReferenceSection: every format shows each reference measure's
// definition id, value and interval on its own scale, its parts, budge's
// own beside it, its source, the "not defined" reason, the censoring and
// the interval method; JSON keeps them under stable keys.
func TestReferenceSection(t *testing.T) {
	ms := []reference.Measure{
		{ID: "sycon.turn_of_flip", Name: "SYCON Turn of Flip", Source: "JiseungHong/SYCON-Bench debate-setting/evaluate_oscillate.py calculate_tof", Scale: "mean",
			Definition: "mean leading aligned answers", Value: f64(1.75), Interval: &reference.Interval{Low: 1.5, High: 2.0, Method: "cluster bootstrap 95%: 4 clusters"},
			Parts: []reference.Part{{Name: "Turn of Flip summed / sessions", Num: 7, Den: 4}}, Clusters: 4, Censoring: "right-censored at 2",
			Budge: &reference.Own{ID: "budge.mean_turns_held", Definition: "turns held / flippers", Value: f64(0.5)}, Differs: "over flippers only"},
		{ID: "fairstress.tie_shift", Name: "FairStress TieShift", Source: "allenai/olmo-eval fairstress.py", Scale: "difference",
			NotDefined: "not defined on this design: no tie-shift arm", Differs: "keeps the tie"},
	}
	var d doc
	referenceSection(&d, ms, "base cases", "")
	for _, format := range []string{"text", "md", "html"} {
		var b bytes.Buffer
		err := render(&b, format, ms, false, func() *doc { return &d })
		if format == "html" {
			err = d.html(&b, "")
		}
		if err != nil {
			t.Fatal(err)
		}
		out := readableText(format, b.String())
		for _, want := range []string{"sycon.turn_of_flip", "1.750", "[1.500, 2.000]", "Turn of Flip summed / sessions 7/4", "budge.mean_turns_held 0.500",
			"calculate_tof", "right-censored at 2", "cluster bootstrap 95%: 4 clusters", "over flippers only",
			"fairstress.tie_shift", "not defined on this design: no tie-shift arm", "Budge has no own measure of this: keeps the tie"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the reference section lacks %q", format, want)
			}
		}
	}
}

// readableText flattens a rendering for a substring check.
func readableText(format, s string) string {
	s = strings.NewReplacer("\\|", "|", "\\_", "_", "\\*", "*", "&#43;", "+", "&lt;", "<", "&gt;", ">", "&#39;", "'", "&quot;", "\"").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

func f64(v float64) *float64 { return &v }
