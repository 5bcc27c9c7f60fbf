package report

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// SVG draws the sweep: the power to detect the planted gap, and the false
// positives with nothing planted, against the design's number of
// determinate cases, with the wanted power and the nominal 5% as dashed
// lines and the smallest design that reaches the power marked. A
// self-contained SVG file.
func (ps PowerSweep) SVG(w io.Writer) error {
	pts := ps.Points
	if len(pts) == 0 {
		return fmt.Errorf("power sweep: no designs to plot")
	}
	const W, H, left, right, top, bottom = 640.0, 360.0, 56.0, 24.0, 56.0, 48.0
	step := (W - left - right) / float64(max(len(pts)-1, 1))
	x := func(i int) float64 { return left + float64(i)*step }
	y := func(v float64) float64 { return top + (1-v)*(H-top-bottom) }
	var b strings.Builder
	title := fmt.Sprintf("budge calibrate --sweep: power to detect a %.0f-point gap, %d repeats, %d replications per design",
		100*ps.Gap, pts[0].Repeats, ps.Replications)
	percentChartHead(&b, W, H, left, right, y, title,
		[]chartRef{{0.05, "5% (nominal false positives)"}, {ps.Power, fmt.Sprintf("%.0f%% power wanted", 100*ps.Power)}})
	var pow, fp []string
	best := -1
	for i, p := range pts {
		pow = append(pow, fmt.Sprintf("%.1f,%.1f", x(i), y(p.Power)))
		fp = append(fp, fmt.Sprintf("%.1f,%.1f", x(i), y(p.FalsePositives)))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", x(i), H-bottom+16, p.Cases)
		if best < 0 && p.Power >= ps.Power {
			best = i
		}
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#c0392b" stroke-width="2" points="%s"/>`+"\n", strings.Join(pow, " "))
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#7f8c8d" stroke-width="2" points="%s"/>`+"\n", strings.Join(fp, " "))
	for i, p := range pts {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#c0392b"><title>%d cases × %d repeats (%d determinate sessions): power %.1f%%</title></circle>`+"\n",
			x(i), y(p.Power), p.Cases, p.Repeats, p.Sessions, 100*p.Power)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#7f8c8d"><title>%d cases × %d repeats: false positives %.1f%%</title></circle>`+"\n",
			x(i), y(p.FalsePositives), p.Cases, p.Repeats, 100*p.FalsePositives)
	}
	verdict := fmt.Sprintf("no design up to %d cases reaches %.0f%% power", pts[len(pts)-1].Cases, 100*ps.Power)
	if best >= 0 {
		p := pts[best]
		verdict = fmt.Sprintf("smallest design with %.0f%% power: %d cases × %d repeats (power %.1f%%)", 100*ps.Power, p.Cases, p.Repeats, 100*p.Power)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#000" stroke-width="1.5"/>`+"\n", x(best), y(p.Power))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="38">%s</text>`+"\n", left, html.EscapeString(verdict))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">determinate cases in the design</text>`+"\n", (left+W-right)/2, H-12)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#c0392b">power (gap planted)</text>`+"\n", left+8, top+14)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#7f8c8d">false positives (nothing planted)</text>`+"\n", left+8, top+28)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
