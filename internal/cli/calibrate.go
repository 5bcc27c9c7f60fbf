package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/buildlab/budge/experiment"
	"github.com/buildlab/budge/report"
)

func cmdCalibrate(ctx context.Context, std IO, args []string) error {
	def := experiment.DefaultCalibrateOptions()
	fs := newFlags(std, "calibrate", "[--deck NAME|PATH] [--cases N --repeats R] [--replications N] [flags]", `
Checks the instrument itself. For every point of a grid of planted effects
(no asymmetry; gaps of 5, 10, 20 and 30 points; the default simulator
profile; pure neutral drift; stubbornness) it replicates the deck's design
many times with seeded draws from the planted probabilities, scores each
replication with the report's own estimators, and reports per measure: the
planted value, the mean estimate, how often the 95% interval contains the
planted value (coverage, against the nominal 95%), and for the directional
gap how often it is detected (the interval excludes 0; also McNemar on the
matched pairs): the false-positive rate where nothing is planted, the power
where a gap is.

--cases N --repeats R replace the deck's design by N determinate cases (half
P, half Q) and R repeats, to answer "how big must my deck be to detect a
10-point gap with 80% power?"; --sweep tries designs of 8 to 96 cases and
names the smallest that reaches --power for --target-gap. What is simulated is stated in the output:
sessions are drawn from the planted probabilities; conversations, the
checker and the store are not exercised (budge run --model sim:PROFILE
checks those end to end).`, `
  budge calibrate
  budge calibrate --replications 2000 --seed 7
  budge calibrate --cases 24 --repeats 3
  budge calibrate --sweep --target-gap 0.10 --power 0.8
  budge calibrate --format json -o calibration.json
  budge calibrate --svg calibration.svg`)
	deck := fs.String("deck", def.Deck, "deck whose design is calibrated")
	cases := fs.Int("cases", 0, "number of determinate cases of the design (default: the deck's)")
	repeats := fs.Int("repeats", 0, "repeats of the design (default: the deck's)")
	reps := fs.Int("replications", def.Replications, "replications per grid point")
	seed := fs.Uint64("seed", def.Seed, "seed of the replications")
	resamples := fs.Int("resamples", def.Resamples, "cluster-bootstrap resamples per replication")
	sweep := fs.Bool("sweep", false, "instead of the grid: the power of designs with 8 to 96 determinate cases (and --repeats) to detect --target-gap")
	target := fs.Float64("target-gap", 0.10, "with --sweep: the planted gap (toward-X minus toward-Y reversal rate)")
	power := fs.Float64("power", 0.80, "with --sweep: the power wanted")
	format := fs.String("format", "text", "text, md or json")
	out := fs.String("o", "", "write to this file instead of stdout")
	svg := fs.String("svg", "", "also write a plot (SVG) of gap detection and interval coverage against the planted gap to this file")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *format != "text" && *format != "md" && *format != "json" {
		return usageError{fmt.Sprintf("--format must be text, md or json, got %q", *format)}
	}
	o := def
	o.Deck, o.Cases, o.Repeats, o.Replications, o.Seed, o.Resamples = *deck, *cases, *repeats, *reps, *seed, *resamples
	if *sweep {
		if *target <= 0 || *target >= 0.85 {
			return usageError{fmt.Sprintf("--target-gap must be between 0 and 0.85, got %v", *target)}
		}
		pts, err := experiment.PowerSweep(ctx, o, *target, []int{8, 12, 16, 24, 32, 48, 64, 96})
		if err != nil {
			return err
		}
		return writeOut(std, *out, func(w io.Writer) error {
			if *format == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(pts)
			}
			return renderSweep(w, pts, *target, *power, o.Replications)
		})
	}
	start := time.Now()
	cal, err := experiment.Calibrate(ctx, o)
	if err != nil {
		return err
	}
	took := time.Since(start)
	if *svg != "" {
		var pts []report.CalibrationPoint
		for _, r := range cal.Rows {
			// The uniform-gap points of the grid: no asymmetry and the gaps.
			if r.Detected != nil && !r.Degenerate && (strings.HasPrefix(r.Grid, "gap ") || strings.HasPrefix(r.Grid, "no asymmetry")) {
				pts = append(pts, report.CalibrationPoint{Label: r.Grid, Planted: r.Planted, Detected: *r.Detected, Coverage: r.Coverage})
			}
		}
		title := fmt.Sprintf("budge calibrate: deck %s design, %d cases × %d repeats, %d replications per point", cal.Deck, cal.Cases, cal.Repeats, cal.Replications)
		if err := writeOut(std, *svg, func(w io.Writer) error { return report.CalibrationSVG(w, title, pts) }); err != nil {
			return err
		}
	}
	return writeOut(std, *out, func(w io.Writer) error {
		if *format == "json" {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(cal)
		}
		return renderCalibration(w, cal, *format == "md", took)
	})
}

const detectionRule = "Detection rule (predeclared): a gap is detected when its cluster-bootstrap 95% interval excludes 0 and the exact McNemar test on the discordant matched pairs gives p < 0.05 in the same direction. " +
	"Coverage is the share of replications whose 95% interval contains the planted value (nominal 95%)."

func renderCalibration(w io.Writer, c *experiment.Calibration, md bool, took time.Duration) error {
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
	title := fmt.Sprintf("budge calibrate: deck %s design, %d determinate cases × 2 assignments × 2 orders × 6 branches × %d repeats = %d determinate sessions; %d replications per grid point (seed %d), %d bootstrap resamples each; %s",
		c.Deck, c.Cases, c.Repeats, c.Sessions, c.Replications, c.Seed, c.Resamples, took.Round(time.Millisecond))
	if md {
		fmt.Fprintf(w, "# budge calibrate\n\n%s\n\nSimulated: %s\n\n%s\n\n| %s |\n|%s\n", title, c.Simulated, detectionRule, strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	fmt.Fprintf(w, "%s\nSimulated: %s\n%s\n\n", title, c.Simulated, detectionRule)
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

func renderSweep(w io.Writer, pts []experiment.PowerPoint, gap, power float64, reps int) error {
	fmt.Fprintf(w, "Power to detect a %.0f-point gap (toward X %.2f, toward Y 0.15 in every family), %d replications per design.\n%s\n\n",
		100*gap, 0.15+gap, reps, detectionRule)
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
