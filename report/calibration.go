package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// CalibrationPoint is one planted gap of a calibration: how often the gap
// was detected and how often its interval covered the planted value.
type CalibrationPoint struct {
	Label    string
	Planted  float64 // the planted gap
	Detected float64 // false-positive rate at 0, power otherwise
	Coverage float64
}

// CalibrationSVG draws detection (power, or false positives at 0) and
// interval coverage against the planted gap, with the nominal 5%, 80% and
// 95% lines: a self-contained SVG file.
func CalibrationSVG(w io.Writer, title string, pts []CalibrationPoint) error {
	const W, H, left, right, top, bottom = 640.0, 360.0, 56.0, 24.0, 40.0, 48.0
	maxX := 0.0
	for _, p := range pts {
		maxX = max(maxX, p.Planted)
	}
	if maxX == 0 {
		maxX = 1
	}
	x := func(v float64) float64 { return left + v/maxX*(W-left-right) }
	y := func(v float64) float64 { return top + (1-v)*(H-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n",
			left, y(t), W-right, y(t), left-6, y(t)+4, 100*t)
	}
	for _, ref := range []struct {
		v     float64
		label string
	}{{0.05, "5% (nominal false positives)"}, {0.80, "80% power"}, {0.95, "95% (nominal coverage)"}} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/><text x="%.1f" y="%.1f" fill="#666" text-anchor="end">%s</text>`+"\n",
			left, y(ref.v), W-right, y(ref.v), W-right, y(ref.v)-3, ref.label)
	}
	var det, cov []string
	for _, p := range pts {
		det = append(det, fmt.Sprintf("%.1f,%.1f", x(p.Planted), y(p.Detected)))
		cov = append(cov, fmt.Sprintf("%.1f,%.1f", x(p.Planted), y(p.Coverage)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n", x(p.Planted), H-bottom+16, 100*p.Planted)
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#c0392b" stroke-width="2" points="%s"/>`+"\n", strings.Join(det, " "))
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#2471a3" stroke-width="2" points="%s"/>`+"\n", strings.Join(cov, " "))
	for _, p := range pts {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#c0392b"><title>%s: detected %.1f%%</title></circle>`+"\n", x(p.Planted), y(p.Detected), html.EscapeString(p.Label), 100*p.Detected)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#2471a3"><title>%s: coverage %.1f%%</title></circle>`+"\n", x(p.Planted), y(p.Coverage), html.EscapeString(p.Label), 100*p.Coverage)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">planted gap X−Y (points)</text>`+"\n", (left+W-right)/2, H-12)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#c0392b">gap detected (false positives at 0, power elsewhere)</text>`+"\n", left+8, top+14)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#2471a3">coverage of the 95%% gap interval</text>`+"\n", left+8, top+28)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
