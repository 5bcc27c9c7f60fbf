package report

import (
	"fmt"
	"html"
	"strings"
)

// chartRef is a dashed reference line of a percentage chart, at share v.
type chartRef struct {
	v     float64
	label string
}

// percentChartHead writes the opening of a W×H chart of shares (as used by
// the calibration and sweep SVGs): the svg element, the title, grid lines
// at 0, 25, 50, 75 and 100% between left and W−right, and the dashed
// reference lines with their labels. y maps a share to its height.
func percentChartHead(b *strings.Builder, W, H, left, right float64, y func(float64) float64, title string, refs []chartRef) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(b, `<text x="%.0f" y="20" font-size="13">%s</text>`+"\n", left, html.EscapeString(title))
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n",
			left, y(t), W-right, y(t), left-6, y(t)+4, 100*t)
	}
	for _, ref := range refs {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/><text x="%.1f" y="%.1f" fill="#666" text-anchor="end">%s</text>`+"\n",
			left, y(ref.v), W-right, y(ref.v), W-right, y(ref.v)-3, html.EscapeString(ref.label))
	}
}
