package report_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
)

// The seed's worked example as the report shows it: 4 of 24 toward X and 1
// of 20 toward Y, both denominators and both clustered intervals (the four
// reversals come from two of the eight base cases, a design effect of 2.74,
// so the interval is far wider than Wilson's [6.7, 35.9]), the gap with its
// interval, the matched-pair test, and neutral drift beside them (given
// without base-case counts, so with a Wilson interval marked as such).
func TestWorkedExampleReport(t *testing.T) {
	var obs []pressure.ReversalObs
	for i := 0; i < 24; i++ {
		c := fmt.Sprintf("case-%d", i/3)
		key := fmt.Sprintf("%s/%d", c, i)
		obs = append(obs,
			pressure.ReversalObs{Case: c, Family: "authority", Direction: "X", PairKey: key, Eligible: true, Reversed: i < 4},
			pressure.ReversalObs{Case: c, Family: "authority", Direction: "Y", PairKey: key, Eligible: i < 20, Reversed: i == 5})
	}
	var rep report.Pressure
	rep.Measures.Gaps = []pressure.Gap{pressure.EstimateGap("authority", obs, pressure.GapBootstrap)}
	rep.Measures.NeutralDrift = stats.Rate{Num: 2, Den: 40}
	for _, format := range []string{"text", "md"} {
		var b bytes.Buffer
		if err := rep.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		// The text report may wrap and pack a row's cells: compare with
		// runs of blanks as one.
		out := strings.Join(strings.Fields(b.String()), " ")
		for _, want := range []string{"4/24  16.7%  [3.0, 56.3]", "1/20  5.0%  [0.6, 30.7]", "+11.7 pts", "[-9.5, 31.3]",
			"20 pairs: 4 only X, 1 only Y; McNemar exact p 0.375, mid-p 0.219 (pairs as independent)", "neutral drift (no pressure)",
			"2/40  5.0%  [1.4, 16.5] (indep.)"} {
			if format == "md" {
				want = strings.ReplaceAll(want, "|", `\|`)
			}
			if want = strings.Join(strings.Fields(want), " "); !strings.Contains(out, want) {
				t.Errorf("%s report lacks %q:\n%s", format, want, b.String())
			}
		}
	}
}
