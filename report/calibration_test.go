package report_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/report"
)

func TestCalibrationSVG(t *testing.T) {
	var b bytes.Buffer
	pts := []report.CalibrationPoint{{"none", 0, 0.03, 0.944}, {"gap 10 <points>", 0.10, 0.244, 0.952}, {"gap 30", 0.30, 0.974, 0.956}}
	if err := report.CalibrationSVG(&b, "discovery deck", pts); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, with the model-controlled label escaped.
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, b.String())
			}
			break
		}
	}
	for _, want := range []string{"gap 10 &lt;points&gt;: detected 24.4%", "coverage 95.6%", "80% power", `<polyline`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}

// The plot takes the uniform-gap points of a calibration (by the row's
// UniformGap flag, not its label), and the tables render every row.
func TestCalibrationReport(t *testing.T) {
	det, zero := 0.8, 0.03
	cal := &calibrate.Calibration{Deck: "d", Cases: 8, Repeats: 2, Sessions: 384, Replications: 10, Rows: []calibrate.Row{
		{Grid: "none", UniformGap: true, Measure: "gap", Planted: 0, Detected: &zero, IntervalDetected: &zero, McNemarDetected: &zero, Coverage: 0.95},
		{Grid: "a gap", UniformGap: true, Measure: "gap", Planted: 0.2, Detected: &det, IntervalDetected: &det, McNemarDetected: &det, Coverage: 0.94},
		{Grid: "gap-named but not uniform", Measure: "gap", Planted: 0.1, Detected: &det, IntervalDetected: &det, McNemarDetected: &det},
	}}
	rep := report.Calibration{Result: cal}
	var svg, text, md bytes.Buffer
	if err := rep.SVG(&svg); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(svg.String(), "<circle"); n != 4 || strings.Contains(svg.String(), "not uniform") {
		t.Errorf("plot has %d circles (want 2 points × 2):\n%s", n, svg.String())
	}
	if err := rep.Render(&text, "text"); err != nil {
		t.Fatal(err)
	}
	if err := rep.Render(&md, "md"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{text.String(), md.String()} {
		if !strings.Contains(s, "3.0% false positives") || !strings.Contains(s, "80.0% power") || !strings.Contains(s, report.DetectionRule) {
			t.Errorf("table:\n%s", s)
		}
	}
	var sw bytes.Buffer
	ps := report.PowerSweep{Points: []calibrate.PowerPoint{{Cases: 8, Repeats: 2, Sessions: 384, Power: 0.5}}, Gap: 0.1, Power: 0.8, Replications: 10}
	if err := ps.Render(&sw, "text"); err != nil || !strings.Contains(sw.String(), "No design up to 8 cases reaches 80% power") {
		t.Errorf("sweep (%v):\n%s", err, sw.String())
	}
}
