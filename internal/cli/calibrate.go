package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/report"
)

const calibrateAbout = `
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
checks those end to end).

--compare calibrates budge compare instead: for pairs of runs of one
profile (different seeds) and for planted changes (reversals falling by 15
or 8 points, the same fall with correction uptake collapsed or neutral
drift risen, reversals rising) it draws --replications pairs, compares each
with compare's own rule, and reports how often each verdict is given (the
false-positive rate on pairs of one profile, the power on a planted change)
and how often each paired 95% interval holds the planted change.`

const calibrateExamples = `
  budge calibrate
  budge calibrate --replications 1000 --seed 7
  budge calibrate --cases 24 --repeats 3
  budge calibrate --sweep --target-gap 0.10 --power 0.8
  budge calibrate --format json -o calibration.json
  budge calibrate --svg calibration.svg
  budge calibrate --sweep --replications 50 --svg power.svg   # progress and time left on stderr
  budge calibrate --compare --replications 200`

func cmdCalibrate(ctx context.Context, std IO, args []string) error {
	def := calibrate.DefaultOptions()
	fs := newFlags(std, "calibrate", "[--deck NAME|PATH] [--cases N --repeats R] [--replications N] [flags]", calibrateAbout, calibrateExamples)
	deck := fs.String("deck", def.Deck, "deck whose design is calibrated")
	cases := fs.Int("cases", 0, "number of determinate cases of the design (default: the deck's)")
	repeats := fs.Int("repeats", 0, "repeats of the design (default: the deck's)")
	reps := fs.Int("replications", def.Replications, "replications per grid point")
	seed := fs.Uint64("seed", def.Seed, "seed of the replications")
	resamples := fs.Int("resamples", def.Resamples, "cluster-bootstrap resamples per replication")
	sweep := fs.Bool("sweep", false, "instead of the grid: the power of designs with 8 to 96 determinate cases (and --repeats) to detect --target-gap")
	target := fs.Float64("target-gap", 0.10, "with --sweep: the planted gap (toward-X minus toward-Y reversal rate)")
	power := fs.Float64("power", 0.80, "with --sweep: the power wanted")
	format := formatFlag(fs, "format", "text", "text, md or json", "text", "md", "json")
	out := fs.String("o", "", "write to this file instead of stdout")
	svg := fs.String("svg", "", "also write a plot (SVG) to this file: gap detection and interval coverage against the planted gap; with --sweep, power and false positives against the number of cases")
	quiet := fs.Bool("quiet", false, "with --sweep: no progress on stderr")
	compare := fs.Bool("compare", false, "instead of the grid: the verdicts of budge compare on planted pairs of runs, and the coverage of its paired intervals")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	o := def
	o.Deck, o.Cases, o.Repeats, o.Replications, o.Seed, o.Resamples = *deck, *cases, *repeats, *reps, *seed, *resamples
	if *compare {
		if *sweep || *svg != "" {
			return usageError{"--compare does not take --sweep or --svg"}
		}
		start := time.Now()
		cal, err := calibrate.CalibrateCompare(ctx, o, nil)
		if err != nil {
			return err
		}
		rep := report.CompareCalibration{Result: cal, Took: time.Since(start)}
		return writeOut(std, *out, func(w io.Writer) error { return rep.Render(w, *format) })
	}
	if *sweep {
		if *target <= 0 || *target >= 0.85 {
			return usageError{fmt.Sprintf("--target-gap must be between 0 and 0.85, got %v", *target)}
		}
		if !*quiet {
			o.Progress = sweepProgress(std, time.Now())
		}
		pts, err := calibrate.PowerSweep(ctx, o, *target, []int{8, 12, 16, 24, 32, 48, 64, 96})
		if err != nil {
			return err
		}
		rep := report.PowerSweep{Points: pts, Gap: *target, Power: *power, Replications: o.Replications}
		if *svg != "" {
			if err := writeOut(std, *svg, rep.SVG); err != nil {
				return err
			}
		}
		return writeOut(std, *out, func(w io.Writer) error { return rep.Render(w, *format) })
	}
	start := time.Now()
	cal, err := calibrate.Calibrate(ctx, o)
	if err != nil {
		return err
	}
	rep := report.Calibration{Result: cal, Took: time.Since(start)}
	if *svg != "" {
		if err := writeOut(std, *svg, rep.SVG); err != nil {
			return err
		}
	}
	return writeOut(std, *out, func(w io.Writer) error { return rep.Render(w, *format) })
}

// sweepProgress prints a line on stderr after each design of a sweep: the
// designs done, the share of the work (larger designs cost more), the
// rate and an estimate of the time left from it.
func sweepProgress(std IO, start time.Time) func(designs, of, work, total int) {
	return func(designs, of, work, total int) {
		el := time.Since(start)
		line := fmt.Sprintf("sweep: design %d/%d · %d/%d cases' work (%.0f%%) · %s", designs, of, work, total, 100*float64(work)/float64(max(total, 1)),
			el.Round(100*time.Millisecond))
		if work < total && work > 0 {
			left := time.Duration(float64(el) * float64(total-work) / float64(work))
			line += fmt.Sprintf(" · %.1f cases/s · about %s left", float64(work)/max(el.Seconds(), 1e-3), left.Round(time.Second))
		}
		fmt.Fprintln(std.Err, line)
	}
}
