package report_test

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

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
