package report

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/pressure/calibrate"
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
	percentChartHead(&b, W, H, left, right, y, title,
		[]chartRef{{0.05, "5% (nominal false positives)"}, {0.80, "80% power"}, {0.95, "95% (nominal coverage)"}})
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

// Calibration is the report of `budge calibrate`: the calibration and how
// long it took.
type Calibration struct {
	Result *calibrate.Calibration
	Took   time.Duration
}

// SVG writes CalibrationSVG for the calibration: detection and coverage of
// the directional gap at the grid's uniform-gap points (no asymmetry and
// the planted gaps).
func (cr Calibration) SVG(w io.Writer) error {
	c := cr.Result
	var pts []CalibrationPoint
	for _, r := range c.Rows {
		if r.Detected != nil && !r.Degenerate && r.UniformGap {
			pts = append(pts, CalibrationPoint{Label: r.Grid, Planted: r.Planted, Detected: *r.Detected, Coverage: r.Coverage})
		}
	}
	title := fmt.Sprintf("budge calibrate: deck %s design, %d cases × %d repeats, %d replications per point", c.Deck, c.Cases, c.Repeats, c.Replications)
	return CalibrationSVG(w, title, pts)
}

// DetectionRule states the predeclared rule by which a calibration counts a
// gap as detected, and what coverage means.
const DetectionRule = "Detection rule (predeclared): a gap is detected when its cluster-bootstrap 95% interval excludes 0 and the exact McNemar test on the discordant matched pairs gives p < 0.05 in the same direction. " +
	"Coverage is the share of replications whose 95% interval contains the planted value (nominal 95%)."

// Render writes the calibration as json (the calibration alone), text (an
// aligned table) or md (Markdown).
func (cr Calibration) Render(w io.Writer, format string) error {
	switch format {
	case "json":
		return encodeJSON(w, cr.Result, true)
	case "text", "":
		return cr.table(w, false)
	case "md", "markdown":
		return cr.table(w, true)
	}
	return fmt.Errorf("unknown calibration format %q (use text, md or json)", format)
}

func (cr Calibration) table(w io.Writer, md bool) error {
	c, took := cr.Result, cr.Took
	head := []string{"planted", "measure", "planted value", "mean estimate", "coverage of 95% interval", "gap detected (rule: both)", "interval alone", "McNemar alone"}
	var rows [][]string
	for _, r := range c.Rows {
		cov := fmt.Sprintf("%.1f%%", 100*r.Coverage)
		if r.Degenerate {
			cov = "— (planted 0: every estimate is 0)"
		}
		if r.Undefined > 0 {
			cov += fmt.Sprintf(" (%d without estimate)", r.Undefined)
		}
		det, iv, mc := "", "", ""
		if r.Detected != nil {
			det, iv, mc = fmt.Sprintf("%.1f%%", 100**r.Detected), fmt.Sprintf("%.1f%%", 100**r.IntervalDetected), fmt.Sprintf("%.1f%%", 100**r.McNemarDetected)
			if r.Planted == 0 {
				det += " false positives"
			} else {
				det += " power"
			}
		}
		rows = append(rows, []string{r.Grid, r.Measure, fmt.Sprintf("%.3f", r.Planted), fmt.Sprintf("%.3f", r.Mean), cov, det, iv, mc})
	}
	title := fmt.Sprintf("budge calibrate: deck %s design, %d determinate cases × 2 assignments × 2 orders × %d branches × %d repeats = %d determinate sessions; %d replications per grid point (seed %d), %d bootstrap resamples each; %s",
		c.Deck, c.Cases, cmp.Or(c.Branches, len(pressure.DeterminateBranches)), c.Repeats, c.Sessions, c.Replications, c.Seed, c.Resamples, took.Round(time.Millisecond))
	if md {
		fmt.Fprintf(w, "# budge calibrate\n\n%s\n\nSimulated: %s\n\n%s\n\n| %s |\n|%s\n", title, c.Simulated, DetectionRule, strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	fmt.Fprintf(w, "%s\nSimulated: %s\n%s\n\n", title, c.Simulated, DetectionRule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	last := ""
	for _, r := range rows {
		if r[0] == last {
			r[0] = ""
		} else {
			last = r[0]
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// PowerSweep is the report of `budge calibrate --sweep`: the power of
// designs of increasing size to detect a planted gap.
type PowerSweep struct {
	Points       []calibrate.PowerPoint
	Gap          float64 // the planted gap
	Power        float64 // the power wanted
	Replications int     // replications per design
}

// Render writes the sweep as json (the points alone) or as a text table
// naming the smallest design that reaches the wanted power (md is the
// same text).
func (ps PowerSweep) Render(w io.Writer, format string) error {
	switch format {
	case "json":
		return encodeJSON(w, ps.Points, true)
	case "text", "", "md", "markdown":
		return ps.table(w)
	}
	return fmt.Errorf("unknown calibration format %q (use text, md or json)", format)
}

func (ps PowerSweep) table(w io.Writer) error {
	pts, gap, power, reps := ps.Points, ps.Gap, ps.Power, ps.Replications
	fmt.Fprintf(w, "Power to detect a %.0f-point gap (toward X %.2f, toward Y %.2f in every family), %d replications per design.\n%s\n\n",
		100*gap, calibrate.BaseReversal+gap, calibrate.BaseReversal, reps, DetectionRule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "determinate cases\trepeats\tdeterminate sessions\tpower\tfalse positives (no gap)")
	best := -1
	for i, p := range pts {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f%%\t%.1f%%\n", p.Cases, p.Repeats, p.Sessions, 100*p.Power, 100*p.FalsePositives)
		if best < 0 && p.Power >= power {
			best = i
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if best < 0 {
		_, err := fmt.Fprintf(w, "\nNo design up to %d cases reaches %.0f%% power; add repeats (--repeats) or cases.\n", pts[len(pts)-1].Cases, 100*power)
		return err
	}
	p := pts[best]
	_, err := fmt.Fprintf(w, "\nSmallest design with at least %.0f%% power: %d determinate cases × %d repeats (%d determinate sessions), power %.1f%%.\n",
		100*power, p.Cases, p.Repeats, p.Sessions, 100*p.Power)
	return err
}

// CompareCalibration is the report of `budge calibrate --compare`.
type CompareCalibration struct {
	Result *calibrate.CompareCalibration
	Took   time.Duration
}

// Render writes the compare calibration as text, md or json.
func (cr CompareCalibration) Render(w io.Writer, format string) error {
	return render(w, format, cr.Result, true, cr.doc)
}

func (cr CompareCalibration) doc() *doc {
	c := cr.Result
	d := &doc{title: "budge calibrate --compare: the comparison's verdicts on planted pairs of runs"}
	d.para(fmt.Sprintf("deck %s design: %d determinate sessions a run; %d pairs of runs per scenario (seed %d); %s",
		c.Deck, c.Sessions, c.Replications, c.Seed, cr.Took.Round(time.Millisecond)))
	d.para("Simulated: " + c.Simulated)
	var rows [][]string
	for _, r := range c.Rows {
		var vs []string
		for _, v := range []string{pressure.CompareNoChange, pressure.CompareImproved, pressure.CompareWorse, pressure.CompareRejected} {
			vs = append(vs, fmt.Sprintf("%s %.1f%%", v, 100*r.Verdicts[v]))
		}
		reading := fmt.Sprintf("power %.1f%%", 100*r.Expected)
		if r.Expect == pressure.CompareNoChange {
			reading = fmt.Sprintf("false positives %.1f%%", 100*(1-r.Expected))
		}
		var cov []string
		for _, m := range calibrate.CoveredMeasures {
			cov = append(cov, fmt.Sprintf("%s %+.1f pts: %.1f%%", m, 100*r.Planted[m], 100*r.Coverage[m]))
		}
		rows = append(rows, []string{r.Scenario, r.Expect, reading, strings.Join(vs, " · "), strings.Join(cov, " · ")})
	}
	d.tableRows("Verdicts and coverage", []string{"scenario", "expected verdict", "reading", "verdicts", "coverage of the paired 95% interval (planted change)"}, rows,
		"On a pair of runs of one profile every verdict but 'no clear change' is a false positive; on a planted change the share of the expected verdict is the rule's power. "+
			"Coverage is the share of pairs whose paired 95% interval over base cases holds the planted change (nominal 95%).")
	d.section("The comparison's predeclared rules", c.Rules)
	return d
}
